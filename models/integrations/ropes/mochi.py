"""Mochi 1's rope: learned frequencies mixing the axes, `rope(pos_frequencies, num_frames, height, width)`.

MochiRoPE gives a token at (t, y, x) the angles t f_t + y f_y + x f_x per head and pair, f the
model's learned `pos_frequencies` (3, heads, pairs), and returns cos, sin (seq, heads, pairs). Time
positions are frame indices 0 .. n - 1; y and x are cell centres scaled so that the grid's area
is always 192 x 192 position units (the module interpolates them itself at any size). So only the
time axis meets positions beyond its trained length: the trained grid is the time axis alone, and
y, x are kept as the module places them. The learned frequencies have no theta: NTK, YaRN, DyPE
and RIFLEx, which change frequencies of a theta, have no meaning; PI divides the positions by s
(kappa-PI by s^(t^2)). The dims and theta declared serve only the plan's identity check.
Time: MochiPipeline's scheduler inverts its sigmas, so the transformer gets (1 - sigma) * 1000:
0 at pure noise, 1000 clean.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import torch
from einops import einsum

from ..family import Family, RopeAxes, Timestep, TrainedGrid
from .base import ExtrapolatedRope, RopeKind, RopeSetup, tensor_key

METHODS = ("none", "pi", "kappa-pi")  # those that act on positions alone


@dataclass(frozen=True)
class MochiKind(RopeKind):
    title: ClassVar[str] = "learned frequencies (Mochi)"

    def make_rope(self, original, setup: RopeSetup) -> MochiRope:
        return MochiRope(original, setup)


class MochiRope(ExtrapolatedRope):
    """forward(pos_frequencies (3, heads, pairs), num_frames, height, width, device, dtype) -> cos, sin
    (num_frames * height * width, heads, pairs) float32, as MochiRoPE."""

    def forward(self, pos_frequencies, num_frames, height, width, device=None, dtype=None):
        plan = self.plan((int(num_frames),))
        if plan is None:
            return self.original(pos_frequencies, num_frames, height, width, device=device, dtype=dtype)
        device = pos_frequencies.device if device is None else device
        scaling = plan.scalings[0]  # PI's (linear) or None
        factor = 1.0 if scaling is None else float(scaling.factor)

        def build():
            positions = self.original._get_positions(num_frames, height, width, torch.device("cpu"), torch.float64)
            positions[:, 0] /= factor  # PI's positions on the time axis
            angles = einsum(positions, pos_frequencies.detach().to("cpu", torch.float64), "n a, a h f -> n h f")
            gain = math.sqrt(plan.logit_scale)
            return (
                (torch.cos(angles) * gain).to(device, torch.float32),
                (torch.sin(angles) * gain).to(device, torch.float32),
            )

        key = (
            tensor_key(pos_frequencies),
            int(num_frames),
            int(height),
            int(width),
            torch.device(device),
            factor,
            plan.logit_scale,
        )
        return self.cached(key, build, anchors=(pos_frequencies,))


# -- families ------------------------------------------------------------------------------------------------


def mochi_axes_dims(config) -> tuple[int, int, int]:
    """Every axis adds to every pair's angle: each spans the head."""
    return (int(config["attention_head_dim"]),) * 3


MOCHI = Family(
    name="mochi",
    title="Mochi 1",
    classes=("MochiTransformer3DModel",),
    kind=MochiKind(),
    axes=("temporal", "reference", "reference"),
    rope_axes=RopeAxes(
        dims=mochi_axes_dims, theta=10000.0, theta_source="none: the frequencies are the learned pos_frequencies"
    ),
    trained=(
        TrainedGrid(
            (28,),
            "Mochi 1 preview: 5.4 s at 30 fps, 163 frames, at 480 x 848 px (MochiPipeline's default size), from the "
            "authors' README as remembered (genmo/mochi, not read here); MochiPipeline's VAE factor 6x temporal: "
            "(163 - 1) / 6 + 1 = 28 latent frames",
            pipeline_default=(4,),
        ),
    ),  # MochiPipeline's 19 frames: (19 - 1) / 6 + 1
    time=Timestep(0.0, "MochiPipeline's scheduler inverts its sigmas: it passes (1 - sigma) * 1000", at_clean=1000.0),
    rope_attr="rope",
    rope_classes=("MochiRoPE",),
    pipelines=("MochiPipeline",),
    methods=METHODS,
    methods_reason=(
        "its frequencies are learned (no theta for NTK, YaRN, DyPE or RIFLEx to change) and its y, x "
        "positions are scaled to a fixed area, so only methods moving its time positions apply"
    ),
)

FAMILIES = (MOCHI,)

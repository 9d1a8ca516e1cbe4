"""SANA-WM's rope (a camera-controlled world model): `rope((frames, h, w), device)`, a complex grid table.

SanaWMRotaryPosEmbed splits the GDN head (linear_head_dim) as Wan does (y, x: 2 (head // 6)
channels each, t the rest), theta 10000 (its default; the model passes none), and returns
complex64 (1, 1, frames * h * w, head // 2) at positions 0 .. n - 1 per axis, row-major, the pairs
of t, y, x in order. The replacement builds the same table for any grid (the module's own stops at
its 1024 precomputed positions). Its blocks are Gated DeltaNet linear attentions with a softmax
attention every softmax_every_n blocks: declared linear, so methods with a gain and entropy scaling
are refused. Time: SanaWMPipeline passes the scheduler's timesteps, sigma * 1000, per frame
(B, 1, T), conditioning frames at 0; the largest entry counts.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch
from einops import rearrange

from ..family import Family, RopeAxes, Timestep, TrainedGrid
from .base import ExtrapolatedRope, RopeKind, RopeSetup, grid_table, index_positions, plan_key


@dataclass(frozen=True)
class SanaWMKind(RopeKind):
    title: ClassVar[str] = "grid sizes, complex (SANA-WM)"

    def make_rope(self, original, setup: RopeSetup) -> SanaWMRope:
        return SanaWMRope(original, setup)


class SanaWMRope(ExtrapolatedRope):
    """forward(fhw (frames, h, w), device) -> complex64 (1, 1, seq, pairs), as SanaWMRotaryPosEmbed."""

    def forward(self, fhw, device=None):
        grid = tuple(int(n) for n in fhw)
        plan = self.plan(grid)
        if plan is None:
            return self.original(fhw, device=device)

        def build():
            cos, sin = grid_table(
                self.setup.dims,
                self.setup.thetas,
                self.axis_scalings(plan),
                plan.logit_scale,
                index_positions(grid),
                device,
            )
            return rearrange(torch.complex(cos, sin), "s d -> 1 1 s d")

        return self.cached((grid, None if device is None else torch.device(device), plan_key(plan)), build)


# -- families ------------------------------------------------------------------------------------------------


def sana_wm_axes_dims(config) -> tuple[int, int, int]:
    head_dim = int(config["linear_head_dim"])
    spatial = 2 * (head_dim // 6)
    return head_dim - 2 * spatial, spatial, spatial


SANA_WM = Family(
    name="sana-wm",
    title="SANA-WM",
    classes=("SanaWMTransformer3DModel",),
    kind=SanaWMKind(),
    axes=("temporal", "spatial", "spatial"),
    rope_axes=RopeAxes(
        dims=sana_wm_axes_dims,
        theta=10000.0,
        theta_source="SanaWMRotaryPosEmbed's default; SanaWMTransformer3DModel passes none",
    ),
    trained=(
        TrainedGrid(
            (21, 22, 40),
            "SANA-WM bidirectional (Efficient-Large-Model/SANA-WM_bidirectional, named in the class docstring; the "
            "model card was not read): SanaWMPipeline's defaults, 161 frames at 704 x 1280 px; the LTX-2 VAE (32x "
            "spatial, 8x temporal: (161 - 1) / 8 + 1 = 21 latent frames), patch (1, 1, 1)",
        ),
    ),
    time=Timestep(1000.0, "SanaWMPipeline passes the scheduler's timesteps, sigma * 1000, per frame"),
    rope_attr="rope",
    rope_classes=("SanaWMRotaryPosEmbed",),
    pipelines=("SanaWMPipeline",),
    attention="linear",
)

FAMILIES = (SANA_WM,)

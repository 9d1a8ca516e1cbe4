"""Interleaved MRoPE over position ids (Ideogram 4): one frequency list, its pairs dealt to (t, y, x).

`Ideogram4MRoPE(position_ids (b, L, 3))` takes one list of attention_head_dim / 2 inverse
frequencies (theta `rope_theta`); pair j rotates with axis y where j = 1 mod 3 and j < 3 section_y,
with x where j = 2 mod 3 and j < 3 section_x, with t otherwise (`mrope_section`), and returns the
half-width angles twice (b, L, head_dim). The pipeline puts text token i at (i, i, i) and image
token (r, c) at (O, O + r, O + c), O the image offset (65536): t is an index axis kept as trained.
Beyond the trained grid an axis's pairs take the method's frequencies for the whole list
(`rope_frequencies(head_dim, theta, scaling)`) at those pairs, applied to the image token's
distance from the image's origin; the origin keeps its trained phase, O f_j, so image tokens see
each other through the method and text sees the image's origin as trained. Text rows stay as
trained; every row carries the logit scale's gain. Cosmos 3 (`cosmos3.py`) deals its pairs the
same way. Time: Ideogram4Pipeline passes model time 1 - sigma, 0 at noise.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import torch

from axialrope import rope_frequencies

from ..family import Family, RopeAxes, Timestep, TrainedGrid
from .base import ExtrapolatedRope, RopeKind, RopeSetup, plan_key, tensor_key


def pair_axes(pairs: int, section) -> torch.Tensor:
    """(pairs,) the axis (0 t, 1 y, 2 x) each pair rotates with, interleaved as Ideogram4MRoPE deals them."""
    axes = torch.zeros(pairs, dtype=torch.long)
    for axis in (1, 2):
        axes[torch.arange(axis, 3 * int(section[axis]), 3)] = axis
    return axes


def interleaved_angles(
    ids: torch.Tensor, origin: torch.Tensor, axes: torch.Tensor, head_dim: int, theta: float, scalings
) -> tuple[torch.Tensor, torch.Tensor]:
    """Angles (..., pairs) float64 and per-pair gains (pairs,) of positions ids (..., 3) under per-axis scalings.

    Pair j takes the method's list for its axis `axes[j]` (`rope_frequencies(head_dim, theta, scaling)`, the whole
    list's entry j) on the distance from `origin` (3,), and the trained list on the origin itself: tokens see each
    other through the method, and anything at the origin keeps its trained phase.
    """
    trained = rope_frequencies(head_dim, theta)[0]
    freqs, gains = torch.empty_like(trained), torch.empty_like(trained)
    for axis, scaling in enumerate(scalings):
        scaled, factor = rope_frequencies(head_dim, theta, scaling)
        chosen = axes == axis  # sega's factor is one per pair of the whole list
        freqs[chosen], gains[chosen] = scaled[chosen], factor[chosen] if torch.is_tensor(factor) else factor
    distance = (ids - origin).gather(-1, axes.expand(*ids.shape[:-1], -1))  # (..., pairs)
    return origin[axes] * trained + distance * freqs, gains


@dataclass(frozen=True)
class InterleavedMRopeKind(RopeKind):
    """section: the config key of the pairs per axis; offset: the image's origin on every axis."""

    section: str = "mrope_section"
    offset: int = 65536
    title: ClassVar[str] = "interleaved MRoPE (position ids)"

    def make_rope(self, original, setup: RopeSetup) -> InterleavedMRope:
        return InterleavedMRope(original, setup)


class InterleavedMRope(ExtrapolatedRope):
    """forward(position_ids (b, L, 3)) -> cos, sin (b, L, head_dim) float32, the half-width table twice."""

    def forward(self, position_ids: torch.Tensor):
        out = self.original(position_ids)
        offset = self.setup.family.kind.offset
        image = position_ids[..., 0] >= offset
        if not bool(image.any()):
            return out
        extent = (position_ids[image] - offset).amax(0) + 1
        grid = (int(extent[1]), int(extent[2]))
        plan = self.plan(grid)
        if plan is None:
            return out

        def build():
            head_dim, theta = self.setup.dims[0], self.setup.thetas[0]
            axes = pair_axes(head_dim // 2, self.setup.config[self.setup.family.kind.section])
            ids = position_ids.detach().to("cpu", torch.float64)
            angles, gains = interleaved_angles(
                ids,
                torch.full((3,), float(offset), dtype=torch.float64),
                axes,
                head_dim,
                theta,
                self.axis_scalings(plan),
            )
            gain = math.sqrt(plan.logit_scale)
            cos, sin = (torch.cat([f(angles) * gains] * 2, -1) * gain for f in (torch.cos, torch.sin))
            keep = ~image.cpu()[..., None]
            cos = torch.where(keep, out[0].cpu().double() * gain, cos)
            sin = torch.where(keep, out[1].cpu().double() * gain, sin)
            return cos.to(out[0]), sin.to(out[1])

        return self.cached((tensor_key(position_ids), plan_key(plan)), build, anchors=(position_ids,))


# -- families ------------------------------------------------------------------------------------------------


def whole_head(config) -> tuple[int, int, int]:
    """Each axis draws its pairs from the whole head's frequency list: head_dim per axis."""
    head_dim = int(config["attention_head_dim"])
    return head_dim, head_dim, head_dim


IDEOGRAM4 = Family(
    name="ideogram4",
    title="Ideogram 4",
    classes=("Ideogram4Transformer2DModel",),
    kind=InterleavedMRopeKind(),
    axes=("reference", "spatial", "spatial"),
    rope_axes=RopeAxes(dims=whole_head, theta="rope_theta"),
    trained=(
        TrainedGrid(
            (128, 128),
            "Ideogram4Pipeline's default and recommended size, 2048 x 2048 px, stands in for the trained one "
            "(the model "
            "card was not read); VAE 8x, patch 2",
        ),
    ),
    time=Timestep(0.0, "Ideogram4Pipeline passes model time 1 - sigma: 0 at noise, 1 at the image", at_clean=1.0),
    rope_attr="rotary_emb",
    rope_classes=("Ideogram4MRoPE",),
    pipelines=("Ideogram4Pipeline",),
)

FAMILIES = (IDEOGRAM4,)

"""SANA-WM's rope: `rope((frames, h, w), device)`, a complex table of the token grid.

SanaWMRotaryPosEmbed splits the GDN head (linear_head_dim) as Wan does (y, x: 2 (head // 6)
channels each, t the rest), theta 10000, and returns complex64 (1, 1, frames * h * w, head // 2)
at positions 0 .. n - 1 per axis, row-major, the pairs of t, y, x in order. The replacement builds
the same table for any grid (the module's own stops at its 1024 precomputed positions).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch
from einops import rearrange

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

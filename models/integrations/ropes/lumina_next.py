"""Lumina-Next's table, built by its pipeline each step and passed in: complex (H, W, pairs), axes alternating.

LuminaPipeline builds `get_2d_rotary_pos_embed_lumina` over 384 x 384 positions each step, with
its own time-aware rescaling beyond 1024 px (positions divided by the size ratio, or theta times
it, by the step's time), and the transformer takes its top-left (h, w) corner. Its pairs alternate
between the axes: pair 2 k is y's k-th, pair 2 k + 1 is x's. The transformer's forward pre-hook
swaps the argument for the method's table of the latent's grid, positions 0 .. n - 1 on both axes,
wherever the plan is not None; elsewhere (at or inside the trained grid, "none") the pipeline's
own table stays, its rescaling included.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch

from .base import GivenTableRope, RopeKind, RopeSetup, axis_table, plan_key


@dataclass(frozen=True)
class LuminaNextKind(RopeKind):
    """argument: the forward argument holding the pipeline's complex table; patch: the patch size's config key."""

    argument: str = "image_rotary_emb"
    patch: str = "patch_size"
    title: ClassVar[str] = "complex table from the pipeline (axes alternating)"

    def make_rope(self, original, setup: RopeSetup) -> LuminaNextRope:
        return LuminaNextRope(original, setup)


class LuminaNextRope(GivenTableRope):
    """forward(hidden_states (b, c, h, w), given (H, W, pairs) complex) -> the grid's (h, w, pairs) table, or
    None where `given` stays."""

    def forward(self, hidden_states: torch.Tensor, given: torch.Tensor):
        p = int(self.setup.config[self.setup.family.kind.patch])
        grid = (hidden_states.shape[-2] // p, hidden_states.shape[-1] // p)
        plan = self.plan(grid)
        if plan is None:
            return None

        def build():
            parts = []
            for dim, theta, scaling, n in zip(
                self.setup.dims, self.setup.thetas, self.axis_scalings(plan), grid, strict=True
            ):
                cos, sin = axis_table(dim, theta, scaling, plan.logit_scale, torch.arange(n, dtype=torch.float64))
                parts.append(torch.complex(cos, sin))
            y, x = parts
            pairs = torch.stack([y[:, None].expand(-1, grid[1], -1), x[None].expand(grid[0], -1, -1)], -1)
            return pairs.flatten(2).to(device=given.device, dtype=given.dtype)  # (h, w, pairs): y0, x0, y1, x1, ...

        return self.cached((grid, given.dtype, given.device, plan_key(plan)), build)

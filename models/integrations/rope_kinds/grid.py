"""Grid ropes: called with the latent video, returning the whole grid's table (Wan, HunyuanVideo).

`rope(hidden_states)` with hidden_states (b, c, frames, h, w) returns cos, sin of the token grid
(frames / p_t, h / p, w / p), row-major, positions 0 .. n - 1 per axis, each pair's value twice,
in the family's shape (`GridKind.shape`: Wan (1, seq, 1, head_dim), HunyuanVideo (seq, dims)).
The replacement builds the same format for any grid. Under context parallelism diffusers shards
the rope's output, after this module ran on the whole grid.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch
from einops import rearrange

from .base import ExtrapolatedRope, RopeKind, RopeSetup, grid_table, index_positions, plan_key


@dataclass(frozen=True)
class GridKind(RopeKind):
    """A grid rope's parameters.

    patch: config keys of the patch size per axis, (t, h, w); one key holding a 3-tuple also works.
    shape: the einops pattern of the returned tables from "s d" (seq, channels).
    """

    patch: tuple[str, ...]
    shape: str = "s d"
    title: ClassVar[str] = "grid (hidden_states)"

    def patch_sizes(self, config) -> tuple[int, int, int]:
        values = [config[key] for key in self.patch]
        if len(values) == 1:
            values = list(values[0])
        return tuple(int(v) for v in values)

    def make_rope(self, original, setup: RopeSetup) -> GridRope:
        return GridRope(original, setup)


class GridRope(ExtrapolatedRope):
    """forward(hidden_states (b, c, f, h, w)) -> cos, sin in the family's shape."""

    def __init__(self, original, setup: RopeSetup):
        super().__init__(original, setup)
        kind = setup.family.kind
        self.patch_size = kind.patch_sizes(setup.config)
        self.shape = kind.shape

    def forward(self, hidden_states: torch.Tensor):
        grid = tuple(n // p for n, p in zip(hidden_states.shape[2:], self.patch_size, strict=True))
        plan = self.plan(grid)
        if plan is None:
            return self.original(hidden_states)
        device = hidden_states.device

        def build():
            tables = grid_table(self.setup.dims, self.setup.thetas, self.axis_scalings(plan), plan.logit_scale,
                                index_positions(grid), device, full=True)
            return tuple(rearrange(t, f"s d -> {self.shape}") for t in tables)

        return self.cached((grid, device, plan_key(plan)), build)

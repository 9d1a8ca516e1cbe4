"""Grid ropes: called with the latent, returning the whole grid's table (Wan, HunyuanVideo and copies).

`rope(hidden_states)` with hidden_states (b, c, frames, h, w) (or (b, c, h, w) for an image grid)
returns cos, sin of the token grid (frames / p_t, h / p, w / p), row-major, positions 0 .. n - 1 per
axis, each pair's value twice, in the family's shape (`GridKind.shape`: Wan (1, seq, 1, head_dim),
HunyuanVideo (seq, dims)). ChronoEdit (`temporal_skip`) puts a two-frame latent, an edit's input
and output, at times 0 and temporal_skip_len - 1, the ends of its reasoning clip; that span is the
time axis's length. The replacement builds the same format for any grid. Under context parallelism
diffusers shards the rope's output, after this module ran on the whole grid.
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

    patch: config keys of the patch size per axis, (t, h, w) or (h, w); one key holding a tuple also works.
    shape: the einops pattern of the returned tables from "s d" (seq, channels).
    temporal_skip: the config key of ChronoEdit's temporal_skip_len (None: no such rule).
    """

    patch: tuple[str, ...]
    shape: str = "s d"
    temporal_skip: str | None = None
    title: ClassVar[str] = "grid (hidden_states)"

    def patch_sizes(self, config) -> tuple[int, ...]:
        values = [config[key] for key in self.patch]
        if len(values) == 1:
            values = list(values[0])
        return tuple(int(v) for v in values)

    def positions(self, config, sizes) -> list[torch.Tensor]:
        """Per axis, the positions (float64) of a token grid of `sizes`, as the family's module places them."""
        positions = index_positions(sizes)
        if self.temporal_skip is not None and sizes[0] == 2:
            positions[0] = torch.tensor([0.0, float(config[self.temporal_skip]) - 1])
        return positions

    def make_rope(self, original, setup: RopeSetup) -> GridRope:
        return GridRope(original, setup)


class GridRope(ExtrapolatedRope):
    """forward(hidden_states (b, c, f, h, w)) -> cos, sin in the family's shape."""

    def __init__(self, original, setup: RopeSetup):
        super().__init__(original, setup)
        self.kind = setup.family.kind
        self.patch_size = self.kind.patch_sizes(setup.config)
        self.shape = self.kind.shape

    def forward(self, hidden_states: torch.Tensor):
        sizes = tuple(n // p for n, p in zip(hidden_states.shape[2:], self.patch_size, strict=True))
        positions = self.kind.positions(self.setup.config, sizes)
        grid = tuple(int(p[-1]) + 1 if len(p) else 0 for p in positions)  # each axis's length: its span
        plan = self.plan(grid)
        if plan is None:
            return self.original(hidden_states)
        device = hidden_states.device

        def build():
            tables = grid_table(
                self.setup.dims,
                self.setup.thetas,
                self.axis_scalings(plan),
                plan.logit_scale,
                positions,
                device,
                full=True,
            )
            return tuple(rearrange(t, f"s d -> {self.shape}") for t in tables)

        return self.cached((sizes, device, plan_key(plan)), build)

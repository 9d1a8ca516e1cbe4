"""AnyFlow's ropes: called with the layout of the whole video, returning complex tables for q and k.

`rope(layout_cfg, device)` (AnyFlowRotaryPosEmbed) and `rope(far_cfg, device, clean_hidden_states)`
(AnyFlowCausalRotaryPosEmbed, FAR) return {"query": t, "key": t}, t complex (1, 1, seq, head_dim // 2),
Wan's channels per axis (time, height, width). The layout names the whole video: total_frames and
full_frame_shape in tokens, positions 0 .. n - 1 per axis, row-major; so the plan is the whole
video's even when a causal step computes one chunk (its query takes the table's last tokens).
FAR puts the first num_compressed_frames frames (the context made already) on a coarser grid,
compressed_frame_shape: each compressed token's table is the full grid's averaged over its cell of
k = compressed_patch_size / patch_size tokens per axis and brought back to unit length, i.e. the
angle at the cell's centre, position k j + (k - 1) / 2. Then come the full-resolution frames (twice
with clean_hidden_states). The replacement places both grids so, with the method's frequencies,
and puts the method's gain (a logit scale) on every token. Its tables are complex64 (float32, as
every kind's); the attention multiplies them in complex128 where the device has float64.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch
from einops import rearrange

from .base import ExtrapolatedRope, RopeKind, RopeSetup, grid_table, plan_key


@dataclass(frozen=True)
class AnyFlowKind(RopeKind):
    """causal: FAR's rope (compressed context frames, `far_cfg`) rather than the bidirectional one (`layout_cfg`)."""

    causal: bool = False
    title: ClassVar[str] = "AnyFlow (layout, complex)"

    def make_rope(self, original, setup: RopeSetup) -> AnyFlowRope:
        return AnyFlowRope(original, setup)


def cell_centres(count: int, cell: int) -> torch.Tensor:
    """Positions (float64) of `count` cells of `cell` tokens each on a token axis: their centres."""
    return torch.arange(count, dtype=torch.float64) * cell + (cell - 1) / 2


class AnyFlowRope(ExtrapolatedRope):
    """forward(layout, device[, clean_hidden_states]) -> {"query": t, "key": t}, t complex (1, 1, seq, pairs)."""

    def __init__(self, original, setup: RopeSetup):
        super().__init__(original, setup)
        self.causal = setup.family.kind.causal
        if self.causal:
            config = setup.config
            self.cells = tuple(
                int(c) // int(p) for c, p in zip(config["compressed_patch_size"], config["patch_size"], strict=True)
            )

    def forward(self, layout_cfg=None, device=None, clean_hidden_states=None, far_cfg=None):
        layout = far_cfg if far_cfg is not None else layout_cfg
        grid = (int(layout["total_frames"]), *(int(n) for n in layout["full_frame_shape"]))
        plan = self.plan(grid)
        if plan is None:
            if self.causal:
                return self.original(layout, device, clean_hidden_states)
            return self.original(layout, device)
        compressed = (
            (int(layout["num_compressed_frames"]), *(int(n) for n in layout["compressed_frame_shape"]))
            if self.causal
            else (0, 0, 0)
        )
        twice = self.causal and clean_hidden_states is not None
        key = (grid, compressed, twice, torch.device(device), plan_key(plan))
        table = self.cached(key, lambda: self._build(plan, grid, compressed, twice, device))
        return {"query": table, "key": table}

    def _table(self, plan, positions, device) -> torch.Tensor:
        cos, sin = grid_table(
            self.setup.dims, self.setup.thetas, self.axis_scalings(plan), plan.logit_scale, positions, device
        )
        return torch.complex(cos, sin)

    def _build(self, plan, grid, compressed, twice, device) -> torch.Tensor:
        frames, height, width = grid
        n_compressed = compressed[0]
        full = self._table(plan, [torch.arange(n, dtype=torch.float64) for n in grid], device)
        full = full[n_compressed * height * width :]  # the frames after the compressed context
        parts = [full, full] if twice else [full]
        if n_compressed:
            cells = [cell_centres(n, k) for n, k in zip((n_compressed, *compressed[1:]), self.cells, strict=True)]
            parts.insert(0, self._table(plan, cells, device))
        return rearrange(torch.cat(parts), "s d -> 1 1 s d")

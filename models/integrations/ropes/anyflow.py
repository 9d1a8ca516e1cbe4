"""AnyFlow's ropes (Wan 2.1 distilled to flow maps): called with the whole video's layout, complex tables for q, k.

`rope(layout_cfg, device)` (AnyFlowRotaryPosEmbed) and `rope(far_cfg, device, clean_hidden_states)`
(AnyFlowCausalRotaryPosEmbed, FAR) return {"query": t, "key": t}, t complex (1, 1, seq, head_dim // 2),
Wan's channels per axis (time head_dim - 4 (head_dim // 6), y and x 2 (head_dim // 6) each), theta
10000 (their default; the transformers pass none). The layout names the whole video: total_frames
(FAR: the sum of chunk_partition at every chunk's step) and full_frame_shape in tokens, positions
0 .. n - 1 per axis, row-major; so the plan is the whole video's even when a causal step computes
one chunk (its query takes the table's last tokens).
FAR puts the first num_compressed_frames frames (the context made already) on a coarser grid,
compressed_frame_shape: each compressed token's table is the full grid's averaged over its cell of
k = compressed_patch_size / patch_size tokens per axis and brought back to unit length, i.e. the
angle at the cell's centre, position k j + (k - 1) / 2. Then come the full-resolution frames (twice
with clean_hidden_states). The replacement places both grids so, with the method's frequencies,
and puts the method's gain (a logit scale) on every token. Its tables are complex64 (float32, as
every kind's); the attention multiplies them in complex128 where the device has float64.

Time: the AnyFlow pipelines pass the scheduler's timesteps, sigma * 1000, per frame (0 on given
context frames): the largest entry counts. RIFLEx publishes no k: derived (4 at 21 latent frames).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

import torch
from einops import rearrange

from ..family import Family, RopeAxes, Timestep, TrainedGrid
from .base import ExtrapolatedRope, RopeKind, RopeSetup, grid_table, plan_key
from .wan_hunyuan_video import wan_axes_dims


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


# -- families ------------------------------------------------------------------------------------------------

ANYFLOW = Family(
    name="anyflow",
    title="AnyFlow",
    classes=("AnyFlowTransformer3DModel",),
    kind=AnyFlowKind(causal=False),
    axes=("temporal", "spatial", "spatial"),
    rope_axes=RopeAxes(
        dims=wan_axes_dims,
        theta=10000.0,
        theta_source="AnyFlowRotaryPosEmbed's default; AnyFlowTransformer3DModel passes none",
    ),
    trained=(
        TrainedGrid(
            (21, 30, 52),
            "AnyFlow-Wan2.1-T2V-14B (distilled from Wan 2.1 T2V 14B): AnyFlowPipeline's defaults, 81 frames at "
            "480 x 832 "
            "px; VAE 8x spatial, 4x temporal, patch (1, 2, 2)",
        ),
    ),
    time=Timestep(1000.0, "AnyFlowPipeline passes the scheduler's timesteps, sigma * 1000, per frame"),
    rope_attr="rope",
    rope_classes=("AnyFlowRotaryPosEmbed",),
    pipelines=("AnyFlowPipeline",),
)

ANYFLOW_FAR = replace(
    ANYFLOW,
    name="anyflow-far",
    title="AnyFlow-FAR",
    classes=("AnyFlowFARTransformer3DModel",),
    kind=AnyFlowKind(causal=True),
    rope_axes=replace(
        ANYFLOW.rope_axes,
        theta_source="AnyFlowCausalRotaryPosEmbed's default; AnyFlowFARTransformer3DModel passes none",
    ),
    trained=(
        TrainedGrid(
            (21, 30, 52),
            "AnyFlow-FAR: its released checkpoints target 81 frames (21 latent frames, chunk_partition 1 + 3 x 6 + 2, "
            "the transformer's docstring) at 480 x 832 px (AnyFlowFARPipeline's defaults; 60 x 104 latents, the "
            "rope's comment); VAE 8x spatial, 4x temporal, patch (1, 2, 2)",
        ),
    ),
    time=Timestep(1000.0, "AnyFlowFARPipeline passes the scheduler's timesteps, sigma * 1000, per frame"),
    rope_classes=("AnyFlowCausalRotaryPosEmbed",),
    pipelines=("AnyFlowFARPipeline",),
)

FAMILIES = (ANYFLOW, ANYFLOW_FAR)

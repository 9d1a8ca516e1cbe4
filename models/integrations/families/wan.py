"""Wan 2.1 / 2.2 (diffusers `WanTransformer3DModel`): `rope` (`WanRotaryPosEmbed`) replaced.

`WanRotaryPosEmbed(hidden_states)` with hidden_states (b, c, frames, h, w) returns cos, sin of
shape (1, seq, 1, head_dim), each pair's value twice (WanAttnProcessor reads cos[..., 0::2] and
sin[..., 1::2]); axes (t, y, x) get head_dim - 4 (head_dim // 6), 2 (head_dim // 6) and
2 (head_dim // 6) channels, theta 10000, positions 0 .. n - 1 (precomputed up to
rope_max_seq_len). The replacement builds the same format for any grid. Under context
parallelism diffusers shards the rope's output, after this module ran on the whole grid.

Time: WanPipeline passes the scheduler's timesteps, 0 .. 1000 (sigma * 1000): t = timestep / 1000;
Wan 2.2's per-token timesteps (b, seq) count by their largest entry.

RIFLEx publishes no k for Wan; `Family.riflex_index` derives it (the shortest period beyond the
21 trained latent frames: k = 4 (1-based), N_k = 22 for head_dim 128).
"""

from __future__ import annotations

import torch
from einops import rearrange

from axialrope import rope_frequencies

from .base import ExtrapolatedRope, Family, TrainedGrid, full_width, grid_table, index_positions, plan_key

WAN_THETA = 10000.0  # WanRotaryPosEmbed's default; WanTransformer3DModel does not pass another


def wan_axes_dims(head_dim: int) -> tuple[int, int, int]:
    spatial = 2 * (head_dim // 6)
    return head_dim - 2 * spatial, spatial, spatial


class WanRope(ExtrapolatedRope):
    """forward(hidden_states (b, c, f, h, w)) -> cos, sin (1, seq, 1, head_dim), as `WanRotaryPosEmbed`."""

    def __init__(self, original, *args, **kwargs):
        super().__init__(original, *args, **kwargs)
        self.axes_dims = wan_axes_dims(original.attention_head_dim)
        self.patch_size = tuple(original.patch_size)

    def planned_axes(self):
        return [(d, WAN_THETA) for d in self.axes_dims]

    def forward(self, hidden_states: torch.Tensor):
        grid = tuple(n // p for n, p in zip(hidden_states.shape[2:], self.patch_size, strict=True))
        plan = self.plan(grid)
        if plan is None:
            return self.original(hidden_states)
        device = hidden_states.device

        def build():
            tables = grid_table(self.axes_dims, (WAN_THETA,) * 3, plan.scalings, plan.logit_scale,
                                index_positions(grid, device), full=True)
            return tuple(rearrange(t, "s d -> 1 s 1 d") for t in tables)

        return self.cached((grid, device, plan_key(plan)), build)


class Wan(Family):
    name = "wan"
    class_names = ("WanTransformer3DModel",)
    video = True
    rope_attr = "rope"
    timestep_scale = 1000.0

    def trained_grid(self, transformer) -> TrainedGrid:
        from ..trained_grids import TRAINED_GRIDS

        # Wan 2.2's 5B TI2V model is the one with the 48-channel VAE
        return TRAINED_GRIDS["wan-2.2-ti2v" if transformer.config.in_channels == 48 else "wan-2.1"]

    def check(self, transformer) -> None:
        super().check(transformer)
        rope = transformer.rope
        head_dim = rope.attention_head_dim
        trained = torch.cat([rope_frequencies(d, WAN_THETA)[0] for d in wan_axes_dims(head_dim)])
        # its precomputed table at position 1 holds each pair's frequency: it must be theta 10000's
        expected = full_width(trained.cos().float())
        if not torch.allclose(rope.freqs_cos[1].float().cpu(), expected, atol=1e-6):
            raise ValueError("this WanRotaryPosEmbed was not built with theta 10000; the adapter assumes it")

    def temporal_inv_freq(self, transformer) -> torch.Tensor:
        return rope_frequencies(wan_axes_dims(transformer.rope.attention_head_dim)[0], WAN_THETA)[0]

    def make_rope(self, transformer, extrapolation, trained_grid, time, cache_size):
        return WanRope(transformer.rope, extrapolation, trained_grid, time, cache_size)

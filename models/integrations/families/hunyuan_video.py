"""HunyuanVideo (diffusers `HunyuanVideoTransformer3DModel`): `rope` (`HunyuanVideoRotaryPosEmbed`) replaced.

`HunyuanVideoRotaryPosEmbed(hidden_states)` with hidden_states (b, c, frames, h, w) returns cos,
sin (seq, sum(rope_dim)), each pair's value twice, over axes (t, y, x) of rope_dim (16, 56, 56)
channels with theta 256, positions 0 .. n - 1 per axis (float32 angles). The replacement gives
the same format with float64 angles beyond the trained grid.

Time: HunyuanVideoPipeline passes the scheduler's timesteps (sigma * 1000): t = timestep / 1000.

RIFLEx (thu-ml/RIFLEx, hunyuanvideo.py and riflex_utils.identify_k): k = 4 (1-based; the
0-based pair 3), N_k = 50 latent frames for the temporal rope_dim 16 at theta 256.
"""

from __future__ import annotations

import torch

from axialrope import rope_frequencies

from .base import ExtrapolatedRope, Family, grid_table, index_positions, plan_key


class HunyuanVideoRope(ExtrapolatedRope):
    """forward(hidden_states (b, c, f, h, w)) -> cos, sin (seq, sum(rope_dim)), as `HunyuanVideoRotaryPosEmbed`."""

    def __init__(self, original, *args, **kwargs):
        super().__init__(original, *args, **kwargs)
        self.axes_dims = tuple(original.rope_dim)
        self.theta = float(original.theta)
        self.patch_size = (original.patch_size_t, original.patch_size, original.patch_size)

    def planned_axes(self):
        return [(d, self.theta) for d in self.axes_dims]

    def forward(self, hidden_states: torch.Tensor):
        grid = tuple(n // p for n, p in zip(hidden_states.shape[2:], self.patch_size, strict=True))
        plan = self.plan(grid)
        if plan is None:
            return self.original(hidden_states)
        device = hidden_states.device

        def build():
            return grid_table(self.axes_dims, (self.theta,) * 3, plan.scalings, plan.logit_scale,
                              index_positions(grid, device), full=True)

        return self.cached((grid, device, plan_key(plan)), build)


class HunyuanVideo(Family):
    name = "hunyuan-video"
    class_names = ("HunyuanVideoTransformer3DModel",)
    video = True
    rope_attr = "rope"
    timestep_scale = 1000.0
    published_riflex_index = 4

    def published_riflex_index_for(self, transformer) -> int | None:
        rope = transformer.rope  # the authors' k is for HunyuanVideo's own temporal frequencies
        return self.published_riflex_index if (rope.rope_dim[0], float(rope.theta)) == (16, 256.0) else None

    def temporal_inv_freq(self, transformer) -> torch.Tensor:
        return rope_frequencies(transformer.rope.rope_dim[0], float(transformer.rope.theta))[0]

    def make_rope(self, transformer, extrapolation, trained_grid, time, cache_size):
        return HunyuanVideoRope(transformer.rope, extrapolation, trained_grid, time, cache_size)

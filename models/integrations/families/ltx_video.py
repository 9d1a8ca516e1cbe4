"""LTX-Video (diffusers `LTXVideoTransformer3DModel`): `rope` (`LTXVideoRotaryPosEmbed`) replaced.

LTX's rope rotates the whole inner dimension (heads * head_dim), before the heads are split.
With n = dim // 6 pairs per axis and omega_i = (pi / 2) * theta^(i / (n - 1)), i = 0 .. n - 1,
a token at grid index m on axis a gets the angle omega_i * (2 g_a - 1), where
g_a = m * scale_a * patch_a / base_a (scale: the pipeline's rope_interpolation_scale, VAE factor
over frame rate in time and the VAE factor in space; base: 20 frames, 2048 px) or g_a = m
without a scale. Pairs are ordered (i, axis) -> 3 i + axis, each value twice, and dim % 6
leading channels pass through (cos 1, sin 0). Tables (b, seq, dim) float32.

The core sees the same angles as an axial RoPE: per axis 2n channels with base
theta^(n / (n - 1)) (so its frequencies theta^(-j / (n - 1)) are omega reversed, over
(pi / 2) theta) at coordinates c_a = (pi / 2) theta (2 g_a - 1). Neighbouring tokens are
pi theta scale_a patch_a / base_a apart in c, the `token_spacing` the methods that count
rotations within the trained length use. The constant phase -omega_i of every token cancels in
each q.k logit.

Time: LTXPipeline passes the scheduler's timesteps (sigma * 1000): t = timestep / 1000.
RIFLEx publishes no k for LTX-Video; it is derived (`Family.riflex_index`) at LTXPipeline's
default time spacing (VAE 8 frames over 25 fps). With `video_coords` (LTXConditionPipeline) the
spacing of the tokens is not known to the rope module, so it is supported at the trained grid
only (a clear error beyond it).
"""

from __future__ import annotations

import math

import torch
from einops import rearrange

from axialrope import rope_frequencies

from .base import ExtrapolatedRope, Family, full_width, grid_table, index_positions, plan_key

LTX_DEFAULT_TIME_SCALE = 8 / 25  # LTXPipeline: VAE temporal factor 8 over its default 25 fps


class LTXVideoRope(ExtrapolatedRope):
    """forward(hidden_states, num_frames, height, width, rope_interpolation_scale, video_coords)
    -> cos, sin (b, seq, dim), as `LTXVideoRotaryPosEmbed`."""

    def __init__(self, original, *args, **kwargs):
        super().__init__(original, *args, **kwargs)
        self.pairs = original.dim // 6  # per axis
        if self.pairs < 2:
            raise ValueError(f"LTX-Video's rope needs dim >= 12, got {original.dim}")
        self.theta = float(original.theta)
        self.bases = (original.base_num_frames, original.base_height, original.base_width)
        self.patches = (original.patch_size_t, original.patch_size, original.patch_size)
        self._spacing = None
        n = self.pairs
        # LTX pair 3 i + a <- the core's pair j = n - 1 - i of axis a (column a n + j)
        self.register_buffer("order", torch.tensor([a * n + (n - 1 - i) for i in range(n) for a in range(3)]),
                             persistent=False)

    @property
    def core_theta(self) -> float:
        return self.theta ** (self.pairs / (self.pairs - 1))

    def token_spacing(self):
        return self._spacing

    def planned_axes(self):
        return [(2 * self.pairs, self.core_theta)] * 3

    def steps(self, rope_interpolation_scale) -> tuple[float, float, float]:
        """Per axis, the g distance between neighbouring tokens (1 without a scale)."""
        if rope_interpolation_scale is None:
            return (1.0, 1.0, 1.0)
        return tuple(float(s) * p / b
                     for s, p, b in zip(rope_interpolation_scale, self.patches, self.bases, strict=True))

    def forward(self, hidden_states, num_frames=None, height=None, width=None, rope_interpolation_scale=None,
                video_coords=None):
        if num_frames is None or height is None or width is None:
            return self.original(hidden_states, num_frames, height, width, rope_interpolation_scale, video_coords)
        grid = (int(num_frames), int(height), int(width))
        steps = self.steps(rope_interpolation_scale)
        self._spacing = tuple(math.pi * self.theta * step for step in steps)
        plan = self.plan(grid)
        if plan is None:
            return self.original(hidden_states, num_frames, height, width, rope_interpolation_scale, video_coords)
        if video_coords is not None:
            raise ValueError("LTX-Video with video_coords (LTXConditionPipeline) is extrapolated at its trained grid "
                             "only: the rope module cannot tell how far apart those tokens are")
        device, batch = hidden_states.device, hidden_states.shape[0]

        def build():
            # per axis c = (pi / 2) theta (2 g - 1) with g = index * step
            positions = [math.pi / 2 * self.theta * (2 * step * index - 1)
                         for step, index in zip(steps, index_positions(grid, device), strict=True)]
            cos, sin = grid_table((2 * self.pairs,) * 3, (self.core_theta,) * 3, plan.scalings, plan.logit_scale,
                                  positions)
            cos, sin = full_width(cos[:, self.order]), full_width(sin[:, self.order])
            pad = self.original.dim % 6
            if pad:  # pass-through channels: cos 1 (times the logit scale's gain), sin 0
                cos = torch.cat([cos.new_full((cos.shape[0], pad), math.sqrt(plan.logit_scale)), cos], dim=-1)
                sin = torch.cat([sin.new_zeros((sin.shape[0], pad)), sin], dim=-1)
            return rearrange(cos, "s d -> 1 s d"), rearrange(sin, "s d -> 1 s d")

        cos, sin = self.cached((grid, self._spacing, device, plan_key(plan)), build)
        return cos.expand(batch, -1, -1), sin.expand(batch, -1, -1)


class LTXVideo(Family):
    name = "ltx-video"
    class_names = ("LTXVideoTransformer3DModel",)
    video = True
    rope_attr = "rope"
    timestep_scale = 1000.0

    def temporal_inv_freq(self, transformer) -> torch.Tensor:
        rope = transformer.rope
        pairs = rope.dim // 6
        return rope_frequencies(2 * pairs, float(rope.theta) ** (pairs / (pairs - 1)))[0]

    def temporal_spacing(self, transformer) -> float:
        rope = transformer.rope
        return math.pi * float(rope.theta) * LTX_DEFAULT_TIME_SCALE * rope.patch_size_t / rope.base_num_frames

    def make_rope(self, transformer, extrapolation, trained_grid, time, cache_size):
        return LTXVideoRope(transformer.rope, extrapolation, trained_grid, time, cache_size)

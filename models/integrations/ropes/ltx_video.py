"""LTX-Video's rope: angles omega_i (2 g - 1) over the whole inner dimension, before heads split.

With n = dim // 6 pairs per axis and omega_i = (pi / 2) theta^(i / (n - 1)), a token at grid
index m on axis a gets the angle omega_i (2 g_a - 1), g_a = m scale_a patch_a / base_a (scale:
the pipeline's rope_interpolation_scale; base: 20 frames, 2048 px), or g_a = m without a scale.
Pairs are ordered (i, axis) -> 3 i + axis, each value twice, and dim % 6 leading channels pass
through (cos 1, sin 0). Tables (b, seq, dim) float32. The family's dims are the inner dimension's
thirds, read from num_attention_heads x attention_head_dim.

The core sees the same angles as an axial RoPE: per axis 2n channels with base theta^(n / (n - 1))
at coordinates c_a = (pi / 2) theta (2 g_a - 1). Neighbouring tokens are pi theta scale_a
patch_a / base_a apart in c, the `token_spacing` of the methods that count rotations within the
trained length. The constant phase -omega_i of every token cancels in each q.k logit. With
`video_coords` (LTXConditionPipeline) the spacing is unknown here: trained grid only.

Time: LTXPipeline passes sigma * 1000. RIFLEx publishes no k for LTX-Video: it is derived at
LTXPipeline's default time spacing (VAE 8 frames over 25 fps).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import torch
from einops import rearrange

from axialrope import rope_frequencies

from ..family import Family, RopeAxes, Timestep, TrainedGrid
from .base import ExtrapolatedRope, RopeKind, RopeSetup, full_width, grid_table, index_positions, plan_key


@dataclass(frozen=True)
class LTXKind(RopeKind):
    """LTX-Video's rope.

    bases: the rope's base_num_frames, base_height, base_width (the constants the transformer passes).
    default_time_scale: the time entry of the pipeline's rope_interpolation_scale (VAE temporal
        factor over frame rate) that RIFLEx's derived k assumes.
    """

    bases: tuple[int, int, int] = (20, 2048, 2048)
    default_time_scale: float = 8 / 25
    title: ClassVar[str] = "LTX-Video (omega (2 g - 1))"

    def make_rope(self, original, setup: RopeSetup) -> LTXRope:
        return LTXRope(original, setup)

    def temporal_frequencies(self, setup: RopeSetup) -> tuple[torch.Tensor, float]:
        rope = _LTXGeometry(setup)
        spacing = math.pi * rope.theta * self.default_time_scale * rope.patches[0] / rope.bases[0]
        return rope_frequencies(2 * rope.pairs, rope.core_theta)[0], spacing


class _LTXGeometry:
    """LTX's rope numbers from the config: pairs per axis, theta, base sizes, patches."""

    def __init__(self, setup: RopeSetup):
        config = setup.config
        self.dim = int(config["num_attention_heads"]) * int(config["attention_head_dim"])
        self.pairs = self.dim // 6
        if self.pairs < 2:
            raise ValueError(f"LTX-Video's rope needs an inner dimension of at least 12, got {self.dim}")
        self.theta = setup.thetas[0]
        self.bases = setup.family.kind.bases
        self.patches = (int(config["patch_size_t"]), int(config["patch_size"]), int(config["patch_size"]))

    @property
    def core_theta(self) -> float:
        return self.theta ** (self.pairs / (self.pairs - 1))


class LTXRope(ExtrapolatedRope):
    """forward(hidden_states, num_frames, height, width, rope_interpolation_scale, video_coords)
    -> cos, sin (b, seq, dim), as `LTXVideoRotaryPosEmbed`."""

    def __init__(self, original, setup: RopeSetup):
        super().__init__(original, setup)
        self.geometry = _LTXGeometry(setup)
        n = self.geometry.pairs
        # LTX pair 3 i + a <- the core's pair j = n - 1 - i of axis a (column a n + j)
        self.register_buffer(
            "order", torch.tensor([a * n + (n - 1 - i) for i in range(n) for a in range(3)]), persistent=False
        )

    def planned_axes(self):
        return [(2 * self.geometry.pairs, self.geometry.core_theta)] * 3

    def steps(self, rope_interpolation_scale) -> tuple[float, float, float]:
        """Per axis, the g distance between neighbouring tokens (1 without a scale)."""
        if rope_interpolation_scale is None:
            return (1.0, 1.0, 1.0)
        geometry = self.geometry
        return tuple(
            float(s) * p / b for s, p, b in zip(rope_interpolation_scale, geometry.patches, geometry.bases, strict=True)
        )

    def forward(
        self, hidden_states, num_frames=None, height=None, width=None, rope_interpolation_scale=None, video_coords=None
    ):
        own = (hidden_states, num_frames, height, width, rope_interpolation_scale, video_coords)
        if num_frames is None or height is None or width is None:
            return self.original(*own)
        grid = (int(num_frames), int(height), int(width))
        steps = self.steps(rope_interpolation_scale)
        spacing = tuple(math.pi * self.geometry.theta * step for step in steps)
        plan = self.plan(grid, spacing)
        if plan is None:
            return self.original(*own)
        if video_coords is not None:
            raise ValueError(
                "LTX-Video with video_coords (LTXConditionPipeline) is extrapolated at its trained grid "
                "only: the rope module cannot tell how far apart those tokens are"
            )
        device, batch, geometry = hidden_states.device, hidden_states.shape[0], self.geometry

        def build():
            # per axis c = (pi / 2) theta (2 g - 1) with g = index * step
            positions = [
                math.pi / 2 * geometry.theta * (2 * step * index - 1)
                for step, index in zip(steps, index_positions(grid), strict=True)
            ]
            cos, sin = grid_table(
                (2 * geometry.pairs,) * 3,
                (geometry.core_theta,) * 3,
                plan.scalings,
                plan.logit_scale,
                positions,
                device,
            )
            order = self.order.to(device)
            cos, sin = full_width(cos[:, order]), full_width(sin[:, order])
            pad = geometry.dim % 6
            if pad:  # pass-through channels: cos 1 (times the logit scale's gain), sin 0
                cos = torch.cat([cos.new_full((cos.shape[0], pad), math.sqrt(plan.logit_scale)), cos], dim=-1)
                sin = torch.cat([sin.new_zeros((sin.shape[0], pad)), sin], dim=-1)
            return rearrange(cos, "s d -> 1 s d"), rearrange(sin, "s d -> 1 s d")

        cos, sin = self.cached((grid, spacing, device, plan_key(plan)), build)
        return cos.expand(batch, -1, -1), sin.expand(batch, -1, -1)


# -- families ------------------------------------------------------------------------------------------------


def ltx_axes_dims(config) -> tuple[int, int, int]:
    pairs = int(config["num_attention_heads"]) * int(config["attention_head_dim"]) // 6
    return (2 * pairs,) * 3


LTX_VIDEO = Family(
    name="ltx-video",
    title="LTX-Video",
    classes=("LTXVideoTransformer3DModel",),
    kind=LTXKind(bases=(20, 2048, 2048), default_time_scale=8 / 25),
    axes=("temporal", "spatial", "spatial"),
    rope_axes=RopeAxes(
        dims=ltx_axes_dims,
        theta=10000.0,
        theta_source="LTXVideoTransformer3DModel builds LTXVideoRotaryPosEmbed(theta=10000.0)",
    ),
    trained=(
        TrainedGrid(
            (21, 16, 22),
            "LTX-Video: 161 frames at 512 x 704 px (LTXPipeline's defaults, 25 fps); VAE 32x spatial, 8x temporal "
            "((161 - 1) / 8 + 1 = 21 latent frames), patch 1",
        ),
    ),
    time=Timestep(1000.0, "LTXPipeline passes sigma * 1000"),
    rope_attr="rope",
    rope_classes=("LTXVideoRotaryPosEmbed",),
    pipelines=("LTXPipeline", "LTXImageToVideoPipeline"),
)

FAMILIES = (LTX_VIDEO,)

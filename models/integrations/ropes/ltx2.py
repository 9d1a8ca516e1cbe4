"""LTX-2's video rope: `rope(coords, device)`, LTX-Video's angles at coordinates the pipeline gives.

LTX2AudioVideoRotaryPosEmbed takes patch bounds (b, 3, seq, 2) in pixels (time in seconds), uses
their midpoints m, and with g_a = m_a / base_a (base: pos_embed_max_pos, base_height, base_width)
gives pair (i, axis) -> 3 i + axis the angle omega_i (2 g_a - 1), omega_i = (pi / 2) theta^(i / (n - 1)),
n = inner_dim // 6, as LTX-Video (`ltx_video.py`: the core sees an axial RoPE with base
theta^(n / (n - 1)) at c_a = (pi / 2) theta (2 g_a - 1)). Tables: "interleaved" (b, seq, inner_dim),
each pair twice, inner_dim % 6 leading pass-through channels; "split" (b, heads, seq, head_dim // 2),
pass-through first. Time, y and x take the method (riflex on t, its k derived: none is published):
their extent in tokens is read from the coordinates (the pipeline's keyframe tokens included); the
spacing of y and x is the VAE factor times the patch over the base, that of time a latent frame's
span in seconds (its bounds' width: the call's own frame rate) over the base.

The audio rope and the two cross-attention ropes are other modules, kept as trained: the audio's
positions are its own latent frames in seconds, and the cross-attention ropes rotate video queries
and audio keys by their times in seconds, so that a video frame and the audio at the same second
line up; changing the video's side alone would shift that alignment, and changing both would
extrapolate the audio. Time: LTX2Pipeline passes the scheduler's timesteps, sigma * 1000 (and the
same as `sigma`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import torch
from einops import rearrange

from axialrope import rope_frequencies

from ..family import Family, RopeAxes, Timestep, TrainedGrid
from .base import ExtrapolatedRope, RopeKind, RopeSetup, axial_table, full_width, plan_key, tensor_key

DEFAULT_FPS = 24.0  # LTX2Pipeline's frame_rate


def ltx2_pairs(config) -> int:
    """Pairs per axis of the video rope: inner_dim // 6."""
    return int(config["num_attention_heads"]) * int(config["attention_head_dim"]) // 6


@dataclass(frozen=True)
class LTX2Kind(RopeKind):
    title: ClassVar[str] = "LTX-2 (coordinates, omega (2 g - 1))"

    def make_rope(self, original, setup: RopeSetup) -> LTX2Rope:
        return LTX2Rope(original, setup)

    def temporal_frequencies(self, setup: RopeSetup) -> tuple[torch.Tensor, float]:
        """The core's time frequencies (base theta^(n / (n - 1))) per c unit, and c units per latent frame at
        LTX2Pipeline's default frame rate (`DEFAULT_FPS`)."""
        config = setup.config
        pairs, theta = ltx2_pairs(config), float(config["rope_theta"])
        seconds = float(config["vae_scale_factors"][0]) * int(config["patch_size_t"]) / DEFAULT_FPS
        inv_freq = rope_frequencies(2 * pairs, theta ** (pairs / (pairs - 1)))[0]
        return inv_freq, math.pi * theta * seconds / float(config["pos_embed_max_pos"])


class LTX2Rope(ExtrapolatedRope):
    """forward(coords (b, 3, seq, 2) or (b, 3, seq), device) -> cos, sin as LTX2AudioVideoRotaryPosEmbed (video)."""

    def __init__(self, original, setup: RopeSetup):
        super().__init__(original, setup)
        config = setup.config
        self.dim = int(config["num_attention_heads"]) * int(config["attention_head_dim"])
        self.pairs = ltx2_pairs(config)
        if self.pairs < 2:
            raise ValueError(f"LTX-2's rope needs an inner dimension of at least 12, got {self.dim}")
        self.theta = float(config["rope_theta"])
        self.core_theta = self.theta ** (self.pairs / (self.pairs - 1))
        self.bases = (float(config["pos_embed_max_pos"]), float(config["base_height"]), float(config["base_width"]))
        patch = int(config["patch_size"])
        self.pixel_steps = tuple(float(f) * patch for f in config["vae_scale_factors"][1:])  # y, x per token
        self.heads = int(config["num_attention_heads"])
        self.split = config["rope_type"] == "split"
        n = self.pairs
        # LTX pair 3 i + a <- the core's pair j = n - 1 - i of axis a (column a n + j)
        self.register_buffer(
            "order", torch.tensor([a * n + (n - 1 - i) for i in range(n) for a in range(3)]), persistent=False
        )

    def prepare_video_coords(self, *args, **kwargs):
        """The family's own method (the pipelines and the transformer call it on `transformer.rope`)."""
        return self.original.prepare_video_coords(*args, **kwargs)

    def prepare_coords(self, *args, **kwargs):
        return self.original.prepare_coords(*args, **kwargs)

    @staticmethod
    def seconds_per_frame(whole: torch.Tensor, middle: torch.Tensor) -> float:
        """A latent frame's span in seconds: the widest time bounds of coords (b, 3, seq, 2) (the first frame's are
        clamped narrower), else the widest gap between the time midpoints (b, 3, seq); 1 for a single frame."""
        if whole.ndim == 4:
            step = float((whole[:, 0, :, 1] - whole[:, 0, :, 0]).amax())
        else:
            times = middle[:, 0].flatten().unique()
            step = float(times.diff().amax()) if times.numel() > 1 else 0.0
        return step if step > 0 else 1.0

    def planned_axes(self):
        return [(2 * self.pairs, self.core_theta)] * len(self.setup.family.planned_axes)

    def forward(self, coords: torch.Tensor, device=None):
        device = coords.device if device is None else device
        if coords.shape[1] != 3:
            return self.original(coords, device=device)
        whole = coords.detach().to("cpu", torch.float64)
        middle = whole.mean(dim=-1) if whole.ndim == 4 else whole  # (b, 3, seq): the patches' midpoints
        steps = (self.seconds_per_frame(whole, middle), *self.pixel_steps)  # per token: t, y, x
        grid = tuple(
            int(round(float(middle[:, a].amax() - middle[:, a].amin()) / step)) + 1 for a, step in enumerate(steps)
        )
        spacing = tuple(math.pi * self.theta * step / base for step, base in zip(steps, self.bases, strict=True))
        plan = self.plan(grid, spacing)
        if plan is None:
            return self.original(coords, device=device)

        def build():
            # per axis c = (pi / 2) theta (2 g - 1), g = midpoint / base
            c = math.pi / 2 * self.theta * (2 * middle / torch.tensor(self.bases, dtype=torch.float64)[:, None] - 1)
            cos, sin = axial_table(
                (2 * self.pairs,) * 3,
                (self.core_theta,) * 3,
                self.axis_scalings(plan),
                plan.logit_scale,
                rearrange(c, "b a s -> b s a"),
                torch.device("cpu"),
            )
            cos, sin = cos[..., self.order], sin[..., self.order]
            if not self.split:
                cos, sin = full_width(cos), full_width(sin)
            pad = (self.dim if not self.split else self.dim // 2) - cos.shape[-1]
            if pad:  # pass-through channels: cos 1 (times the logit scale's gain), sin 0
                cos = torch.cat([cos.new_full((*cos.shape[:-1], pad), math.sqrt(plan.logit_scale)), cos], dim=-1)
                sin = torch.cat([sin.new_zeros((*sin.shape[:-1], pad)), sin], dim=-1)
            if self.split:
                cos, sin = (rearrange(t, "b s (h d) -> b h s d", h=self.heads) for t in (cos, sin))
            return cos.to(device), sin.to(device)

        return self.cached((tensor_key(coords), torch.device(device), plan_key(plan)), build, anchors=(coords,))


# -- families ------------------------------------------------------------------------------------------------


def ltx2_axes_dims(config) -> tuple[int, int, int]:
    return (2 * ltx2_pairs(config),) * 3


LTX2 = Family(
    name="ltx2",
    title="LTX-2",
    classes=("LTX2VideoTransformer3DModel",),
    kind=LTX2Kind(),
    axes=("temporal", "spatial", "spatial"),
    rope_axes=RopeAxes(dims=ltx2_axes_dims, theta="rope_theta"),
    trained=(
        TrainedGrid(
            (16, 16, 24),
            "LTX-2: LTX2Pipeline's default, 121 frames at 512 x 768 px and frame_rate 24 (the model card was not "
            "read); "
            "VAE 8x temporal, 32x spatial, patch 1: (121 - 1) / 8 + 1 latent frames. Its two-stage recipe refines at "
            "twice the size after LTX2LatentUpsamplePipeline: pass trained_grid=(16, 32, 48) for the second stage",
        ),
    ),
    time=Timestep(1000.0, "LTX2Pipeline passes the scheduler's timesteps, sigma * 1000"),
    rope_attr="rope",
    rope_classes=("LTX2AudioVideoRotaryPosEmbed",),
    pipelines=("LTX2Pipeline", "LTX2ImageToVideoPipeline", "LTX2ConditionPipeline"),
)

FAMILIES = (LTX2,)

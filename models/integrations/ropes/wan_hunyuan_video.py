"""Wan's and HunyuanVideo's ropes and their copies: called with the latent, returning the whole grid's table.

`rope(hidden_states)` with hidden_states (b, c, frames, h, w) (or (b, c, h, w) for an image grid)
returns cos, sin of the token grid (frames / p_t, h / p, w / p), row-major, positions 0 .. n - 1 per
axis, each pair's value twice, in the family's shape (`LatentGridKind.shape`: Wan (1, seq, 1, head_dim),
HunyuanVideo (seq, dims)). The replacement builds the same format for any grid. Under
context parallelism diffusers shards the rope's output, after this module ran on the whole grid.

Wan: WanRotaryPosEmbed gives the time axis head_dim - 4 (head_dim // 6) channels and y, x
2 (head_dim // 6) each, theta 10000 (its default; WanTransformer3DModel passes none). Time:
WanPipeline passes sigma * 1000; Wan 2.2's per-token timesteps count by each sample's largest entry,
and a batch whose samples are at different times gets a table each (`LatentGridKind.per_sample`). Its
copies keep the rope and change the trained grid: Wan VACE, Wan Animate, SkyReels-V2, ChronoEdit
(`temporal_skip`: a two-frame edit, input and output, at times 0 and temporal_skip_len - 1, the
ends of its reasoning clip, whose span is the time axis's length) and Sana-Video (a linear
attention). RIFLEx publishes no k for any of them: k is derived at the trained length (head_dim
128: Wan, Wan VACE and Wan Animate 4, as RIFLEx's identify_k at 21 latent frames gives; SkyReels-V2
5, ChronoEdit 2; Sana-Video's head_dim 112: 4).

HunyuanVideo: HunyuanVideoRotaryPosEmbed, axes (t, y, x) of rope_axes_dim channels, theta
rope_theta (256), tables (seq, sum(dims)). Time: HunyuanVideoPipeline passes sigma * 1000. RIFLEx
(thu-ml/RIFLEx, hunyuanvideo.py, riflex_utils.identify_k): k = 4, N_k = 50 latent frames. Its
copies: HunyuanVideo 1.5 and Motif-Video (their own trained grids; k derived, 4 at their 31 latent
frames) and HunyuanImage (two axes, an image model). Framepack's rope takes frame indices: `framepack.py`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import ClassVar

import torch
from einops import rearrange

from axialrope.coords import bundle_positions, bundle_slides

from ..family import Family, RiflexK, RopeAxes, Timestep, TrainedGrid
from ..spa_attention import register_variants
from .base import ExtrapolatedRope, RopeKind, RopeSetup, grid_table, index_positions, plan_key


@dataclass(frozen=True)
class LatentGridKind(RopeKind):
    """A rope called with the latent (Wan's, HunyuanVideo's), returning its token grid's table: its parameters.

    patch: config keys of the patch size per axis, (t, h, w) or (h, w); one key holding a tuple also works.
    shape: the einops pattern of the returned tables from "s d" (seq, channels).
    temporal_skip: the config key of ChronoEdit's temporal_skip_len (None: no such rule).
    per_sample: the tables' first axis (1 in `shape`) broadcasts over the batch in the family's attention
        (Wan's (1, seq, 1, d)), so it can hold one table per sample: a batch whose samples are at different
        diffusion times gets each its own under a timestep-dependent method (others refuse such a batch).
    spa: the tables reach the self-attention's processor as the rope returned them (Wan's and its copies'),
        so spa's variants can be averaged there (`spa_attention.py`).
    """

    patch: tuple[str, ...]
    shape: str = "s d"
    temporal_skip: str | None = None
    per_sample: bool = False
    spa: bool = False
    title: ClassVar[str] = "grid (hidden_states)"

    def spa_unreached(self, family: Family) -> str:
        if self.spa:
            return ""
        return super().spa_unreached(family)

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

    def extent(self, config, sizes) -> tuple[int, ...]:
        """Per axis, the span of `positions` (last position + 1, 0 for an empty axis), from the sizes alone."""
        spans = [int(n) for n in sizes]
        if self.temporal_skip is not None and spans[0] == 2:
            spans[0] = int(config[self.temporal_skip])
        return tuple(spans)

    def make_rope(self, original, setup: RopeSetup) -> LatentGridRope:
        return LatentGridRope(original, setup)


class LatentGridRope(ExtrapolatedRope):
    """The replacement of a rope called with the latent (not the DiT's `axial_dit` GridRope):
    forward(hidden_states (b, c, f, h, w)) -> cos, sin in the family's shape."""

    def __init__(self, original, setup: RopeSetup):
        super().__init__(original, setup)
        self.kind = setup.family.kind
        self.patch_size = self.kind.patch_sizes(setup.config)
        self.shape = self.kind.shape

    def forward(self, hidden_states: torch.Tensor):
        sizes = self.token_sizes(hidden_states)
        grid = self.kind.extent(self.setup.config, sizes)  # each axis's length: its span
        if not self.sample_tables(hidden_states.shape[0], grid):
            return self.table(hidden_states, sizes, grid)
        times = self.call_state().values()
        if len(set(times)) == 1:  # one time: one table, along the batch's axis
            return tuple(t.expand(hidden_states.shape[0], *t.shape[1:]) for t in self.table(hidden_states, sizes, grid))
        tables = [self.table(hidden_states, sizes, grid, time) for time in times]  # each sample at its own time
        return tuple(torch.cat([t.to(torch.float32) for t in parts]) for parts in zip(*tables, strict=True))

    def sample_tables(self, batch: int, grid) -> bool:
        """Whether this call's tables hold one table per sample (`LatentGridKind.per_sample`, the batch
        being at its own times under a timestep-dependent method, beyond the trained grid): decided by
        shapes alone, so that a compiled graph knows it."""
        if not self.kind.per_sample or batch == 1 or self.within_grid(grid):
            return False
        return self.method_for(grid)[0].is_timestep_dependent

    def table(self, hidden_states: torch.Tensor, sizes, grid, time: float | None = None):
        """The tables of the grid at the call's time (or `time`), one for the whole batch."""
        plan = self.plan(grid, time=time)
        if plan is None:
            return self.original(hidden_states)
        positions = self.kind.positions(self.setup.config, sizes)
        device = hidden_states.device

        def build(where=positions):
            tables = grid_table(
                self.setup.dims,
                self.setup.thetas,
                self.axis_scalings(plan),
                plan.logit_scale,
                where,
                device,
                full=True,
            )
            return tuple(rearrange(t, f"s d -> {self.shape}") for t in tables)

        if plan.bundle_size > 1:  # spa: every variant's tables, the first handed on (`spa_attention.py`)
            variants = lambda: tuple(build(where) for where in self.spa_positions(positions, plan))  # noqa: E731
            key = ("spa", sizes, device, plan_key(plan), plan.bundle_size, plan.bundled_axes)
            return register_variants(self, self.cached(key, variants))
        return self.cached((sizes, device, plan_key(plan)), build)

    def spa_positions(self, positions: list[torch.Tensor], plan) -> list[list[torch.Tensor]]:
        """Per variant of `bundle_slides`, the per-axis positions (each (n_a,) float64) with the plan's bundled
        (spatial) axes bundled from their first token; the other axes (time) as `positions` gives them."""
        planned = self.setup.family.planned_axes
        out = []
        for first in bundle_slides(len(plan.bundled_axes), plan.bundle_size):
            where = list(positions)
            for axis, size in zip(plan.bundled_axes, first, strict=True):
                own = where[planned[axis]]
                where[planned[axis]] = bundle_positions(own, float(own[0]), 1.0, size, plan.bundle_size)
            out.append(where)
        return out

    def token_sizes(self, hidden_states: torch.Tensor) -> tuple[int, ...]:
        return tuple(n // p for n, p in zip(hidden_states.shape[2:], self.patch_size, strict=True))

    def within_trained(self, args, kwargs) -> bool:
        sizes = self.token_sizes(args[0] if args else kwargs["hidden_states"])
        return self.within_grid(self.kind.extent(self.setup.config, sizes))

    def fake_tables(self, tensors, ints, device):
        """cos, sin float32 in the family's shape (`LatentGridKind.shape`) for the latent's token grid."""
        latent = tensors[0]
        sizes = self.token_sizes(latent)
        seq, width = math.prod(sizes), sum(self.setup.dims)
        shape = [{"1": 1, "s": seq, "d": width}[axis] for axis in self.shape.split()]
        if self.sample_tables(latent.shape[0], self.kind.extent(self.setup.config, sizes)):
            shape[0] = latent.shape[0]
        return [latent.new_empty(shape, dtype=torch.float32) for _ in range(2)]


# -- families ------------------------------------------------------------------------------------------------


def wan_axes_dims(config) -> tuple[int, int, int]:
    head_dim = int(config["attention_head_dim"])
    spatial = 2 * (head_dim // 6)
    return head_dim - 2 * spatial, spatial, spatial


WAN = Family(
    name="wan",
    title="Wan 2.1 / 2.2",
    classes=("WanTransformer3DModel",),
    kind=LatentGridKind(patch=("patch_size",), shape="1 s 1 d", per_sample=True, spa=True),
    axes=("temporal", "spatial", "spatial"),
    rope_axes=RopeAxes(
        dims=wan_axes_dims, theta=10000.0, theta_source="WanRotaryPosEmbed's default; WanTransformer3DModel passes none"
    ),
    trained=(
        TrainedGrid(
            (31, 22, 40),
            "Wan 2.2 TI2V-5B model card: 121 frames at 704 x 1280 px (24 fps); Wan 2.2 VAE 16x spatial, 4x temporal "
            "((121 - 1) / 4 + 1 = 31 latent frames), patch (1, 2, 2) = 32 px per token",
            pipeline_default=(21, 15, 26),  # WanPipeline's 81 frames at 480 x 832 px through that VAE
            when=(("in_channels", 48),),
            label="Wan 2.2 TI2V-5B, in_channels 48",
        ),
        TrainedGrid(
            (21, 30, 52),
            "Wan 2.1 T2V/I2V (480P), Wan 2.2 A14B: 81 frames at 480 x 832 px (WanPipeline's defaults); VAE 8x "
            "spatial, 4x temporal ((81 - 1) / 4 + 1 = 21 latent frames), patch (1, 2, 2). The 14B models were also "
            "trained at 720 x 1280: pass trained_grid=(21, 45, 80) for those",
        ),
    ),
    time=Timestep(1000.0, "WanPipeline passes sigma * 1000"),
    rope_attr="rope",
    rope_classes=("WanRotaryPosEmbed",),
    pipelines=("WanPipeline", "WanImageToVideoPipeline", "WanVideoToVideoPipeline"),
)

# -- copies of Wan's rope ------------------------------------------------------------------------------------

WAN_VACE = replace(
    WAN,
    name="wan-vace",
    title="Wan VACE",
    classes=("WanVACETransformer3DModel",),
    trained=(
        TrainedGrid(
            (21, 30, 52),
            "Wan2.1-VACE (1.3B at 480P; 14B at 480P and 720P): WanVACEPipeline's defaults, 81 frames at 480 x 832 px, "
            "as Wan 2.1 (VAE 8x spatial, 4x temporal, patch (1, 2, 2)). Each reference image is one more latent frame "
            "before the video on the time axis: with r of them pass trained_grid=(21 + r, 30, 52) to keep them as "
            "trained; the 14B at 720 x 1280 px: (21 + r, 45, 80)",
        ),
    ),
    time=Timestep(1000.0, "WanVACEPipeline passes the scheduler's timesteps, sigma * 1000"),
    pipelines=("WanVACEPipeline",),
)

WAN_ANIMATE = replace(
    WAN,
    name="wan-animate",
    title="Wan Animate",
    classes=("WanAnimateTransformer3DModel",),
    trained=(
        TrainedGrid(
            (21, 45, 80),
            "Wan2.2-Animate-14B: WanAnimatePipeline's defaults, segments of 77 frames at 720 x 1280 px, i.e. 20 latent "
            "frames after the reference image's one (the transformer's hidden_states hold T + 1 frames); VAE 8x "
            "spatial, 4x temporal, patch (1, 2, 2). Longer videos are made segment by segment, each at these positions",
        ),
    ),
    time=Timestep(1000.0, "WanAnimatePipeline passes the scheduler's timesteps, sigma * 1000"),
    pipelines=("WanAnimatePipeline",),
)

SKYREELS_V2 = replace(
    WAN,
    name="skyreels-v2",
    title="SkyReels-V2",
    classes=("SkyReelsV2Transformer3DModel",),
    rope_classes=("SkyReelsV2RotaryPosEmbed",),
    trained=(
        TrainedGrid(
            (25, 34, 60),
            "SkyReels-V2 540P models (1.3B, 14B): the pipelines' defaults, 97 frames at 544 x 960 px; VAE 8x spatial, "
            "4x temporal ((97 - 1) / 4 + 1 = 25 latent frames), patch (1, 2, 2). The 720P models: 121 frames at "
            "720 x 1280 px, pass trained_grid=(31, 45, 80). Diffusion forcing makes long videos in windows of "
            "base_num_frames (97), so one call sees at most 25 latent frames; its per-frame timesteps count by "
            "their largest entry",
        ),
    ),
    time=Timestep(
        1000.0,
        "the SkyReels-V2 pipelines pass the scheduler's timesteps, sigma * 1000 (per frame under diffusion forcing)",
    ),
    pipelines=(
        "SkyReelsV2Pipeline",
        "SkyReelsV2ImageToVideoPipeline",
        "SkyReelsV2DiffusionForcingPipeline",
        "SkyReelsV2DiffusionForcingImageToVideoPipeline",
        "SkyReelsV2DiffusionForcingVideoToVideoPipeline",
    ),
)


def chronoedit_axes_dims(config) -> tuple[int, int, int]:
    """Wan's channels; ChronoEdit's rope splits its table at head_dim // 3 channels per spatial axis,
    which is Wan's 2 (head_dim // 6) only when head_dim % 6 < 3 (128 does)."""
    head_dim = int(config["attention_head_dim"])
    if head_dim // 3 != 2 * (head_dim // 6):
        raise ValueError(
            f"ChronoEdit with attention_head_dim={head_dim}: its rope builds the spatial tables with "
            f"{2 * (head_dim // 6)} channels but reads {head_dim // 3}, mixing axes; not supported"
        )
    return wan_axes_dims(config)


CHRONOEDIT = replace(
    WAN,
    name="chronoedit",
    title="ChronoEdit",
    classes=("ChronoEditTransformer3DModel",),
    kind=LatentGridKind(
        patch=("patch_size",), shape="1 s 1 d", temporal_skip="rope_temporal_skip_len", per_sample=True
    ),
    rope_axes=replace(WAN.rope_axes, dims=chronoedit_axes_dims),
    rope_classes=("ChronoEditRotaryPosEmbed",),
    trained=(
        TrainedGrid(
            (8, 45, 80),
            "ChronoEdit-14B: its authors' inference script (nv-tlabs/ChronoEdit scripts/run_inference_diffusers.py) "
            "edits at an area of 720 x 1280 px (45 x 80 tokens at 16:9: VAE 8x, patch 2), with 29 frames under "
            "temporal reasoning (8 latent frames, its temporal_skip_len) and 5 frames otherwise: 2 latent frames, "
            "the input and the edit, at times 0 and 7, the ends of that span",
            pipeline_default=(2, 30, 52),
        ),
    ),  # ChronoEditPipeline: 480 x 832 px, 5 frames without temporal reasoning
    time=Timestep(1000.0, "ChronoEditPipeline passes the scheduler's timesteps, sigma * 1000"),
    pipelines=("ChronoEditPipeline",),
)

SANA_VIDEO = replace(
    WAN,
    name="sana-video",
    title="Sana-Video",
    classes=("SanaVideoTransformer3DModel",),
    trained=(
        TrainedGrid(
            (21, 30, 52),
            "SANA-Video 2B 480p (the pipeline docstring's Efficient-Large-Model/SANA-Video_2B_480p_diffusers): "
            "SanaVideoPipeline's defaults, 81 frames at 480 x 832 px; Wan 2.1's VAE (8x spatial, 4x temporal), "
            "patch (1, 2, 2)",
        ),
    ),
    time=Timestep(1000.0, "SanaVideoPipeline passes the scheduler's timesteps, sigma * 1000"),
    attention="linear",  # SanaLinearAttnProcessor3_0: ReLU kernels, rotated numerator, unrotated normaliser
    pipelines=("SanaVideoPipeline", "SanaImageToVideoPipeline"),
)


HUNYUAN_VIDEO = Family(
    name="hunyuan-video",
    title="HunyuanVideo",
    classes=("HunyuanVideoTransformer3DModel",),
    kind=LatentGridKind(patch=("patch_size_t", "patch_size", "patch_size"), shape="s d"),
    axes=("temporal", "spatial", "spatial"),
    rope_axes=RopeAxes(dims="rope_axes_dim", theta="rope_theta"),
    trained=(
        TrainedGrid(
            (33, 45, 80),
            "HunyuanVideo: 129 frames at 720 x 1280 px (HunyuanVideoPipeline's defaults, about 5 s at 24 fps); VAE 8x "
            "spatial, 4x temporal ((129 - 1) / 4 + 1 = 33 latent frames), patch 2, temporal patch 1",
        ),
    ),
    time=Timestep(1000.0, "HunyuanVideoPipeline passes sigma * 1000"),
    rope_attr="rope",
    rope_classes=("HunyuanVideoRotaryPosEmbed",),
    # the authors' k is for HunyuanVideo's own temporal frequencies (16 channels, theta 256)
    riflex=(
        RiflexK(
            4, "thu-ml/RIFLEx hunyuanvideo.py (N_k = 50)", when=(("rope_axes_dim", (16, 56, 56)), ("rope_theta", 256.0))
        ),
    ),
    pipelines=("HunyuanVideoPipeline",),
)

# -- copies of HunyuanVideo's rope ---------------------------------------------------------------------------

HUNYUAN_VIDEO_15 = replace(
    HUNYUAN_VIDEO,
    name="hunyuan-video-1.5",
    title="HunyuanVideo 1.5",
    classes=("HunyuanVideo15Transformer3DModel",),
    rope_classes=("HunyuanVideo15RotaryPosEmbed",),
    trained=(
        TrainedGrid(
            (31, 45, 80),
            "HunyuanVideo 1.5 at 720p (a config whose target_size is 960): 121 frames (HunyuanVideo15Pipeline's "
            "default) at 720 x 1280 px, the 16:9 bucket the pipeline picks for that target size; VAE 16x spatial, "
            "4x temporal ((121 - 1) / 4 + 1 = 31 latent frames), patch 1",
            when=(("target_size", 960),),
            label="720p, target_size 960",
        ),
        TrainedGrid(
            (31, 30, 53),
            "HunyuanVideo 1.5 at 480p (target_size 640, the class default and the docstring's 480p_t2v model): "
            "121 frames at 480 x 848 px, the 16:9 bucket HunyuanVideo15Pipeline picks for that target size; VAE "
            "16x spatial, 4x temporal, patch 1",
        ),
    ),
    time=Timestep(1000.0, "HunyuanVideo15Pipeline passes the scheduler's timesteps, sigma * 1000"),
    riflex=(),  # none published: derived (4 at 31 latent frames)
    pipelines=("HunyuanVideo15Pipeline", "HunyuanVideo15ImageToVideoPipeline"),
)

MOTIF_VIDEO = replace(
    HUNYUAN_VIDEO,
    name="motif-video",
    title="Motif-Video",
    classes=("MotifVideoTransformer3DModel",),
    rope_classes=("MotifVideoRotaryPosEmbed",),
    trained=(
        TrainedGrid(
            (31, 46, 80),
            "Motif-Video 2B: 121 frames (5 s at 24 fps) at 736 x 1280 px, its native 720p (MotifVideoPipeline's "
            "defaults and diffusers' Motif-Video docs); Wan's VAE (8x spatial, 4x temporal), patch 2, temporal patch 1",
        ),
    ),
    time=Timestep(1000.0, "MotifVideoPipeline passes the scheduler's timesteps, sigma * 1000"),
    riflex=(),  # none published: derived (4 at 31 latent frames)
    pipelines=("MotifVideoPipeline", "MotifVideoImage2VideoPipeline"),
)


def hunyuan_image_axes_dims(config) -> tuple[int, ...]:
    dims = tuple(config["rope_axes_dim"])
    if len(dims) != 2:
        raise ValueError(
            f"HunyuanImage with {len(dims)} rope axes ({dims}, e.g. its refiner's video-shaped config) "
            "is not declared: only the two-axis text-to-image model is"
        )
    return dims


HUNYUAN_IMAGE = Family(
    name="hunyuan-image",
    title="HunyuanImage",
    classes=("HunyuanImageTransformer2DModel",),
    kind=LatentGridKind(patch=("patch_size",), shape="s d"),
    axes=("spatial", "spatial"),
    rope_axes=RopeAxes(dims=hunyuan_image_axes_dims, theta="rope_theta"),
    trained=(
        TrainedGrid(
            (64, 64),
            "HunyuanImage-2.1: 2048 x 2048 px, its 2K generation (its model card; HunyuanImagePipeline's default, "
            "default_sample_size 64 x VAE 32); VAE 32x, patch 1",
        ),
    ),
    time=Timestep(1000.0, "HunyuanImagePipeline passes the scheduler's timesteps, sigma * 1000"),
    rope_attr="rope",
    rope_classes=("HunyuanImageRotaryPosEmbed",),
    pipelines=("HunyuanImagePipeline",),
)

FAMILIES = (
    WAN,
    WAN_VACE,
    WAN_ANIMATE,
    SKYREELS_V2,
    CHRONOEDIT,
    SANA_VIDEO,
    HUNYUAN_VIDEO,
    HUNYUAN_VIDEO_15,
    MOTIF_VIDEO,
    HUNYUAN_IMAGE,
)

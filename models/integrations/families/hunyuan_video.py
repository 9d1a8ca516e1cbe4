"""Families with HunyuanVideo's grid rope; see `rope_kinds/grid.py`.

HunyuanVideoRotaryPosEmbed: axes (t, y, x) of rope_axes_dim channels, theta rope_theta (256),
positions 0 .. n - 1, tables (seq, sum(dims)). Time: HunyuanVideoPipeline passes sigma * 1000.
RIFLEx (thu-ml/RIFLEx, hunyuanvideo.py, riflex_utils.identify_k): k = 4, N_k = 50 latent frames.

Its copies (the end of this module): HunyuanVideo 1.5 and Motif-Video (the same rope, their own
trained grids; RIFLEx publishes no k for them: the rule derives 4 at their 31 latent frames, as for
HunyuanVideo) and HunyuanImage (two axes, an image model). Framepack's rope takes frame indices:
`framepack.py`.
"""

from __future__ import annotations

from dataclasses import replace

from ..family import Family, RiflexK, RopeAxes, Timestep, TrainedGrid
from ..ropes.wan_hunyuan_video import GridKind

HUNYUAN_VIDEO = Family(
    name="hunyuan-video",
    title="HunyuanVideo",
    classes=("HunyuanVideoTransformer3DModel",),
    kind=GridKind(patch=("patch_size_t", "patch_size", "patch_size"), shape="s d"),
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
    test="test_families.py, test_extrapolation_tables.py",
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
    test="test_families.py, test_video_families.py",
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
    test="test_families.py, test_video_families.py",
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
    kind=GridKind(patch=("patch_size",), shape="s d"),
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
    test="test_families.py, test_video_families.py",
)

FAMILIES = (HUNYUAN_VIDEO, HUNYUAN_VIDEO_15, MOTIF_VIDEO, HUNYUAN_IMAGE)

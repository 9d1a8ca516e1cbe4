"""Families with HunyuanVideo's grid rope; see `rope_kinds/grid.py`.

HunyuanVideoRotaryPosEmbed: axes (t, y, x) of rope_axes_dim channels, theta rope_theta (256),
positions 0 .. n - 1, tables (seq, sum(dims)). Time: HunyuanVideoPipeline passes sigma * 1000.
RIFLEx (thu-ml/RIFLEx, hunyuanvideo.py, riflex_utils.identify_k): k = 4, N_k = 50 latent frames.
"""

from __future__ import annotations

from ..family import Family, RiflexK, RopeAxes, Timestep, TrainedGrid
from ..rope_kinds.grid import GridKind

HUNYUAN_VIDEO = Family(
    name="hunyuan-video",
    title="HunyuanVideo",
    classes=("HunyuanVideoTransformer3DModel",),
    kind=GridKind(patch=("patch_size_t", "patch_size", "patch_size"), shape="s d"),
    axes=("temporal", "spatial", "spatial"),
    rope_axes=RopeAxes(dims="rope_axes_dim", theta="rope_theta"),
    trained=(TrainedGrid(
        (33, 45, 80),
        "HunyuanVideo: 129 frames at 720 x 1280 px (HunyuanVideoPipeline's defaults, about 5 s at 24 fps); VAE 8x "
        "spatial, 4x temporal ((129 - 1) / 4 + 1 = 33 latent frames), patch 2, temporal patch 1"),),
    time=Timestep(1000.0, "HunyuanVideoPipeline passes sigma * 1000"),
    rope_attr="rope",
    rope_classes=("HunyuanVideoRotaryPosEmbed",),
    # the authors' k is for HunyuanVideo's own temporal frequencies (16 channels, theta 256)
    riflex=(RiflexK(4, "thu-ml/RIFLEx hunyuanvideo.py (N_k = 50)",
                    when=(("rope_axes_dim", (16, 56, 56)), ("rope_theta", 256.0))),),
    pipelines=("HunyuanVideoPipeline",),
    test="test_families.py, test_extrapolation_tables.py",
)

FAMILIES = (HUNYUAN_VIDEO,)

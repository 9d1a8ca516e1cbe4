"""Framepack, HunyuanVideo's rope placed by frame indices; see `rope_kinds/frame_indices.py`.

HunyuanVideoFramepackRotaryPosEmbed: axes (t, y, x) of rope_axes_dim channels, theta rope_theta
(256), as HunyuanVideo. The time axis is an index axis kept as trained: the pipeline packs the frames
being made, the clean context and the 2x and 4x history into indices below 1 + 3 w + w + 19 (56 at
its default window of w = 9 latent frames; its latent paddings are at most 3 windows), however long
the video. So riflex does not apply;
the other methods act on height and width. Time: HunyuanVideoFramepackPipeline passes the
scheduler's timesteps, sigma * 1000.
"""

from __future__ import annotations

from ..family import Family, RopeAxes, Timestep, TrainedGrid
from ..ropes.framepack import FrameIndicesKind

FRAMEPACK = Family(
    name="framepack",
    title="Framepack",
    classes=("HunyuanVideoFramepackTransformer3DModel",),
    kind=FrameIndicesKind(patch="patch_size"),
    axes=("reference", "spatial", "spatial"),
    rope_axes=RopeAxes(dims="rope_axes_dim", theta="rope_theta"),
    trained=(
        TrainedGrid(
            (40, 40),
            "FramePack: its demo (lllyasviel/FramePack demo_gradio.py) resizes every input to the nearest of its 640 "
            "resolution buckets (find_nearest_bucket(H, W, resolution=640)), about 640 x 640 px of area from 416 x 960 "
            "to 960 x 416 px; 640 x 640 px is 40 x 40 tokens (VAE 8x, 2x2 patches). A non-square bucket passes "
            "its own, "
            "e.g. trained_grid=(26, 60) for 416 x 960 px",
            pipeline_default=(45, 80),
        ),
    ),  # HunyuanVideoFramepackPipeline: 720 x 1280 px
    time=Timestep(1000.0, "HunyuanVideoFramepackPipeline passes the scheduler's timesteps, sigma * 1000"),
    rope_attr="rope",
    rope_classes=("HunyuanVideoFramepackRotaryPosEmbed",),
    pipelines=("HunyuanVideoFramepackPipeline",),
    test="test_families.py, test_video_families.py",
    makes_video=True,
    no_time_axis="places its frames at indices its pipeline packs into a fixed span, whatever the video's length",
)

FAMILIES = (FRAMEPACK,)

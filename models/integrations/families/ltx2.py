"""LTX-2, its video rope extrapolated in time, height and width; see `rope_kinds/ltx2.py`.

The video rope's t, y and x take the method (riflex on t, its k derived: none is published). The
audio rope and the two cross-attention ropes stay as trained: the audio's positions are its own
latent frames in seconds, and the cross-attention ropes rotate video queries and audio keys by
their times in seconds, so that a video frame and the audio at the same second line up; changing
the video's side alone would shift that alignment, and changing both would extrapolate the audio,
which is left as trained. Time: LTX2Pipeline passes the scheduler's timesteps, sigma * 1000 (and
the same as `sigma`).
"""

from __future__ import annotations

from ..family import Family, RopeAxes, Timestep, TrainedGrid
from ..ropes.ltx2 import LTX2Kind, ltx2_pairs


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
    test="test_families.py, test_ltx2.py",
)

FAMILIES = (LTX2,)

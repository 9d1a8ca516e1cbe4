"""LTX-2, its video rope extrapolated in height and width; see `rope_kinds/ltx2.py`.

The video rope's y and x take the method. Its time axis, and the audio rope and the two
cross-attention ropes (which carry time only), stay as trained: a longer video is not extrapolated
here (riflex does not apply), a larger one is. Time: LTX2Pipeline passes the scheduler's timesteps,
sigma * 1000 (and the same as `sigma`).
"""

from __future__ import annotations

from ..family import Family, RopeAxes, Timestep, TrainedGrid
from ..rope_kinds.ltx2 import LTX2Kind, ltx2_pairs


def ltx2_axes_dims(config) -> tuple[int, int, int]:
    return (2 * ltx2_pairs(config),) * 3


LTX2 = Family(
    name="ltx2",
    title="LTX-2",
    classes=("LTX2VideoTransformer3DModel",),
    kind=LTX2Kind(),
    axes=("reference", "spatial", "spatial"),
    rope_axes=RopeAxes(dims=ltx2_axes_dims, theta="rope_theta"),
    trained=(TrainedGrid(
        (16, 24),
        "LTX-2: LTX2Pipeline's default, 512 x 768 px (the model card was not read); VAE 32x spatial, patch 1. "
        "Its two-stage recipe refines at twice that after LTX2LatentUpsamplePipeline: pass trained_grid=(32, 48) "
        "for the second stage"),),
    time=Timestep(1000.0, "LTX2Pipeline passes the scheduler's timesteps, sigma * 1000"),
    rope_attr="rope",
    rope_classes=("LTX2AudioVideoRotaryPosEmbed",),
    pipelines=("LTX2Pipeline", "LTX2ImageToVideoPipeline", "LTX2ConditionPipeline"),
    makes_video=True,
    no_time_axis="keeps its time axis, and its audio and cross-attention ropes, as trained",
)

FAMILIES = (LTX2,)

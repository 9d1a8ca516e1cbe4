"""Families with LTX-Video's rope; see `rope_kinds/ltx.py`.

Time: LTXPipeline passes sigma * 1000. RIFLEx publishes no k for LTX-Video: it is derived at
LTXPipeline's default time spacing (VAE 8 frames over 25 fps). The rope's dims are the inner
dimension's thirds, read by the kind from num_attention_heads x attention_head_dim.
"""

from __future__ import annotations

from ..family import Family, RopeAxes, Timestep, TrainedGrid
from ..ropes.ltx_video import LTXKind


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
    test="test_families.py, test_extrapolation_tables.py",
)

FAMILIES = (LTX_VIDEO,)

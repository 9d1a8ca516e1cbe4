"""Families with Wan's grid rope; see `rope_kinds/grid.py`.

WanRotaryPosEmbed gives the time axis head_dim - 4 (head_dim // 6) channels and y, x 2 (head_dim // 6)
each, theta 10000 (its default; WanTransformer3DModel passes none). Time: WanPipeline passes the
scheduler's timesteps, sigma * 1000; Wan 2.2's per-token timesteps count by their largest entry.
RIFLEx publishes no k for Wan: k is derived (4 for head_dim 128; RIFLEx's identify_k at the
trained 21 latent frames gives the same).
"""

from __future__ import annotations

from ..family import Family, RopeAxes, Timestep, TrainedGrid
from ..rope_kinds.grid import GridKind


def wan_axes_dims(config) -> tuple[int, int, int]:
    head_dim = int(config["attention_head_dim"])
    spatial = 2 * (head_dim // 6)
    return head_dim - 2 * spatial, spatial, spatial


WAN = Family(
    name="wan",
    title="Wan 2.1 / 2.2",
    classes=("WanTransformer3DModel",),
    kind=GridKind(patch=("patch_size",), shape="1 s 1 d"),
    axes=("temporal", "spatial", "spatial"),
    rope_axes=RopeAxes(dims=wan_axes_dims, theta=10000.0,
                       theta_source="WanRotaryPosEmbed's default; WanTransformer3DModel passes none"),
    trained=(
        TrainedGrid(
            (31, 22, 40),
            "Wan 2.2 TI2V-5B model card: 121 frames at 704 x 1280 px (24 fps); Wan 2.2 VAE 16x spatial, 4x temporal "
            "((121 - 1) / 4 + 1 = 31 latent frames), patch (1, 2, 2) = 32 px per token",
            pipeline_default=(21, 15, 26),  # WanPipeline's 81 frames at 480 x 832 px through that VAE
            when=(("in_channels", 48),), label="Wan 2.2 TI2V-5B, in_channels 48"),
        TrainedGrid(
            (21, 30, 52),
            "Wan 2.1 T2V/I2V (480P), Wan 2.2 A14B: 81 frames at 480 x 832 px (WanPipeline's defaults); VAE 8x "
            "spatial, 4x temporal ((81 - 1) / 4 + 1 = 21 latent frames), patch (1, 2, 2). The 14B models were also "
            "trained at 720 x 1280: pass trained_grid=(21, 45, 80) for those"),
    ),
    time=Timestep(1000.0, "WanPipeline passes sigma * 1000"),
    rope_attr="rope",
    rope_classes=("WanRotaryPosEmbed",),
    pipelines=("WanPipeline", "WanImageToVideoPipeline", "WanVideoToVideoPipeline"),
    test="test_families.py, test_pipelines.py, test_model_settings.py, test_context_parallel.py",
)

FAMILIES = (WAN,)

"""SANA-WM, a camera-controlled world model with a complex grid rope; see `rope_kinds/sana_wm.py`.

The rope's dims split linear_head_dim as Wan's do, theta 10000 (SanaWMRotaryPosEmbed's default;
the model passes none). Its blocks are Gated DeltaNet linear attentions with a softmax attention
every softmax_every_n blocks: declared linear, so methods with a gain and entropy scaling are
refused. Time: SanaWMPipeline passes the scheduler's timesteps, sigma * 1000, per frame (B, 1, T),
conditioning frames at 0; the largest entry counts.
"""

from __future__ import annotations

from ..family import Family, RopeAxes, Timestep, TrainedGrid
from ..ropes.sana_wm import SanaWMKind


def sana_wm_axes_dims(config) -> tuple[int, int, int]:
    head_dim = int(config["linear_head_dim"])
    spatial = 2 * (head_dim // 6)
    return head_dim - 2 * spatial, spatial, spatial


SANA_WM = Family(
    name="sana-wm",
    title="SANA-WM",
    classes=("SanaWMTransformer3DModel",),
    kind=SanaWMKind(),
    axes=("temporal", "spatial", "spatial"),
    rope_axes=RopeAxes(
        dims=sana_wm_axes_dims,
        theta=10000.0,
        theta_source="SanaWMRotaryPosEmbed's default; SanaWMTransformer3DModel passes none",
    ),
    trained=(
        TrainedGrid(
            (21, 22, 40),
            "SANA-WM bidirectional (Efficient-Large-Model/SANA-WM_bidirectional, named in the class docstring; the "
            "model card was not read): SanaWMPipeline's defaults, 161 frames at 704 x 1280 px; the LTX-2 VAE (32x "
            "spatial, 8x temporal: (161 - 1) / 8 + 1 = 21 latent frames), patch (1, 1, 1)",
        ),
    ),
    time=Timestep(1000.0, "SanaWMPipeline passes the scheduler's timesteps, sigma * 1000, per frame"),
    rope_attr="rope",
    rope_classes=("SanaWMRotaryPosEmbed",),
    pipelines=("SanaWMPipeline",),
    attention="linear",
)

FAMILIES = (SANA_WM,)

"""AnyFlow's families (Wan 2.1 distilled to flow maps); see `rope_kinds/anyflow.py`.

AnyFlowRotaryPosEmbed and the causal AnyFlowCausalRotaryPosEmbed (FAR) give Wan's channels per axis
(time head_dim - 4 (head_dim // 6), y and x 2 (head_dim // 6) each), theta 10000 (their default; the
transformers pass none), as complex tables. FAR's positions arrive as the layout of the whole video
(total_frames is the sum of chunk_partition at every chunk's step), so its plan is the whole video's.
Time: the AnyFlow pipelines pass the scheduler's timesteps, sigma * 1000, per frame (0 on given
context frames): the largest entry counts. RIFLEx publishes no k: derived (4 at 21 latent frames).
"""

from __future__ import annotations

from dataclasses import replace

from ..family import Family, RopeAxes, Timestep, TrainedGrid
from ..ropes.anyflow import AnyFlowKind
from .wan import wan_axes_dims

ANYFLOW = Family(
    name="anyflow",
    title="AnyFlow",
    classes=("AnyFlowTransformer3DModel",),
    kind=AnyFlowKind(causal=False),
    axes=("temporal", "spatial", "spatial"),
    rope_axes=RopeAxes(
        dims=wan_axes_dims,
        theta=10000.0,
        theta_source="AnyFlowRotaryPosEmbed's default; AnyFlowTransformer3DModel passes none",
    ),
    trained=(
        TrainedGrid(
            (21, 30, 52),
            "AnyFlow-Wan2.1-T2V-14B (distilled from Wan 2.1 T2V 14B): AnyFlowPipeline's defaults, 81 frames at "
            "480 x 832 "
            "px; VAE 8x spatial, 4x temporal, patch (1, 2, 2)",
        ),
    ),
    time=Timestep(1000.0, "AnyFlowPipeline passes the scheduler's timesteps, sigma * 1000, per frame"),
    rope_attr="rope",
    rope_classes=("AnyFlowRotaryPosEmbed",),
    pipelines=("AnyFlowPipeline",),
    test="test_families.py, test_video_families.py",
)

ANYFLOW_FAR = replace(
    ANYFLOW,
    name="anyflow-far",
    title="AnyFlow-FAR",
    classes=("AnyFlowFARTransformer3DModel",),
    kind=AnyFlowKind(causal=True),
    rope_axes=replace(
        ANYFLOW.rope_axes,
        theta_source="AnyFlowCausalRotaryPosEmbed's default; AnyFlowFARTransformer3DModel passes none",
    ),
    trained=(
        TrainedGrid(
            (21, 30, 52),
            "AnyFlow-FAR: its released checkpoints target 81 frames (21 latent frames, chunk_partition 1 + 3 x 6 + 2, "
            "the transformer's docstring) at 480 x 832 px (AnyFlowFARPipeline's defaults; 60 x 104 latents, the "
            "rope's comment); VAE 8x spatial, 4x temporal, patch (1, 2, 2)",
        ),
    ),
    time=Timestep(1000.0, "AnyFlowFARPipeline passes the scheduler's timesteps, sigma * 1000, per frame"),
    rope_classes=("AnyFlowCausalRotaryPosEmbed",),
    pipelines=("AnyFlowFARPipeline",),
)

FAMILIES = (ANYFLOW, ANYFLOW_FAR)

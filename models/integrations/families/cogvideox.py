"""Families whose pipeline builds the rope tables (CogVideoX); see `rope_kinds/pipeline_tables.py`.

diffusers' get_3d_rotary_pos_embed: axes (t, y, x) of head_dim / 4, 3 head_dim / 8, 3 head_dim / 8
channels, theta 10000. Time: CogVideoXPipeline passes DDIM/DPM steps 0 .. 999. RIFLEx
(thu-ml/RIFLEx, cogvideox.py): k = 2, N_k = 20 for CogVideoX-5B; their CogVideoX 1.5 branch
passes no k, so riflex leaves 1.5's table as trained unless `riflex_index` is given.
CogVideoX-2b (absolute positions) has no rope and is refused.
"""

from __future__ import annotations

from ..family import Family, RiflexK, RopeAxes, Timestep, TrainedGrid
from ..ropes.cogvideox import PipelineTablesKind


def cogvideox_axes_dims(config) -> tuple[int, int, int]:
    head_dim = int(config["attention_head_dim"])
    return head_dim // 4, head_dim // 8 * 3, head_dim // 8 * 3


COGVIDEOX = Family(
    name="cogvideox",
    title="CogVideoX 1.0 / 1.5",
    classes=("CogVideoXTransformer3DModel",),
    kind=PipelineTablesKind(argument="image_rotary_emb"),
    axes=("temporal", "spatial", "spatial"),
    rope_axes=RopeAxes(
        dims=cogvideox_axes_dims,
        theta=10000.0,
        theta_source="get_3d_rotary_pos_embed's default, which CogVideoXPipeline uses",
    ),
    trained=(
        TrainedGrid(
            (11, 48, 85),
            "CogVideoX1.5-5B model card: 81 frames (5 s at 16 fps) at 768 x 1360 px; VAE 8x spatial, 4x temporal "
            "(21 latent frames, padded to 22 by CogVideoXPipeline), patch 2, temporal patch 2",
            pipeline_default=(7, 48, 85),  # CogVideoXPipeline's 49 frames at the config's sample size
            when=(("patch_size_t", 2),),
            label="CogVideoX 1.5, patch_size_t 2",
        ),
        TrainedGrid(
            (13, 30, 45),
            "CogVideoX-5B (1.0): 49 frames (6 s at 8 fps) at 480 x 720 px; the transformer's own config says so "
            "(sample_frames 49, sample_height 60, sample_width 90 latent pixels); VAE 8x spatial, 4x temporal "
            "(13 latent frames), patch 2",
        ),
    ),
    time=Timestep(1000.0, "CogVideoXPipeline passes DDIM/DPM steps 0 .. 999"),
    riflex=(
        RiflexK(2, "thu-ml/RIFLEx cogvideox.py (N_k = 20)", when=(("patch_size_t", None), ("attention_head_dim", 64))),
        RiflexK(None, "thu-ml/RIFLEx cogvideox.py: its CogVideoX 1.5 branch passes no k", when=(("patch_size_t", 2),)),
    ),
    requires=(("use_rotary_positional_embeddings", True),),
    requires_reason="this CogVideoX uses absolute positions (use_rotary_positional_embeddings=False, e.g. "
    "CogVideoX-2b): there is no RoPE to extrapolate",
    pipelines=("CogVideoXPipeline", "CogVideoXImageToVideoPipeline", "CogVideoXVideoToVideoPipeline"),
    test="test_families.py, test_cogvideox.py",
)

FAMILIES = (COGVIDEOX,)

"""Families with Wan's grid rope; see `rope_kinds/grid.py`.

WanRotaryPosEmbed gives the time axis head_dim - 4 (head_dim // 6) channels and y, x 2 (head_dim // 6)
each, theta 10000 (its default; WanTransformer3DModel passes none). Time: WanPipeline passes the
scheduler's timesteps, sigma * 1000; Wan 2.2's per-token timesteps count by their largest entry.
RIFLEx publishes no k for Wan: k is derived (4 for head_dim 128; RIFLEx's identify_k at the
trained 21 latent frames gives the same).

Its copies (the end of this module) keep the rope and change the trained grid: Wan VACE, Wan
Animate, SkyReels-V2, ChronoEdit (two-frame edits at times 0 and temporal_skip_len - 1) and
Sana-Video (a linear attention). RIFLEx publishes no k for any of them: each is derived by the same
rule at its trained length (head_dim 128: Wan VACE and Wan Animate 4, SkyReels-V2 5, ChronoEdit 2;
Sana-Video's head_dim 112: 4).
"""

from __future__ import annotations

from dataclasses import replace

from ..family import Family, RopeAxes, Timestep, TrainedGrid
from ..ropes.wan_hunyuan_video import GridKind


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
    rope_axes=RopeAxes(
        dims=wan_axes_dims, theta=10000.0, theta_source="WanRotaryPosEmbed's default; WanTransformer3DModel passes none"
    ),
    trained=(
        TrainedGrid(
            (31, 22, 40),
            "Wan 2.2 TI2V-5B model card: 121 frames at 704 x 1280 px (24 fps); Wan 2.2 VAE 16x spatial, 4x temporal "
            "((121 - 1) / 4 + 1 = 31 latent frames), patch (1, 2, 2) = 32 px per token",
            pipeline_default=(21, 15, 26),  # WanPipeline's 81 frames at 480 x 832 px through that VAE
            when=(("in_channels", 48),),
            label="Wan 2.2 TI2V-5B, in_channels 48",
        ),
        TrainedGrid(
            (21, 30, 52),
            "Wan 2.1 T2V/I2V (480P), Wan 2.2 A14B: 81 frames at 480 x 832 px (WanPipeline's defaults); VAE 8x "
            "spatial, 4x temporal ((81 - 1) / 4 + 1 = 21 latent frames), patch (1, 2, 2). The 14B models were also "
            "trained at 720 x 1280: pass trained_grid=(21, 45, 80) for those",
        ),
    ),
    time=Timestep(1000.0, "WanPipeline passes sigma * 1000"),
    rope_attr="rope",
    rope_classes=("WanRotaryPosEmbed",),
    pipelines=("WanPipeline", "WanImageToVideoPipeline", "WanVideoToVideoPipeline"),
    test="test_families.py, test_pipelines.py, test_model_settings.py, test_context_parallel.py",
)

# -- copies of Wan's rope ------------------------------------------------------------------------------------

WAN_VACE = replace(
    WAN,
    name="wan-vace",
    title="Wan VACE",
    classes=("WanVACETransformer3DModel",),
    trained=(
        TrainedGrid(
            (21, 30, 52),
            "Wan2.1-VACE (1.3B at 480P; 14B at 480P and 720P): WanVACEPipeline's defaults, 81 frames at 480 x 832 px, "
            "as Wan 2.1 (VAE 8x spatial, 4x temporal, patch (1, 2, 2)). Each reference image is one more latent frame "
            "before the video on the time axis: with r of them pass trained_grid=(21 + r, 30, 52) to keep them as "
            "trained; the 14B at 720 x 1280 px: (21 + r, 45, 80)",
        ),
    ),
    time=Timestep(1000.0, "WanVACEPipeline passes the scheduler's timesteps, sigma * 1000"),
    pipelines=("WanVACEPipeline",),
    test="test_families.py, test_video_families.py",
)

WAN_ANIMATE = replace(
    WAN,
    name="wan-animate",
    title="Wan Animate",
    classes=("WanAnimateTransformer3DModel",),
    trained=(
        TrainedGrid(
            (21, 45, 80),
            "Wan2.2-Animate-14B: WanAnimatePipeline's defaults, segments of 77 frames at 720 x 1280 px, i.e. 20 latent "
            "frames after the reference image's one (the transformer's hidden_states hold T + 1 frames); VAE 8x "
            "spatial, 4x temporal, patch (1, 2, 2). Longer videos are made segment by segment, each at these positions",
        ),
    ),
    time=Timestep(1000.0, "WanAnimatePipeline passes the scheduler's timesteps, sigma * 1000"),
    pipelines=("WanAnimatePipeline",),
    test="test_families.py, test_video_families.py",
)

SKYREELS_V2 = replace(
    WAN,
    name="skyreels-v2",
    title="SkyReels-V2",
    classes=("SkyReelsV2Transformer3DModel",),
    rope_classes=("SkyReelsV2RotaryPosEmbed",),
    trained=(
        TrainedGrid(
            (25, 34, 60),
            "SkyReels-V2 540P models (1.3B, 14B): the pipelines' defaults, 97 frames at 544 x 960 px; VAE 8x spatial, "
            "4x temporal ((97 - 1) / 4 + 1 = 25 latent frames), patch (1, 2, 2). The 720P models: 121 frames at "
            "720 x 1280 px, pass trained_grid=(31, 45, 80). Diffusion forcing makes long videos in windows of "
            "base_num_frames (97), so one call sees at most 25 latent frames; its per-frame timesteps count by "
            "their largest entry",
        ),
    ),
    time=Timestep(
        1000.0,
        "the SkyReels-V2 pipelines pass the scheduler's timesteps, sigma * 1000 (per frame under diffusion forcing)",
    ),
    pipelines=(
        "SkyReelsV2Pipeline",
        "SkyReelsV2ImageToVideoPipeline",
        "SkyReelsV2DiffusionForcingPipeline",
        "SkyReelsV2DiffusionForcingImageToVideoPipeline",
        "SkyReelsV2DiffusionForcingVideoToVideoPipeline",
    ),
    test="test_families.py, test_video_families.py",
)


def chronoedit_axes_dims(config) -> tuple[int, int, int]:
    """Wan's channels; ChronoEdit's rope splits its table at head_dim // 3 channels per spatial axis,
    which is Wan's 2 (head_dim // 6) only when head_dim % 6 < 3 (128 does)."""
    head_dim = int(config["attention_head_dim"])
    if head_dim // 3 != 2 * (head_dim // 6):
        raise ValueError(
            f"ChronoEdit with attention_head_dim={head_dim}: its rope builds the spatial tables with "
            f"{2 * (head_dim // 6)} channels but reads {head_dim // 3}, mixing axes; not supported"
        )
    return wan_axes_dims(config)


CHRONOEDIT = replace(
    WAN,
    name="chronoedit",
    title="ChronoEdit",
    classes=("ChronoEditTransformer3DModel",),
    kind=GridKind(patch=("patch_size",), shape="1 s 1 d", temporal_skip="rope_temporal_skip_len"),
    rope_axes=replace(WAN.rope_axes, dims=chronoedit_axes_dims),
    rope_classes=("ChronoEditRotaryPosEmbed",),
    trained=(
        TrainedGrid(
            (8, 45, 80),
            "ChronoEdit-14B: its authors' inference script (nv-tlabs/ChronoEdit scripts/run_inference_diffusers.py) "
            "edits at an area of 720 x 1280 px (45 x 80 tokens at 16:9: VAE 8x, patch 2), with 29 frames under "
            "temporal reasoning (8 latent frames, its temporal_skip_len) and 5 frames otherwise: 2 latent frames, "
            "the input and the edit, at times 0 and 7, the ends of that span",
            pipeline_default=(2, 30, 52),
        ),
    ),  # ChronoEditPipeline: 480 x 832 px, 5 frames without temporal reasoning
    time=Timestep(1000.0, "ChronoEditPipeline passes the scheduler's timesteps, sigma * 1000"),
    pipelines=("ChronoEditPipeline",),
    test="test_families.py, test_video_families.py, test_context_parallel.py",
)

SANA_VIDEO = replace(
    WAN,
    name="sana-video",
    title="Sana-Video",
    classes=("SanaVideoTransformer3DModel",),
    trained=(
        TrainedGrid(
            (21, 30, 52),
            "SANA-Video 2B 480p (the pipeline docstring's Efficient-Large-Model/SANA-Video_2B_480p_diffusers): "
            "SanaVideoPipeline's defaults, 81 frames at 480 x 832 px; Wan 2.1's VAE (8x spatial, 4x temporal), "
            "patch (1, 2, 2)",
        ),
    ),
    time=Timestep(1000.0, "SanaVideoPipeline passes the scheduler's timesteps, sigma * 1000"),
    attention="linear",  # SanaLinearAttnProcessor3_0: ReLU kernels, rotated numerator, unrotated normaliser
    pipelines=("SanaVideoPipeline", "SanaImageToVideoPipeline"),
    test="test_families.py, test_video_families.py",
)

FAMILIES = (WAN, WAN_VACE, WAN_ANIMATE, SKYREELS_V2, CHRONOEDIT, SANA_VIDEO)

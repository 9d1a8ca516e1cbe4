"""Families whose positions are fitted into a fixed extent; see `rope_kinds/fitted.py`.

HunyuanDiT: its pipelines (HunyuanDiTPipeline, HunyuanDiTControlNetPipeline, HunyuanDiTPAGPipeline)
fit the token grid into a square of 512 / 8 / patch tokens (the longer side spans it, the shorter
one is centred; diffusers' `get_resize_crop_region_for_grid`) and pass `get_2d_rotary_pos_embed`'s
(cos, sin) (seq, head_dim) as `image_rotary_emb`: two axes of head_dim / 2 channels, theta 10000,
each pair twice, the x block first. Time: the pipelines pass DDPM steps 0 .. 999. Its ControlNet
takes the same table and is patched with the transformer when a pipeline is passed. Since the pipeline
already squeezes a bigger grid into its box, "none" is that squeeze and "pi" at the trained spacing
equals it on square grids (to float rounding); the other methods differ from it.

EasyAnimate: its rope module (`rope_embedding`, called with the latent (b, c, frames, h, w)) fits
the grid into a box of 60 x 90 latent pixels (480 x 720 px) the same way and returns CogVideoX's
format, `get_3d_rotary_pos_embed`'s (cos, sin) (seq, head_dim): axes (t, y, x) of head_dim / 4,
3 head_dim / 8, 3 head_dim / 8, theta 10000, frames at 0 .. T - 1. Time: its pipelines pass the
flow-matching scheduler's timesteps, sigma * 1000.

CogView4: its rope module (`rope`, called with the latent (b, c, h, w)) places token i of n at
i * R // n of R = rope_axes_dim positions per axis (a bigger grid, denser positions over the same R);
GLM-Image's places it at i. Both: axes (y, x) of head_dim / 2 channels, theta 10000, the half-width
table twice ("halves"). Time: their pipelines pass the flow-matching scheduler's timesteps (sigma *
1000; GLM-Image's minus 1).
"""

from __future__ import annotations

from dataclasses import replace

import torch

from ..family import Family, RopeAxes, Timestep, TrainedGrid
from ..ropes.fitted import FittedKind


def centred_fit(grid: tuple[int, int], box: tuple[int, int]) -> tuple[tuple[int, int], tuple[int, int]]:
    """((top, left), (bottom, right)) of a grid resized to fit `box` (th, tw) with its aspect ratio kept and
    centred, rounded as diffusers' `get_resize_crop_region_for_grid` rounds (Python's round)."""
    (h, w), (th, tw) = grid, box
    if h / w > th / tw:
        size = th, int(round(th / h * w))
    else:
        size = int(round(tw / w * h)), tw
    top, left = int(round((th - size[0]) / 2.0)), int(round((tw - size[1]) / 2.0))
    return (top, left), (top + size[0], left + size[1])


def linspace_positions(start: float, stop: float, n: int) -> torch.Tensor:
    """diffusers' positions of n tokens of a crop from `start` to `stop`: linspace(start, stop (n - 1) / n, n),
    float64."""
    return torch.linspace(start, stop * (n - 1) / n, n, dtype=torch.float64)


def hunyuan_dit_positions(config, grid) -> list[torch.Tensor]:
    """(y, x) positions of HunyuanDiT's pipelines for a token grid (h, w)."""
    base = 512 // 8 // config["patch_size"]
    start, stop = centred_fit(tuple(grid), (base, base))
    return [linspace_positions(start[a], stop[a], n) for a, n in enumerate(grid)]


def latent_grid(config, hidden_states: torch.Tensor) -> tuple[int, int]:
    """The token grid of a latent (b, c, h, w) in patches of `patch_size`."""
    p = config["patch_size"]
    return hidden_states.shape[-2] // p, hidden_states.shape[-1] // p


def hunyuan_dit_dims(config) -> tuple[int, int]:
    half = int(config["attention_head_dim"]) // 2
    return half, half


HUNYUAN_DIT = Family(
    name="hunyuan-dit",
    title="HunyuanDiT",
    classes=("HunyuanDiT2DModel",),
    kind=FittedKind(positions=hunyuan_dit_positions, grid=latent_grid, argument="image_rotary_emb", columns=(1, 0)),
    axes=("spatial", "spatial"),
    rope_axes=RopeAxes(
        dims=hunyuan_dit_dims,
        theta=10000.0,
        theta_source="get_2d_rotary_pos_embed's default, which the HunyuanDiT pipelines use",
    ),
    trained=(
        TrainedGrid(
            (80, 80),
            "HunyuanDiTPipeline's resolution binning (SUPPORTED_SHAPE, the sizes it maps every request to): from "
            "768 to 1280 px a side, 1280 x 1280 px the largest; VAE 8x, patch 2; the model card was not read",
            pipeline_default=(64, 64),
        ),
    ),  # default_sample_size 128 latent pixels: 1024 x 1024 px
    time=Timestep(1000.0, "the HunyuanDiT pipelines pass DDPM steps 0 .. 999"),
    pipelines=("HunyuanDiTPipeline", "HunyuanDiTPAGPipeline", "HunyuanDiTControlNetPipeline"),
    test="test_families.py, test_fitted.py",
)


def easyanimate_positions(config, grid) -> list[torch.Tensor]:
    """(t, y, x) positions of EasyAnimate's rope for a token grid (frames, h, w)."""
    p = config["patch_size"]
    frames, height, width = grid
    start, stop = centred_fit((height, width), (60 // p, 90 // p))
    return [
        linspace_positions(0, frames, frames),
        linspace_positions(start[0], stop[0], height),
        linspace_positions(start[1], stop[1], width),
    ]


def easyanimate_grid(config, hidden_states: torch.Tensor) -> tuple[int, int, int]:
    """The token grid of a latent (b, c, frames, h, w): frames as they are, h and w in patches."""
    return (hidden_states.shape[2], *latent_grid(config, hidden_states))


def easyanimate_dims(config) -> tuple[int, int, int]:
    head_dim = int(config["attention_head_dim"])
    return head_dim // 4, head_dim // 8 * 3, head_dim // 8 * 3


EASYANIMATE = Family(
    name="easyanimate",
    title="EasyAnimate",
    classes=("EasyAnimateTransformer3DModel",),
    kind=FittedKind(positions=easyanimate_positions, grid=easyanimate_grid),
    axes=("temporal", "spatial", "spatial"),
    rope_axes=RopeAxes(
        dims=easyanimate_dims,
        theta=10000.0,
        theta_source="get_3d_rotary_pos_embed's default, which EasyAnimateRotaryPosEmbed uses",
    ),
    trained=(
        TrainedGrid(
            (13, 64, 64),
            "EasyAnimate V5: 49 frames (6 s at 8 fps) at up to 1024 x 1024 px, as third-party pages on V5 report (the "
            "model card was not read); VAE 8x spatial, 4x temporal (13 latent frames), patch 2",
            pipeline_default=(13, 32, 32),
        ),
    ),  # EasyAnimatePipeline: 49 frames at 512 x 512 px
    time=Timestep(1000.0, "the EasyAnimate pipelines pass the flow-matching scheduler's timesteps, sigma * 1000"),
    rope_attr="rope_embedding",
    rope_classes=("EasyAnimateRotaryPosEmbed",),
    pipelines=("EasyAnimatePipeline", "EasyAnimateInpaintPipeline", "EasyAnimateControlPipeline"),
)


def cogview4_positions(config, grid) -> list[torch.Tensor]:
    """(y, x) positions of CogView4's rope for a token grid (h, w): i * R // n, R = rope_axes_dim."""
    return [(torch.arange(n) * extent // n).double() for n, extent in zip(grid, config["rope_axes_dim"], strict=True)]


def token_indices(config, grid) -> list[torch.Tensor]:
    """Positions 0 .. n - 1 per axis (GLM-Image)."""
    return [torch.arange(n, dtype=torch.float64) for n in grid]


COGVIEW4 = Family(
    name="cogview4",
    title="CogView4",
    classes=("CogView4Transformer2DModel",),
    kind=FittedKind(positions=cogview4_positions, grid=latent_grid, layout="halves"),
    axes=("spatial", "spatial"),
    rope_axes=RopeAxes(
        dims=hunyuan_dit_dims,
        theta=10000.0,
        theta_source="CogView4Transformer2DModel builds its CogView4RotaryPosEmbed with theta=10000.0",
    ),
    trained=(
        TrainedGrid(
            (128, 128),
            "CogView4-6B's stated range, 512 to 2048 px a side, recalled from its release (the model card was not read "
            "here); VAE 8x, patch 2",
            pipeline_default=(64, 64),
        ),
    ),  # sample_size 128 latent pixels: 1024 x 1024 px
    time=Timestep(1000.0, "CogView4Pipeline passes the flow-matching scheduler's timesteps, sigma * 1000"),
    rope_attr="rope",
    rope_classes=("CogView4RotaryPosEmbed",),
    pipelines=("CogView4Pipeline", "CogView4ControlPipeline"),
)

GLM_IMAGE = replace(
    COGVIEW4,
    name="glm-image",
    title="GLM-Image",
    classes=("GlmImageTransformer2DModel",),
    kind=FittedKind(positions=token_indices, grid=latent_grid, layout="halves"),
    rope_axes=RopeAxes(
        dims=hunyuan_dit_dims,
        theta=10000.0,
        theta_source="GlmImageTransformer2DModel builds its GlmImageRotaryPosEmbed with theta=10000.0",
    ),
    trained=(
        TrainedGrid(
            (64, 64),
            "GlmImagePipeline's default size, 1024 x 1024 px (sample_size 128 latent pixels), stands in for the "
            "trained one (the model card was not read); VAE 8x, patch 2",
        ),
    ),
    time=Timestep(1000.0, "GlmImagePipeline passes the flow-matching scheduler's timesteps (sigma * 1000) minus 1"),
    rope_classes=("GlmImageRotaryPosEmbed",),
    pipelines=("GlmImagePipeline",),
)

HUNYUAN_DIT_CONTROLNET = replace(
    HUNYUAN_DIT,
    name="hunyuan-dit-controlnet",
    title="HunyuanDiT ControlNet",
    classes=("HunyuanDiT2DControlNetModel",),
    pipelines=("HunyuanDiTControlNetPipeline",),
)

FAMILIES = (HUNYUAN_DIT, HUNYUAN_DIT_CONTROLNET, EASYANIMATE, COGVIEW4, GLM_IMAGE)

"""Grid tables by the family's own position rule, mostly a fit into a fixed extent (HunyuanDiT, EasyAnimate, ...).

HunyuanDiT's pipelines fit the token grid into a square of 512 / 8 / patch tokens (the longer side
spans it, the shorter one is centred; diffusers' `get_resize_crop_region_for_grid`) and pass
`get_2d_rotary_pos_embed`'s (cos, sin) (seq, head_dim) as `image_rotary_emb`: axes (y, x) of
head_dim / 2 channels, theta 10000, each pair twice, the x block first (its ControlNet takes the
same table). EasyAnimate's rope module (`rope_embedding`, called with the latent (b, c, frames, h,
w)) fits the grid into 60 x 90 latent pixels (480 x 720 px) the same way and returns
`get_3d_rotary_pos_embed`'s (cos, sin) (seq, head_dim): axes (t, y, x) of head_dim / 4,
3 head_dim / 8, 3 head_dim / 8, theta 10000, frames at 0 .. T - 1. CogView4's (`rope`, called with
the latent (b, c, h, w)) places token i of n at i * R // n of R = rope_axes_dim positions per axis
(a bigger grid, denser positions over the same R); GLM-Image's at i; both: axes (y, x) of
head_dim / 2 channels, theta 10000, the half-width table twice ("halves").

The family's own table (the pipeline's argument `argument`, or the rope module at `rope_attr`
called with the latent) stays wherever the plan is None. Beyond the trained grid an axis the method
scales gets positions i * d_a, d_a the mean spacing of its own positions at the trained grid, and
the method's frequencies at that spacing (`token_spacing`); once a spatial axis is scaled, every
spatial axis takes them (an unscaled one with its trained frequencies), as `cogvideox.py` does.
Otherwise (none, riflex) the family's own columns stay, times the logit scale's gain: for
HunyuanDiT, whose pipeline already squeezes a bigger grid into its box, "none" is that squeeze and
"pi" at the trained spacing equals it on square grids (to float rounding). The table keeps the
family's format: each pair's value twice ("interleaved") or the whole half-width table twice
("halves"), its axes' column blocks in `columns` order.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import ClassVar

import torch

from ..family import Family, RopeAxes, Timestep, TrainedGrid
from .base import GivenTableRope, RopeKind, RopeSetup, grid_table, plan_key, tensor_key


@dataclass(frozen=True)
class FittedKind(RopeKind):
    """positions(config, grid): per rope axis, the family's own positions (float64) of a token grid.
    grid(config, hidden_states): the token grid of the latent. argument: the forward argument holding
    the pipeline's (cos, sin) (None: the rope module returns it from the latent). layout: "interleaved"
    or "halves". columns: the rope axes in the order of the table's column blocks (None: axis order).
    """

    positions: Callable[[Mapping, Sequence[int]], list[torch.Tensor]]
    grid: Callable[[Mapping, torch.Tensor], tuple[int, ...]]
    argument: str | None = None
    layout: str = "interleaved"
    columns: tuple[int, ...] | None = None
    title: ClassVar[str] = "grid by its own position rule (fitted extents)"

    def make_rope(self, original, setup: RopeSetup) -> FittedRope:
        return FittedRope(original, setup)

    def spacing(self, config: Mapping, trained_grid: Sequence[int]) -> tuple[float, ...]:
        """Per rope axis, the mean distance between neighbouring positions at the trained grid (1 for one token)."""
        own = self.positions(config, trained_grid)
        return tuple(float(p[-1] - p[0]) / (len(p) - 1) if len(p) > 1 else 1.0 for p in own)


def column_blocks(dims: Sequence[int], order: Sequence[int], layout: str, width: int) -> list[list[int]]:
    """Per rope axis, its column indices in a table of `width` columns whose axis blocks come in `order`
    ("halves": each axis's dim // 2 pairs in both halves)."""
    per_axis = [d if layout == "interleaved" else d // 2 for d in dims]
    starts, at = {}, 0
    for axis in order:
        starts[axis], at = at, at + per_axis[axis]
    blocks = [list(range(starts[a], starts[a] + per_axis[a])) for a in range(len(dims))]
    return blocks if layout == "interleaved" else [[*b, *(width // 2 + c for c in b)] for b in blocks]


class FittedRope(GivenTableRope):
    """forward(hidden_states, given=None) -> the family's cos, sin (seq, head_dim) for the latent's grid;
    `given` the pipeline's table (argument kinds), else the own module's output is the trained table."""

    def __init__(self, original, setup: RopeSetup):
        super().__init__(original, setup)
        self.kind = setup.family.kind
        self.spacing = self.kind.spacing(setup.config, setup.trained_grid)

    def token_spacing(self):
        return self.spacing

    def _ours(self, grid, plan, device) -> tuple[torch.Tensor, torch.Tensor]:
        """cos, sin (seq, head_dim) at positions i * d_a per rope axis, in the family's layout, axes in rope order."""
        positions = [torch.arange(n, dtype=torch.float64) * d for n, d in zip(grid, self.spacing, strict=True)]
        interleaved = self.kind.layout == "interleaved"
        cos, sin = grid_table(
            self.setup.dims,
            self.setup.thetas,
            self.axis_scalings(plan),
            plan.logit_scale,
            positions,
            device,
            full=interleaved,
        )
        return (cos, sin) if interleaved else (torch.cat([cos, cos], -1), torch.cat([sin, sin], -1))

    def tables(
        self,
        grid: tuple[int, ...],
        own: Callable[[], tuple[torch.Tensor, torch.Tensor]],
        key: tuple,
        anchors: tuple = (),
    ):
        """The table of a token grid, or None where the family's own (`own()`) stays as it is."""
        plan = self.plan(grid)
        if plan is None:
            return None
        scalings, roles = self.axis_scalings(plan), self.setup.family.axes
        spatial_scaled = any(s is not None for s, role in zip(scalings, roles, strict=True) if role == "spatial")
        replaced = [
            a
            for a, (s, role) in enumerate(zip(scalings, roles, strict=True))
            if s is not None or (spatial_scaled and role == "spatial")
        ]

        def build():
            given = own()
            gain = math.sqrt(plan.logit_scale)
            out = [table.float() * gain for table in given]
            if replaced:
                cos, sin = self._ours(grid, plan, given[0].device)
                width, dims, layout = given[0].shape[-1], self.setup.dims, self.kind.layout
                own_order = column_blocks(dims, self.kind.columns or range(len(dims)), layout, width)
                ours_order = column_blocks(dims, range(len(dims)), layout, width)
                for axis in replaced:
                    mine, theirs = torch.tensor(ours_order[axis]), torch.tensor(own_order[axis])
                    out[0][:, theirs], out[1][:, theirs] = cos[:, mine], sin[:, mine]
            return tuple(t.to(given[0].dtype) for t in out)

        return self.cached((grid, *key, plan_key(plan)), build, anchors=anchors)

    def forward(self, hidden_states: torch.Tensor, given: tuple[torch.Tensor, torch.Tensor] | None = None):
        """The table for the latent's grid: the module's own output (or `given`) where the plan is None."""
        grid = tuple(self.kind.grid(self.setup.config, hidden_states))
        if given is not None:
            if given[0].shape[0] != math.prod(grid):
                raise ValueError(f"{self.kind.argument} has {given[0].shape[0]} rows for a grid of {grid} tokens")
            return self.tables(grid, lambda: given, tuple(tensor_key(t) for t in given), anchors=tuple(given))
        table = self.tables(grid, lambda: self.original(hidden_states), (hidden_states.device,))
        return self.original(hidden_states) if table is None else table


# -- families ------------------------------------------------------------------------------------------------


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

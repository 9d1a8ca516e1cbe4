"""Lumina2's rope module (positions from the caption mask, complex tables) and Lumina-Next's pipeline table.

`Lumina2RotaryPosEmbed(hidden_states, attention_mask)` patchifies the latent and places caption
token j at (j, 0, 0) and image token (r, c) at (L, r, c), L the caption's length (the mask's sum);
axes (caption index, y, x) of axes_dim_rope channels, theta 10000 (the model builds it with
theta=10000). It returns the patched latent, the caption's, the image's and the joint sequence's
complex tables (batch, seq, sum(dims) / 2), and the lengths. Beyond the trained grid the
replacement rebuilds the image's and the joint table from those positions: the first axis (an
index axis) as trained, height and width by the method, the logit scale's gain on every token of
the image and joint attentions. The caption's table feeds a text-only refiner, whose attention does
not grow with the image: it stays as trained. Padding rows of the joint table sit at (0, 0, 0), as
the module puts them. The module still patchifies and builds the caption's table, so a grid past
its axes_lens (512 tokens a side by default) fails in the module as it does without a method.

Lumina-Next's table comes from its pipeline (`LuminaNextKind`). Time: Lumina2Pipeline and
LuminaPipeline pass 1 - t / 1000 of their schedulers' timesteps, 0 at noise and 1 at the image.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import torch

from ..family import Family, RopeAxes, Timestep, TrainedGrid
from .base import ExtrapolatedRope, GivenTableRope, RopeKind, RopeSetup, axis_table, plan_key


@dataclass(frozen=True)
class Lumina2Kind(RopeKind):
    """patch: the config key of the patch size."""

    patch: str = "patch_size"
    title: ClassVar[str] = "caption-indexed grid (complex)"

    def make_rope(self, original, setup: RopeSetup) -> Lumina2Rope:
        return Lumina2Rope(original, setup)


def lumina2_position_ids(caption_lengths, grid, total: int) -> torch.Tensor:
    """(batch, total, 3) int64 positions: caption j at (j, 0, 0), image token (r, c) at (L, r, c), zeros after."""
    h, w = grid
    rows, cols = torch.arange(h).repeat_interleave(w), torch.arange(w).repeat(h)
    ids = torch.zeros(len(caption_lengths), total, 3, dtype=torch.long)
    for i, length in enumerate(caption_lengths):
        ids[i, :length, 0] = torch.arange(length)
        ids[i, length : length + h * w] = torch.stack([torch.full_like(rows, length), rows, cols], -1)
    return ids


class Lumina2Rope(ExtrapolatedRope):
    """forward(hidden_states (b, c, h, w), attention_mask (b, L)) -> the module's six outputs."""

    def __init__(self, original, setup: RopeSetup):
        super().__init__(original, setup)
        self.patch_size = int(setup.config[setup.family.kind.patch])

    def _complex(self, ids: torch.Tensor, plan, dtype, device) -> torch.Tensor:
        """The complex table (batch, seq, pairs) at ids, each axis by its scaling, times sqrt(logit_scale)."""
        parts = []
        for axis, (dim, theta, scaling) in enumerate(
            zip(self.setup.dims, self.setup.thetas, self.axis_scalings(plan), strict=True)
        ):
            positions = torch.arange(int(ids[..., axis].max()) + 1, dtype=torch.float64)
            cos, sin = axis_table(dim, theta, scaling, plan.logit_scale, positions)
            parts.append(torch.complex(cos.double(), sin.double())[ids[..., axis]])
        return torch.cat(parts, -1).to(device=device, dtype=dtype)

    def forward(self, hidden_states: torch.Tensor, attention_mask: torch.Tensor):
        out = self.original(hidden_states, attention_mask)
        grid = tuple(n // self.patch_size for n in hidden_states.shape[-2:])
        plan = self.plan(grid)
        if plan is None:
            return out
        patched, caption, _, joint, caption_lengths, seq_lengths = out
        key = (grid, tuple(caption_lengths), joint.shape[1], joint.dtype, joint.device, plan_key(plan))

        def build():
            ids = lumina2_position_ids(caption_lengths, grid, joint.shape[1])
            new_joint = self._complex(ids, plan, joint.dtype, joint.device)
            image = torch.stack([new_joint[i, n : n + math.prod(grid)] for i, n in enumerate(caption_lengths)])
            return image, new_joint

        image, new_joint = self.cached(key, build)
        return patched, caption, image, new_joint, caption_lengths, seq_lengths


@dataclass(frozen=True)
class LuminaNextKind(RopeKind):
    """Lumina-Next's table, built by its pipeline each step and passed in: complex (H, W, pairs), axes alternating.

    LuminaPipeline builds `get_2d_rotary_pos_embed_lumina` over 384 x 384 positions each step, with
    its own time-aware rescaling beyond 1024 px (positions divided by the size ratio, or theta times
    it, by the step's time), and the transformer takes its top-left (h, w) corner. Its pairs alternate
    between the axes: pair 2 k is y's k-th, pair 2 k + 1 is x's. The transformer's forward pre-hook
    swaps the argument for the method's table of the latent's grid, positions 0 .. n - 1 on both axes,
    wherever the plan is not None; elsewhere (at or inside the trained grid, "none") the pipeline's
    own table stays, its rescaling included. The table's axes (y, x) have head_dim / 2 channels each
    (head_dim = hidden_size / num_attention_heads), theta 10000 (the function's default).

    argument: the forward argument holding the pipeline's complex table; patch: the patch size's config key.
    """

    argument: str = "image_rotary_emb"
    patch: str = "patch_size"
    title: ClassVar[str] = "complex table from the pipeline (axes alternating)"

    def make_rope(self, original, setup: RopeSetup) -> LuminaNextRope:
        return LuminaNextRope(original, setup)


class LuminaNextRope(GivenTableRope):
    """forward(hidden_states (b, c, h, w), given (H, W, pairs) complex) -> the grid's (h, w, pairs) table, or
    None where `given` stays."""

    def forward(self, hidden_states: torch.Tensor, given: torch.Tensor):
        p = int(self.setup.config[self.setup.family.kind.patch])
        grid = (hidden_states.shape[-2] // p, hidden_states.shape[-1] // p)
        plan = self.plan(grid)
        if plan is None:
            return None

        def build():
            parts = []
            for dim, theta, scaling, n in zip(
                self.setup.dims, self.setup.thetas, self.axis_scalings(plan), grid, strict=True
            ):
                cos, sin = axis_table(dim, theta, scaling, plan.logit_scale, torch.arange(n, dtype=torch.float64))
                parts.append(torch.complex(cos, sin))
            y, x = parts
            pairs = torch.stack([y[:, None].expand(-1, grid[1], -1), x[None].expand(grid[0], -1, -1)], -1)
            return pairs.flatten(2).to(device=given.device, dtype=given.dtype)  # (h, w, pairs): y0, x0, y1, x1, ...

        return self.cached((grid, given.dtype, given.device, plan_key(plan)), build)


# -- families ------------------------------------------------------------------------------------------------

LUMINA2 = Family(
    name="lumina2",
    title="Lumina-Image 2.0",
    classes=("Lumina2Transformer2DModel",),
    kind=Lumina2Kind(),
    axes=("reference", "spatial", "spatial"),
    rope_axes=RopeAxes(
        dims="axes_dim_rope",
        theta=10000.0,
        theta_source="Lumina2Transformer2DModel builds its Lumina2RotaryPosEmbed with theta=10000",
    ),
    trained=(
        TrainedGrid(
            (64, 64),
            "Lumina2Pipeline's default size, 1024 x 1024 px (sample_size 128 latent pixels), stands in for the trained "
            "one (the model card was not read); VAE 8x, patch 2",
        ),
    ),
    time=Timestep(0.0, "Lumina2Pipeline passes 1 - t / 1000: 0 at noise, 1 at the image", at_clean=1.0),
    rope_attr="rope_embedder",
    rope_classes=("Lumina2RotaryPosEmbed",),
    pipelines=("Lumina2Pipeline",),
)


def lumina_next_dims(config) -> tuple[int, int]:
    half = int(config["hidden_size"]) // int(config["num_attention_heads"]) // 2
    return half, half


LUMINA_NEXT = Family(
    name="lumina-next",
    title="Lumina-Next",
    classes=("LuminaNextDiT2DModel",),
    kind=LuminaNextKind(),
    axes=("spatial", "spatial"),
    rope_axes=RopeAxes(
        dims=lumina_next_dims,
        theta=10000.0,
        theta_source="get_2d_rotary_pos_embed_lumina's default, which LuminaPipeline uses",
    ),
    trained=(
        TrainedGrid(
            (64, 64),
            "LuminaPipeline's default_image_size, 1024 x 1024 px (sample_size 128 latent pixels), the size where "
            "its own "
            "rescaling factor is 1 (the model card was not read); VAE 8x, patch 2",
        ),
    ),
    time=Timestep(0.0, "LuminaPipeline passes 1 - t / 1000: 0 at noise, 1 at the image", at_clean=1.0),
    pipelines=("LuminaPipeline",),
)

FAMILIES = (LUMINA2, LUMINA_NEXT)

"""EmbedND ropes called with batched ids built inside the forward (HiDream, PRX, ERNIE-Image).

The rope is called as `rope(ids)` with ids (b, seq, n_axes) that the transformer makes from the
latent's size, and returns per axis, concatenated over the pairs, one of two formats
(`EmbedNDKind.table`):
- "rotation": rotation matrices [[cos, -sin], [sin, cos]] (b, seq, pairs, 2, 2) float32 with a
  singleton heads axis inserted at `heads_axis` (HiDream: 2, PRX: 1);
- "angles": the angles themselves, each pair's angle twice, (b, seq, 1, 2 pairs) float32 (ERNIE).
  A table of angles carries no gain: its family refuses the methods with one (`Family.no_gain`).
HiDream's ids are (0, y, x) for the image and zeros for the text (its padding rows at 0 too),
theta 10000 (its constructor's); PRX's the image's (y, x) only, theta from its config;
ERNIE-Image's the image at (text length, y, x), text token j at (j, 0, 0), theta rope_theta.
The plan's grid is the extent of the ids on the planned axes (no reference images here); the ids
are read once per call (they are new tensors every step) and the table is cached by their values.
No model card was read (no network): trained grids are the pipelines' defaults, which a model
trained larger overrides with its own trained_grid.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import ClassVar

import torch

from axialrope import rope_frequencies

from ..family import Family, RopeAxes, Timestep, TrainedGrid
from .base import ExtrapolatedRope, RopeKind, RopeSetup, ids_table, plan_key

TABLES = ("rotation", "angles")


@dataclass(frozen=True)
class EmbedNDKind(RopeKind):
    """table: "rotation" or "angles" (module docstring); heads_axis: where the output's singleton heads axis sits."""

    table: str = "rotation"
    heads_axis: int = 2
    title: ClassVar[str] = "EmbedND (batched ids)"

    def __post_init__(self):
        if self.table not in TABLES:
            raise ValueError(f"table must be one of {TABLES}, got {self.table!r}")

    def make_rope(self, original, setup: RopeSetup) -> EmbedNDRope:
        return EmbedNDRope(original, setup)


def angle_table(dims, thetas, scalings, coords: torch.Tensor) -> torch.Tensor:
    """Angles (seq, 2 pairs) float32 of coords (seq, n_axes), each pair's angle twice, from float64
    angles (the scalings' frequencies; their gains are not representable and must be 1)."""
    parts = []
    for axis, (dim, theta, scaling) in enumerate(zip(dims, thetas, scalings, strict=True)):
        inv_freq, gain = rope_frequencies(dim, theta, scaling)
        if gain != 1.0:
            raise ValueError("a table of angles cannot carry a gain")
        parts.append(coords[:, axis, None] * inv_freq)
    return torch.cat(parts, dim=-1).repeat_interleave(2, dim=-1).float()


class EmbedNDRope(ExtrapolatedRope):
    """forward(ids (b, seq, n_axes)) -> the family's table (module docstring)."""

    def forward(self, ids: torch.Tensor):
        rows = ids.detach().to("cpu", torch.float64)
        flat = rows.reshape(-1, rows.shape[-1])
        columns = [flat[:, axis] for axis in self.setup.family.planned_axes]
        grid = tuple(int(c.max() - c.min()) + 1 if len(c) else 0 for c in columns)
        plan = self.plan(grid)
        if plan is None:
            return self.original(ids)
        kind, dims, thetas = self.setup.family.kind, self.setup.dims, self.setup.thetas
        scalings = self.axis_scalings(plan)

        def build():
            if kind.table == "angles":
                table = angle_table(dims, thetas, scalings, flat).to(ids.device)
                return table.reshape(*ids.shape[:-1], 1, -1)
            cos, sin = ids_table(dims, thetas, scalings, plan.logit_scale, flat.to(ids.device))
            cos, sin = cos[:, ::2], sin[:, ::2]
            matrices = torch.stack([cos, -sin, sin, cos], dim=-1).reshape(*ids.shape[:-1], -1, 2, 2)
            return matrices.unsqueeze(kind.heads_axis)

        values = hashlib.sha1(flat.numpy().tobytes()).hexdigest()
        return self.cached((tuple(ids.shape), values, ids.device, plan_key(plan)), build)


# -- families ------------------------------------------------------------------------------------------------

HIDREAM = Family(
    name="hidream",
    title="HiDream-I1",
    classes=("HiDreamImageTransformer2DModel",),
    kind=EmbedNDKind(table="rotation", heads_axis=2),
    axes=("reference", "spatial", "spatial"),
    rope_axes=RopeAxes(
        dims="axes_dims_rope",
        theta=10000.0,
        theta_source="HiDreamImageTransformer2DModel builds HiDreamImageEmbedND(theta=10000)",
    ),
    trained=(
        TrainedGrid(
            (64, 64),
            "HiDreamImagePipeline's default 1024 x 1024 px (default_sample_size 128 x VAE 8; no model card read here, "
            "no network); VAE 8x, 2x2 patches = 16 px per token. Beyond max_resolution's tokens the model itself takes "
            "square latents only (non-square ones are padded to that many tokens)",
        ),
    ),
    time=Timestep(
        1000.0,
        "HiDreamImagePipeline passes the scheduler's timesteps (1000 at pure noise) as `timesteps`",
        argument="timesteps",
    ),
    rope_attr="pe_embedder",
    rope_classes=("HiDreamImageEmbedND",),
    pipelines=("HiDreamImagePipeline",),
)

PRX = Family(
    name="prx",
    title="PRX",
    classes=("PRXTransformer2DModel",),
    kind=EmbedNDKind(table="rotation", heads_axis=1),
    axes=("spatial", "spatial"),
    rope_axes=RopeAxes(dims="axes_dim", theta="theta", theta_source="PRXTransformer2DModel's config theta"),
    trained=(
        TrainedGrid(
            (16, 16),
            "PRXPipeline's default 512 x 512 px (DEFAULT_RESOLUTION; no model card read here, no network) through "
            "a DC-AE (32 latent channels, 32x) and patch 1 = 32 px per token",
            when=(("in_channels", 32), ("patch_size", 1)),
            label="DC-AE, patch 1",
        ),
        TrainedGrid(
            (32, 32),
            "PRXPipeline's default 512 x 512 px (DEFAULT_RESOLUTION; no model card read here, no network) through "
            "the Flux VAE (16 latent channels, 8x) and 2x2 patches = 16 px per token",
        ),
    ),
    time=Timestep(1.0, "PRXPipeline passes the scheduler's timestep / num_train_timesteps (sigma)"),
    rope_attr="pe_embedder",
    rope_classes=("PRXEmbedND",),
    pipelines=("PRXPipeline",),
)

ERNIE_IMAGE = Family(
    name="ernie-image",
    title="ERNIE-Image",
    classes=("ErnieImageTransformer2DModel",),
    kind=EmbedNDKind(table="angles", heads_axis=2),
    axes=("reference", "spatial", "spatial"),
    rope_axes=RopeAxes(
        dims="rope_axes_dim", theta="rope_theta", theta_source="ErnieImageTransformer2DModel's config rope_theta"
    ),
    trained=(
        TrainedGrid(
            (64, 64),
            "ErnieImagePipeline's default 1024 x 1024 px (no model card read here, no network); VAE 16x, patch 1 = "
            "16 px per token",
        ),
    ),
    time=Timestep(1000.0, "ErnieImagePipeline passes the scheduler's timesteps (1000 at pure noise)"),
    rope_attr="pos_embed",
    rope_classes=("ErnieImageEmbedND3",),
    pipelines=("ErnieImagePipeline",),
    no_gain="it passes its attention a table of angles (the processor takes their cos and sin), which holds no gain",
)

FAMILIES = (HIDREAM, PRX, ERNIE_IMAGE)

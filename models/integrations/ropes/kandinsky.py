"""Kandinsky 5 and 6's video rope (and 6's SR model's): rotation matrices over index positions / a scale factor.

Kandinsky5RoPE3D is called as `rope(shape, pos, scale_factor)` with shape (b, t, h, w), Kandinsky
6's (and its SR model's) as `rope(pos, scale_factor)`; pos holds one index tensor per axis (t, y,
x of `axes_dims` channels, theta 10000: the modules' default max_period, which the transformers do
not pass) and a token at index i sits at i / scale_factor[a] (the pipelines' own interpolation:
Kandinsky 5 passes 2 at 480p-like sizes, 3.16 above; Kandinsky 6 has it in its config). They return
rotation matrices [[cos, -sin], [sin, cos]] (b, t, h, w, 1, pairs, 2, 2) (Kandinsky 6: without b).
The replacement keeps those positions and spacings (`token_spacing` 1 / scale_factor, for the
methods that count rotations over the trained length) and gives every axis the method; the text
and audio ropes (1D) stay as trained. Time: their pipelines pass the flow-matching scheduler's
timesteps, sigma * 1000. No model card was read (no network): the trained grids are the video
pipelines' defaults; the image models sharing Kandinsky 5's class (Kandinsky5T2IPipeline,
1024 x 1024 px) pass trained_grid=(1, 64, 64).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import ClassVar

import torch

from ..family import Family, LatentRead, RopeAxes, Timestep, TrainedGrid
from .base import ExtrapolatedRope, RopeKind, RopeSetup, grid_table, plan_key


@dataclass(frozen=True)
class KandinskyKind(RopeKind):
    """with_shape: the rope takes the grid's (b, t, h, w) first and returns a batch axis (Kandinsky 5)."""

    with_shape: bool = False
    title: ClassVar[str] = "rotation matrices (Kandinsky)"

    def make_rope(self, original, setup: RopeSetup) -> KandinskyRope:
        return KandinskyRope(original, setup)


class KandinskyRope(ExtrapolatedRope):
    """forward([shape,] pos, scale_factor) -> rotation matrices, as Kandinsky5RoPE3D / Kandinsky6RoPE3D."""

    def forward(self, *args, **kwargs):
        with_shape = self.setup.family.kind.with_shape
        names = ("shape", "pos", "scale_factor") if with_shape else ("pos", "scale_factor")
        given = {**dict(zip(names, args, strict=False)), **kwargs}
        pos, scale = given["pos"], tuple(float(s) for s in given.get("scale_factor", (1.0, 1.0, 1.0)))
        sizes = tuple(int(p.shape[0]) for p in pos)
        indices = [p.detach().to("cpu", torch.float64) for p in pos]
        # the extent of each axis's indices (Kandinsky 6's image-to-video adds its first frame again at index 0)
        extent = tuple(int(i.max() - i.min()) + 1 if len(i) else 0 for i in indices)
        plan = self.plan(extent, token_spacing=tuple(1.0 / s for s in scale))
        if plan is None:
            return self.original(*args, **kwargs)
        where = [i / s for i, s in zip(indices, scale, strict=True)]
        device = pos[0].device
        batch = int(given["shape"][0]) if with_shape else None

        def build():
            cos, sin = grid_table(
                self.setup.dims, self.setup.thetas, self.axis_scalings(plan), plan.logit_scale, where, device
            )
            rope = torch.stack([cos, -sin, sin, cos], dim=-1).reshape(*sizes, -1, 2, 2).unsqueeze(-4)
            return rope.expand(batch, *rope.shape) if with_shape else rope

        values = hashlib.sha1(torch.cat(where).numpy().tobytes()).hexdigest()
        return self.cached((sizes, values, batch, device, plan_key(plan)), build)


# -- families ------------------------------------------------------------------------------------------------

KANDINSKY5 = Family(
    name="kandinsky5",
    title="Kandinsky 5",
    classes=("Kandinsky5Transformer3DModel",),
    kind=KandinskyKind(with_shape=True),
    axes=("temporal", "spatial", "spatial"),
    rope_axes=RopeAxes(
        dims="axes_dims",
        theta=10000.0,
        theta_source="Kandinsky5RoPE3D's default max_period; the transformer passes none",
    ),
    trained=(
        TrainedGrid(
            (31, 32, 48),
            "Kandinsky5T2VPipeline's defaults, 121 frames at 512 x 768 px (no model card read here, no network); "
            "VAE 8x "
            "spatial, 4x temporal ((121 - 1) / 4 + 1 = 31 latent frames), patch (1, 2, 2); there the pipeline passes "
            "scale_factor (1, 2, 2)",
        ),
    ),
    time=Timestep(1000.0, "the Kandinsky 5 pipelines pass the scheduler's timesteps, sigma * 1000"),
    rope_attr="visual_rope_embeddings",
    rope_classes=("Kandinsky5RoPE3D",),
    pipelines=("Kandinsky5T2VPipeline", "Kandinsky5I2VPipeline", "Kandinsky5T2IPipeline", "Kandinsky5I2IPipeline"),
    latent=LatentRead(layout="last"),
)

KANDINSKY6 = Family(
    name="kandinsky6",
    title="Kandinsky 6",
    classes=("Kandinsky6Transformer3DModel",),
    kind=KandinskyKind(with_shape=False),
    axes=("temporal", "spatial", "spatial"),
    rope_axes=RopeAxes(
        dims="axes_dims",
        theta=10000.0,
        theta_source="Kandinsky6RoPE3D's default max_period; the transformer passes none",
    ),
    trained=(
        TrainedGrid(
            (31, 32, 48),
            "Kandinsky6TI2VAPipeline's defaults, 121 frames at 512 x 768 px (no model card read here, no network); VAE "
            "8x spatial, 4x temporal ((121 - 1) / 4 + 1 = 31 latent frames), patch (1, 2, 2); the config's "
            "scale_factor "
            "divides the positions. Its audio and text ropes (1D) stay as trained",
        ),
    ),
    time=Timestep(1000.0, "Kandinsky6TI2VAPipeline passes the scheduler's timesteps, sigma * 1000"),
    rope_attr="visual_rope_embeddings",
    rope_classes=("Kandinsky6RoPE3D",),
    pipelines=("Kandinsky6TI2VAPipeline",),
    latent=LatentRead(layout="last"),
)

KANDINSKY6_SR = Family(
    name="kandinsky6-sr",
    title="Kandinsky 6 SR",
    classes=("Kandinsky6SRTransformer3DModel",),
    kind=KandinskyKind(with_shape=False),
    axes=("temporal", "spatial", "spatial"),
    rope_axes=RopeAxes(
        dims="axes_dims",
        theta=10000.0,
        theta_source="Kandinsky6SRRoPE3D's default max_period; the transformer passes none",
    ),
    trained=(
        TrainedGrid(
            (31, 32, 48),
            "Kandinsky6SRPipeline refines tiles of the sizes the model was trained on (its config's tile_sizes, 512 x "
            "768 px the widest; no model card read here, no network) over the video's latent frames (121 frames: 31); "
            "K-VAE 16x spatial, 4x temporal, patch 1. The pipeline never passes a larger tile: extrapolation is for "
            "callers of the transformer itself, whose NABLA attention takes heights and widths in multiples of 8 "
            "tokens",
        ),
    ),
    time=Timestep(1000.0, "Kandinsky6SRPipeline passes the scheduler's timesteps, sigma * 1000"),
    rope_attr="visual_rope_embeddings",
    rope_classes=("Kandinsky6SRRoPE3D",),
    pipelines=("Kandinsky6SRPipeline",),
    latent=LatentRead(layout="last"),
)

FAMILIES = (KANDINSKY5, KANDINSKY6, KANDINSKY6_SR)

"""Allegro's tables, built by its pipeline and passed in: one table per axis, and the tokens' row in each.

AllegroPipeline passes ((cos_t, sin_t), (cos_y, sin_y), (cos_x, sin_x)), (rows_t, rows_y, rows_x)
(`get_3d_rotary_pos_embed_allegro`: axes (t, y, x) of head_dim / 3 channels each, theta 10000):
axis a's table (n_a, dim_a) holds positions i / s_a (s_a the config's interpolation_scale_*, the
half-width table twice), and every token reads its row of each axis. Beyond the trained grid the
transformer's forward pre-hook swaps the tables of the axes the method scales for the method's at
the same positions (`token_spacing` 1 / s_a); the other axes keep the pipeline's, times the logit
scale's gain. The rows stay as the pipeline gives them. Time: AllegroPipeline passes its
scheduler's steps 0 .. 999.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import torch

from ..family import Family, RopeAxes, Timestep, TrainedGrid
from .base import GivenTableRope, RopeKind, RopeSetup, axis_table, plan_key, tensor_key


def allegro_interpolation(config) -> tuple[float, float, float]:
    """(s_t, s_y, s_x) as AllegroTransformer3DModel resolves a None in its config."""
    frames = config["sample_frames"]
    s_t = config["interpolation_scale_t"]
    if s_t is None:
        s_t = (frames - 1) // 16 + 1 if frames % 2 == 1 else frames // 16
    s_y = config["interpolation_scale_h"] or config["sample_height"] / 30
    s_x = config["interpolation_scale_w"] or config["sample_width"] / 40
    return float(s_t), float(s_y), float(s_x)


@dataclass(frozen=True)
class AllegroKind(RopeKind):
    """argument: the forward argument holding the pipeline's tables and rows."""

    argument: str = "image_rotary_emb"
    title: ClassVar[str] = "per-axis tables from the pipeline"

    def make_rope(self, original, setup: RopeSetup) -> AllegroRope:
        return AllegroRope(original, setup)

    def temporal_frequencies(self, setup: RopeSetup) -> tuple[torch.Tensor, float]:
        inv_freq, _ = super().temporal_frequencies(setup)
        return inv_freq, 1.0 / allegro_interpolation(setup.config)[0]


class AllegroRope(GivenTableRope):
    """forward(given) -> the pipeline's structure with the method's per-axis tables, or None where it stays."""

    reads_latent = False  # the grid is read from the given per-axis tables

    def __init__(self, original, setup: RopeSetup):
        super().__init__(original, setup)
        self.spacing = tuple(1.0 / s for s in allegro_interpolation(setup.config))

    def token_spacing(self):
        return self.spacing

    def forward(self, given):
        tables, rows = given
        grid = tuple(cos.shape[0] for cos, _ in tables)
        plan = self.plan(grid)
        if plan is None:
            return None

        def build():
            gain, out = math.sqrt(plan.logit_scale), []
            for (cos, sin), dim, theta, scaling, n, step in zip(
                tables, self.setup.dims, self.setup.thetas, self.axis_scalings(plan), grid, self.spacing, strict=True
            ):
                if scaling is None:
                    out.append((cos * gain, sin * gain))
                    continue
                mine = axis_table(dim, theta, scaling, plan.logit_scale, torch.arange(n, dtype=torch.float64) * step)
                out.append(tuple(torch.cat([t, t], -1).to(cos) for t in mine))  # the half-width table twice
            return tuple(out), rows

        flat = [t for pair in tables for t in pair]
        return self.cached((*(tensor_key(t) for t in flat), plan_key(plan)), build, anchors=tuple(flat))


# -- families ------------------------------------------------------------------------------------------------


def allegro_dims(config) -> tuple[int, int, int]:
    third = int(config["attention_head_dim"]) // 3
    return third, third, third


ALLEGRO = Family(
    name="allegro",
    title="Allegro",
    classes=("AllegroTransformer3DModel",),
    kind=AllegroKind(),
    axes=("temporal", "spatial", "spatial"),
    rope_axes=RopeAxes(
        dims=allegro_dims,
        theta=10000.0,
        theta_source="get_3d_rotary_pos_embed_allegro's default, which AllegroPipeline uses",
    ),
    trained=(
        TrainedGrid(
            (22, 45, 80),
            "AllegroPipeline's defaults, 88 frames at 720 x 1280 px, which are the transformer's own config "
            "(sample_frames 22, sample_height 90, sample_width 160 latent pixels); VAE 8x spatial, 4x temporal, "
            "patch 2, "
            "temporal patch 1; the model card was not read",
        ),
    ),
    time=Timestep(1000.0, "AllegroPipeline passes its scheduler's steps 0 .. 999"),
    pipelines=("AllegroPipeline",),
)

FAMILIES = (ALLEGRO,)

"""Families whose pipeline builds the rope tables and passes them in, beside CogVideoX (`cogvideox.py`).

ConsisID's pipeline is CogVideoX 1.0's: `get_3d_rotary_pos_embed` over the transformer's sample
size (axes (t, y, x) of head_dim / 4, 3 head_dim / 8, 3 head_dim / 8, theta 10000), passed to every
step as `image_rotary_emb`; it has no temporal patch. Time: ConsisIDPipeline passes the
CogVideoX DPM scheduler's steps 0 .. 999.

Allegro: AllegroPipeline passes `get_3d_rotary_pos_embed_allegro`'s per-axis tables, axes (t, y, x)
of head_dim / 3 channels each, theta 10000, at positions i / interpolation_scale_* (see
`rope_kinds/allegro.py`). Time: AllegroPipeline passes its scheduler's steps 0 .. 999.
"""

from __future__ import annotations

from dataclasses import replace

from ..family import Family, RopeAxes, Timestep, TrainedGrid
from ..ropes.allegro import AllegroKind
from .cogvideox import COGVIDEOX

CONSISID = replace(
    COGVIDEOX,
    name="consisid",
    title="ConsisID",
    classes=("ConsisIDTransformer3DModel",),
    trained=(
        TrainedGrid(
            (13, 30, 45),
            "ConsisIDPipeline's defaults, 49 frames at 480 x 720 px, which are the transformer's own config "
            "(sample_frames "
            "49, sample_height 60, sample_width 90 latent pixels) as for CogVideoX-5B it is built on; VAE 8x "
            "spatial, 4x "
            "temporal (13 latent frames), patch 2; the model card was not read",
        ),
    ),
    riflex=(),
    pipelines=("ConsisIDPipeline",),
    test="test_families.py",
)


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

FAMILIES = (CONSISID, ALLEGRO)

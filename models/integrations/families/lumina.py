"""Lumina2 (Lumina-Image 2.0), see `rope_kinds/lumina2.py`; Lumina-Next, see `rope_kinds/lumina_next.py`.

Lumina2RotaryPosEmbed: axes (caption index, y, x) of axes_dim_rope channels, theta 10000 (the
model builds it with theta=10000), complex tables. Time: Lumina2Pipeline passes 1 - t / 1000 of
the flow-matching scheduler's timesteps, 0 at noise and 1 at the image.

Lumina-Next: `get_2d_rotary_pos_embed_lumina`, axes (y, x) of head_dim / 2 channels each (head_dim =
hidden_size / num_attention_heads), theta 10000, complex; LuminaPipeline passes it and, the same
way, 1 - t / 1000 of its scheduler's timesteps.
"""

from __future__ import annotations

from ..family import Family, RopeAxes, Timestep, TrainedGrid
from ..ropes.lumina import Lumina2Kind
from ..ropes.lumina_next import LuminaNextKind

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

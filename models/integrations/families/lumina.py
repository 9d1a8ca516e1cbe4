"""Lumina2 (Lumina-Image 2.0); see `rope_kinds/lumina2.py`.

Lumina2RotaryPosEmbed: axes (caption index, y, x) of axes_dim_rope channels, theta 10000 (the
model builds it with theta=10000), complex tables. Time: Lumina2Pipeline passes 1 - t / 1000 of
the flow-matching scheduler's timesteps, 0 at noise and 1 at the image.
"""

from __future__ import annotations

from ..family import Family, RopeAxes, Timestep, TrainedGrid
from ..rope_kinds.lumina2 import Lumina2Kind

LUMINA2 = Family(
    name="lumina2",
    title="Lumina-Image 2.0",
    classes=("Lumina2Transformer2DModel",),
    kind=Lumina2Kind(),
    axes=("reference", "spatial", "spatial"),
    rope_axes=RopeAxes(dims="axes_dim_rope", theta=10000.0,
                       theta_source="Lumina2Transformer2DModel builds its Lumina2RotaryPosEmbed with theta=10000"),
    trained=(TrainedGrid(
        (64, 64),
        "Lumina2Pipeline's default size, 1024 x 1024 px (sample_size 128 latent pixels), stands in for the trained "
        "one (the model card was not read); VAE 8x, patch 2"),),
    time=Timestep(1.0, "Lumina2Pipeline passes 1 - t / 1000: 0 at noise, 1 at the image", reverse=True),
    rope_attr="rope_embedder",
    rope_classes=("Lumina2RotaryPosEmbed",),
    pipelines=("Lumina2Pipeline",),
)

FAMILIES = (LUMINA2,)

"""Kandinsky 5 and 6 (and 6's SR model): rotation matrices over scaled index positions; see `rope_kinds/kandinsky.py`.

Axes (t, y, x) of `axes_dims` channels, theta 10000 (the rope modules' default max_period, which the
transformers do not pass). Time: their pipelines pass the flow-matching scheduler's timesteps, sigma
* 1000. No model card was read (no network): the trained grids are the video pipelines' defaults;
the image models sharing Kandinsky 5's class (Kandinsky5T2IPipeline, 1024 x 1024 px) pass
trained_grid=(1, 64, 64).
"""

from __future__ import annotations

from ..family import Family, RopeAxes, Timestep, TrainedGrid
from ..ropes.kandinsky import KandinskyKind

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
    test="test_families.py, test_kandinsky.py",
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
    test="test_families.py (-m slow: its flex attention runs eagerly on the CPU)",
)

FAMILIES = (KANDINSKY5, KANDINSKY6, KANDINSKY6_SR)

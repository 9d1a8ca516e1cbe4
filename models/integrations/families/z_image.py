"""Z-Image's RopeEmbedder and its copies: Z-Image, its ControlNet, BriaFibo 2.0; see `rope_kinds/rope_embedder.py`.

Axes (plane, y, x): the caption (and BriaFibo 2.0's gist tokens) on planes 1, 2, ... at y = x = 0,
the generated image on the plane after them over its (y, x) grid; the plane axis stays as trained.
Time: ZImagePipeline passes `t` = 1 - sigma (0 at pure noise); BriaFibo2Pipeline passes sigma.
No model card was read (no network): trained grids are the pipelines' defaults, which a model
trained larger overrides with its own trained_grid.
"""

from __future__ import annotations

from dataclasses import replace

from ..family import Family, RopeAxes, Timestep, TrainedGrid
from ..ropes.z_image import RopeEmbedderKind

Z_IMAGE = Family(
    name="z-image",
    title="Z-Image",
    classes=("ZImageTransformer2DModel",),
    kind=RopeEmbedderKind(latent="x", patch="patch_size"),
    axes=("reference", "spatial", "spatial"),
    rope_axes=RopeAxes(
        dims="axes_dims", theta="rope_theta", theta_source="ZImageTransformer2DModel's config rope_theta"
    ),
    trained=(
        TrainedGrid(
            (64, 64),
            "ZImagePipeline's default 1024 x 1024 px (no model card read here, no network); VAE 8x, 2x2 patches "
            "= 16 px "
            "per token",
        ),
    ),
    time=Timestep(0.0, "ZImagePipeline passes `t` = (1000 - timestep) / 1000 = 1 - sigma", at_clean=1.0, argument="t"),
    rope_attr="rope_embedder",
    rope_classes=("RopeEmbedder",),
    pipelines=(
        "ZImagePipeline",
        "ZImageImg2ImgPipeline",
        "ZImageInpaintPipeline",
        "ZImageOmniPipeline",
        "ZImageControlNetPipeline",
        "ZImageControlNetInpaintPipeline",
    ),
    test="test_families.py, test_z_image.py",
)

# shares the transformer's RopeEmbedder (ZImageControlNetModel.from_transformer), whose numbers it reads
Z_IMAGE_CONTROLNET = replace(
    Z_IMAGE,
    name="z-image-controlnet",
    title="Z-Image ControlNet",
    classes=("ZImageControlNetModel",),
    rope_axes=RopeAxes(
        dims="axes_dims",
        theta="theta",
        on_rope=True,
        theta_source="the transformer's RopeEmbedder it shares (from_transformer)",
    ),
    pipelines=("ZImageControlNetPipeline", "ZImageControlNetInpaintPipeline"),
)

BRIA_FIBO2 = Family(
    name="bria-fibo2",
    title="BriaFibo 2.0",
    classes=("BriaFibo2Transformer2DModel",),
    kind=RopeEmbedderKind(latent="hidden_states", patch="patch_size", patch_in_config=True),
    axes=("reference", "spatial", "spatial"),
    rope_axes=RopeAxes(
        dims="axes_dims", theta="rope_theta", theta_source="BriaFibo2Transformer2DModel's config rope_theta"
    ),
    trained=(
        TrainedGrid(
            (64, 64),
            "BriaFibo2Pipeline: 'the size Fibo 2.0 was trained at for an aspect ratio, about the default area' of "
            "1024 x 1024 px (its comment; no model card read here, no network); VAE 8x, 2x2 patches = 16 px per token",
        ),
    ),
    time=Timestep(1.0, "BriaFibo2Pipeline passes the scheduler's timestep / 1000 (sigma)"),
    rope_attr="rope_embedder",
    rope_classes=("RopeEmbedder",),
    pipelines=("BriaFibo2Pipeline",),
)

FAMILIES = (Z_IMAGE, Z_IMAGE_CONTROLNET, BRIA_FIBO2)

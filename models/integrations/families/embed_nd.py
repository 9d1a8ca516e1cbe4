"""EmbedND variants whose ids the transformer builds itself: HiDream, PRX, ERNIE-Image; see `rope_kinds/embed_nd.py`.

HiDream: ids (0, y, x) for the image and zeros for the text, theta 10000 (its constructor's), rotation
matrices. PRX: image ids (y, x) only, theta from its config. ERNIE-Image: the image at (text length,
y, x), text token j at (j, 0, 0), theta rope_theta, a table of angles (no gain: the yarn methods and
entropy scaling are refused). No model card was read (no network): trained grids are the pipelines'
defaults, which a model trained larger overrides with its own trained_grid.
"""

from __future__ import annotations

from ..family import Family, RopeAxes, Timestep, TrainedGrid
from ..ropes.embed_nd import EmbedNDKind

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
    test="test_families.py, test_embed_nd.py",
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
    test="test_families.py, test_embed_nd.py",
    no_gain="it passes its attention a table of angles (the processor takes their cos and sin), which holds no gain",
)

FAMILIES = (HIDREAM, PRX, ERNIE_IMAGE)

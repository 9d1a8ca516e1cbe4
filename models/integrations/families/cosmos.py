"""Cosmos 1.0, 2 and 2.5 (and the Transfer 2.5 ControlNet), a rope with a theta per axis; see
`rope_kinds/cosmos.py`.

The trained grid follows the config: Cosmos 1.0 (extra_pos_embed_type "learnable"; its learned
absolute embedding covers max_size, 128 x 120 x 120 tokens), Cosmos 2 Text2Image (in_channels 16,
one frame), the Video2World models of 2 and 2.5 otherwise. Time: the Cosmos 2 pipelines pass
sigma / (sigma + 1), the 2.5 ones the flow sigma, both 1 at pure noise; Cosmos 1.0's EDM pipelines
pass 0.25 ln sigma, read the same way (t = 1 from sigma e^4 up, 0 from sigma 1 down).
"""

from __future__ import annotations

from dataclasses import replace

from ..family import Family, RopeAxes, Timestep, TrainedGrid
from ..ropes.cosmos import CosmosKind, cosmos_dims

VIDEO2WORLD = TrainedGrid(
    (24, 44, 80),
    "Cosmos-Predict2 Video2World and Cosmos-Predict2.5 (2B, 14B): their pipelines' defaults, 93 frames at "
    "704 x 1280 px; Wan 2.1's VAE (8x spatial, 4x temporal: (93 - 1) / 4 + 1 = 24 latent frames), patch (1, 2, 2)",
)

COSMOS = Family(
    name="cosmos",
    title="Cosmos",
    classes=("CosmosTransformer3DModel",),
    kind=CosmosKind(default_fps=16.0),
    axes=("temporal", "spatial", "spatial"),
    rope_axes=RopeAxes(
        dims=cosmos_dims, theta=10000.0, theta_source="per axis 10000 r_a^(d_a / (d_a - 2)), r the config's rope_scale"
    ),
    trained=(
        TrainedGrid(
            (16, 44, 80),
            "Cosmos-1.0-Diffusion Text2World and Video2World (7B, 14B): their pipelines' defaults, 121 frames at "
            "704 x 1280 px; the CV8x8x8 tokenizer ((121 - 1) / 8 + 1 = 16 latent frames), patch (1, 2, 2)",
            when=(("extra_pos_embed_type", "learnable"),),
            label="Cosmos 1.0, a learned absolute embedding",
        ),
        TrainedGrid(
            (1, 48, 85),
            "Cosmos-Predict2 Text2Image (2B, 14B): Cosmos2TextToImagePipeline's default, one frame at 768 x 1360 px; "
            "Wan 2.1's VAE 8x spatial, patch (1, 2, 2)",
            when=(("in_channels", 16), ("extra_pos_embed_type", None)),
            label="Cosmos 2 Text2Image, in_channels 16",
        ),
        VIDEO2WORLD,
    ),
    time=Timestep(
        1.0,
        "the Cosmos 2 pipelines pass sigma / (sigma + 1), the 2.5 ones the flow sigma; Cosmos 1.0's "
        "EDM pipelines 0.25 ln sigma",
    ),
    rope_attr="rope",
    rope_classes=("CosmosRotaryPosEmbed",),
    pipelines=(
        "CosmosTextToWorldPipeline",
        "CosmosVideoToWorldPipeline",
        "Cosmos2TextToImagePipeline",
        "Cosmos2VideoToWorldPipeline",
        "Cosmos2_5_PredictBasePipeline",
        "Cosmos2_5_TransferPipeline",
    ),
    test="test_families.py, test_cosmos.py",
)

COSMOS_CONTROLNET = replace(
    COSMOS,
    name="cosmos-controlnet",
    title="Cosmos Transfer 2.5 ControlNet",
    classes=("CosmosControlNetModel",),
    trained=(
        replace(
            VIDEO2WORLD,
            source=(
                "Cosmos-Transfer2.5-2B: Cosmos2_5_TransferPipeline works in chunks of 93 frames "
                "(num_frames_per_chunk) at "
                "a height of 704 px, 1280 px wide at 16:9; Wan 2.1's VAE (8x spatial, 4x temporal: 24 latent frames), "
                "patch (1, 2, 2)"
            ),
        ),
    ),
    pipelines=("Cosmos2_5_TransferPipeline",),
)

FAMILIES = (COSMOS, COSMOS_CONTROLNET)

"""Cosmos 3 (omni: video, image, sound, actions); see `rope_kinds/cosmos3.py`.

Cosmos3VLTextRotaryEmbedding: one list of head_dim / 2 inverse frequencies, theta `rope_theta`, its
pairs interleaved among (t, y, x) by `rope_axes_dim`, over position ids the pipeline packs: text,
then after a margin of 15000 the generated vision grid (and the sound and action streams beside it
in time). The vision grid (t, y, x) takes the methods; text keeps its trained positions. Time:
Cosmos3OmniPipeline passes its UniPC scheduler's timesteps, sigma * 1000, as `vision_timesteps`.
"""

from __future__ import annotations

from ..family import Family, RopeAxes, Timestep, TrainedGrid
from ..ropes.cosmos3 import Cosmos3Kind


def whole_head(config) -> tuple[int, int, int]:
    """Each axis draws its pairs from the whole head's frequency list: head_dim per axis."""
    return (int(config["head_dim"]),) * 3


COSMOS3 = Family(
    name="cosmos3",
    title="Cosmos 3",
    classes=("Cosmos3OmniTransformer",),
    kind=Cosmos3Kind(),
    axes=("temporal", "spatial", "spatial"),
    rope_axes=RopeAxes(dims=whole_head, theta="rope_theta"),
    trained=(
        TrainedGrid(
            (48, 23, 40),
            "Cosmos3OmniPipeline's default, 189 frames at 720 x 1280 px and 24 fps, stands in for the trained one (the "
            "model card was not read); VAE 4x temporal, 16x spatial, patch 2: (189 - 1) / 4 + 1 latent frames, "
            "ceil(45 / 2) x 40 patches",
        ),
    ),
    time=Timestep(
        1000.0,
        "Cosmos3OmniPipeline passes its scheduler's timesteps, sigma * 1000, as vision_timesteps",
        argument="vision_timesteps",
    ),
    rope_attr="rotary_emb",
    rope_classes=("Cosmos3VLTextRotaryEmbedding",),
    pipelines=("Cosmos3OmniPipeline",),
    test="test_families.py, test_cosmos3.py",
    makes_video=True,
)

FAMILIES = (COSMOS3,)

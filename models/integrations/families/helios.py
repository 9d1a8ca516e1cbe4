"""Helios, a rope placed by frame indices; see `rope_kinds/helios.py`.

HeliosRotaryPosEmbed: axes (t, y, x) of rope_dim channels, theta rope_theta. The time axis is an
index axis kept as trained: HeliosPipeline numbers the prefix frame, the long, mid and short history
and the chunk being made from 0 to below 1 + sum(history_sizes) + num_latent_frames_per_chunk (29 at
its defaults), however long the video, so riflex does not apply; the other methods act on height and
width. Time: HeliosPipeline passes HeliosScheduler's timesteps, sigma * 1000.
"""

from __future__ import annotations

from ..family import Family, RopeAxes, Timestep, TrainedGrid
from ..ropes.helios import HeliosKind

HELIOS = Family(
    name="helios",
    title="Helios",
    classes=("HeliosTransformer3DModel",),
    kind=HeliosKind(),
    axes=("reference", "spatial", "spatial"),
    rope_axes=RopeAxes(dims="rope_dim", theta="rope_theta"),
    trained=(
        TrainedGrid(
            (24, 40),
            "Helios: HeliosPipeline's and HeliosPyramidPipeline's defaults, 384 x 640 px (the model card was not "
            "read); VAE 8x spatial (its scale_factor_spatial), patch (1, 2, 2): 16 px per token. The pyramid "
            "pipeline's earlier stages run below this size",
        ),
    ),
    time=Timestep(1000.0, "HeliosPipeline passes HeliosScheduler's timesteps, sigma * 1000"),
    rope_attr="rope",
    rope_classes=("HeliosRotaryPosEmbed",),
    pipelines=("HeliosPipeline", "HeliosPyramidPipeline"),
    makes_video=True,
    no_time_axis="numbers its frames within a span its pipeline's history sizes fix, whatever the video's length",
)

FAMILIES = (HELIOS,)

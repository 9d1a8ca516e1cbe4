"""Cosmos 1.0, 2 and 2.5's rope (and the Transfer 2.5 ControlNet's): `rope(hidden_states, fps)`, a theta per axis.

CosmosRotaryPosEmbed splits attention_head_dim into t, y, x channels (y, x: head_dim // 6 * 2
each, t the rest), gives axis a the theta 10000 r_a^(d_a / (d_a - 2)) (r: the config's
rope_scale, an NTK factor the model was trained with), places y, x at token indices and time at
index * base_fps / fps (index without fps), and returns cos, sin (seq, head_dim) with the pairs
of t, y, x in order, the whole half repeated (not each pair twice). The replacement builds the
same format for any grid, with the methods counting time in those position units.

The trained grid follows the config: Cosmos 1.0 (extra_pos_embed_type "learnable"; its learned
absolute embedding covers max_size, 128 x 120 x 120 tokens), Cosmos 2 Text2Image (in_channels 16,
one frame), the Video2World models of 2 and 2.5 otherwise. Time: the Cosmos 2 pipelines pass
sigma / (sigma + 1), the 2.5 ones the flow sigma, both 1 at pure noise; Cosmos 1.0's EDM pipelines
pass 0.25 ln sigma, read the same way (t = 1 from sigma e^4 up, 0 from sigma 1 down).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, replace
from typing import ClassVar

import torch

from axialrope import rope_frequencies

from ..family import Family, LatentRead, RopeAxes, Timestep, TrainedGrid
from .base import ExtrapolatedRope, RopeKind, RopeSetup, grid_table, index_positions, plan_key

BASE_FPS = 24  # CosmosRotaryPosEmbed's base_fps (the transformer passes none)


def cosmos_dims(config) -> tuple[int, int, int]:
    head_dim = int(config["attention_head_dim"])
    spatial = head_dim // 6 * 2
    return head_dim - 2 * spatial, spatial, spatial


def cosmos_thetas(config) -> tuple[float, float, float]:
    """Per axis 10000 r_a^(d_a / (d_a - 2)), r the config's rope_scale (t, y, x)."""
    return tuple(
        10000.0 * float(r) ** (d / (d - 2)) for r, d in zip(config["rope_scale"], cosmos_dims(config), strict=True)
    )


@dataclass(frozen=True)
class CosmosKind(RopeKind):
    """default_fps: the frame rate RIFLEx's derived k assumes (Cosmos 2 Video2World's default)."""

    default_fps: float = 16.0
    title: ClassVar[str] = "Cosmos (theta per axis, halves)"

    def make_rope(self, original, setup: RopeSetup) -> CosmosRope:
        return CosmosRope(original, dataclasses.replace(setup, thetas=cosmos_thetas(setup.config)))

    def temporal_frequencies(self, setup: RopeSetup) -> tuple[torch.Tensor, float]:
        dims, thetas = cosmos_dims(setup.config), cosmos_thetas(setup.config)
        return rope_frequencies(dims[0], thetas[0])[0], BASE_FPS / self.default_fps


class CosmosRope(ExtrapolatedRope):
    """forward(hidden_states (b, c, frames, h, w), fps=None) -> cos, sin (seq, head_dim), as CosmosRotaryPosEmbed."""

    def __init__(self, original, setup: RopeSetup):
        super().__init__(original, setup)
        self.patch_size = tuple(int(p) for p in setup.config["patch_size"])

    def forward(self, hidden_states: torch.Tensor, fps=None):
        sizes = tuple(n // p for n, p in zip(hidden_states.shape[2:], self.patch_size, strict=True))
        time_step = 1.0 if fps is None else BASE_FPS / float(fps)
        plan = self.plan(sizes, (time_step, 1.0, 1.0))
        if plan is None:
            return self.original(hidden_states, fps=fps)
        device = hidden_states.device

        def build():
            positions = index_positions(sizes)
            positions[0] = positions[0] * time_step
            cos, sin = grid_table(
                self.setup.dims, self.setup.thetas, self.axis_scalings(plan), plan.logit_scale, positions, device
            )
            return torch.cat([cos, cos], dim=-1), torch.cat([sin, sin], dim=-1)

        return self.cached((sizes, time_step, device, plan_key(plan)), build)


# -- families ------------------------------------------------------------------------------------------------

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
    latent=LatentRead("latents"),
)

FAMILIES = (COSMOS, COSMOS_CONTROLNET)

"""Helios's rope: `rope(frame_indices, height, width, device)`, one tensor of cos and sin channels.

HeliosRotaryPosEmbed (axes (t, y, x) of rope_dim channels, theta rope_theta) takes frame indices
(b, frames) and the token grid's height and width (after the patch), and returns
(b, 2 sum(dims), frames, h, w): the cos channels of t, y, x, then their sin channels, each pair's
value twice, with y, x at 0 .. n - 1. The transformer calls it once per stream (the chunk being
made, the short, mid and long history, all at the same height and width) and pools the history
streams' tables itself. The time axis is an index axis kept as trained: HeliosPipeline numbers the
prefix frame, the long, mid and short history and the chunk being made from 0 to below
1 + sum(history_sizes) + num_latent_frames_per_chunk (29 at its defaults), however long the video,
so riflex does not apply; the other methods act on height and width. Time: HeliosPipeline passes
HeliosScheduler's timesteps, sigma * 1000.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch
from einops import rearrange

from ..family import Family, RopeAxes, Timestep, TrainedGrid
from .base import ExtrapolatedRope, RopeKind, RopeSetup, axis_table, full_width, plan_key, tensor_key


@dataclass(frozen=True)
class HeliosKind(RopeKind):
    title: ClassVar[str] = "frame indices, one tensor (Helios)"

    def make_rope(self, original, setup: RopeSetup) -> HeliosRope:
        return HeliosRope(original, setup)


class HeliosRope(ExtrapolatedRope):
    """forward(frame_indices (b, n), height, width, device) -> (b, 2 sum(dims), n, height, width) float32."""

    def forward(self, frame_indices: torch.Tensor, height: int, width: int, device):
        plan = self.plan((int(height), int(width)))
        if plan is None:
            return self.original(frame_indices=frame_indices, height=height, width=width, device=device)
        scalings = self.axis_scalings(plan)

        def build():
            times = frame_indices.detach().to("cpu", torch.float64)
            batch, frames = times.shape
            where = (
                times.reshape(-1),
                torch.arange(height, dtype=torch.float64),
                torch.arange(width, dtype=torch.float64),
            )
            shapes = ("(b n) d -> b d n 1 1", "h d -> 1 d 1 h 1", "w d -> 1 d 1 1 w")
            cos, sin = [], []
            for dim, theta, scaling, positions, shape in zip(
                self.setup.dims, self.setup.thetas, scalings, where, shapes, strict=True
            ):
                parts = axis_table(dim, theta, scaling, plan.logit_scale, positions)
                c, s = (
                    rearrange(full_width(p), shape, b=batch) if "b" in shape else rearrange(full_width(p), shape)
                    for p in parts
                )
                cos.append(c.expand(batch, -1, frames, height, width))
                sin.append(s.expand(batch, -1, frames, height, width))
            return torch.cat([*cos, *sin], dim=1).to(device)

        key = (tensor_key(frame_indices), int(height), int(width), torch.device(device), plan_key(plan))
        return self.cached(key, build, anchors=(frame_indices,))


# -- families ------------------------------------------------------------------------------------------------

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

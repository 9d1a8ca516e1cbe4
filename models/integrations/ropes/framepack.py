"""Framepack's rope, HunyuanVideo's placed by frame indices: `rope(frame_indices, height, width, device)`.

HunyuanVideoFramepackRotaryPosEmbed (axes (t, y, x) of rope_axes_dim channels, theta rope_theta
(256), as HunyuanVideo) returns cos, sin (frames * h * w, sum(dims)), each pair's value twice,
row-major, at times `frame_indices` (n_frames,) and positions 0 .. n - 1 over the latent's height
and width divided by the patch size. The transformer calls it once per stream of a forward (the
frames being made, the clean context, the 2x and 4x history, all at the same height and width) and
pools the history streams' tables itself. The time axis is an index axis kept as trained: the
pipeline packs those streams into indices below 1 + 3 w + w + 19 (56 at its default window of
w = 9 latent frames; its latent paddings are at most 3 windows), however long the video. So riflex
does not apply; the other methods act on height and width. Time: HunyuanVideoFramepackPipeline
passes the scheduler's timesteps, sigma * 1000.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch

from ..family import Family, RopeAxes, Timestep, TrainedGrid
from .base import ExtrapolatedRope, RopeKind, RopeSetup, grid_table, plan_key, tensor_key


@dataclass(frozen=True)
class FrameIndicesKind(RopeKind):
    """patch: the config key of the spatial patch size."""

    patch: str = "patch_size"
    title: ClassVar[str] = "frame indices (Framepack)"

    def make_rope(self, original, setup: RopeSetup) -> FrameIndicesRope:
        return FrameIndicesRope(original, setup)


class FrameIndicesRope(ExtrapolatedRope):
    """forward(frame_indices (n,), height, width, device) -> cos, sin (n * h * w, sum(dims)) on `device`."""

    def __init__(self, original, setup: RopeSetup):
        super().__init__(original, setup)
        self.patch_size = int(setup.config[setup.family.kind.patch])

    def forward(self, frame_indices: torch.Tensor, height: int, width: int, device: torch.device):
        grid = (height // self.patch_size, width // self.patch_size)
        plan = self.plan(grid)
        if plan is None:
            return self.original(frame_indices, height, width, device)

        def build():
            times = frame_indices.detach().to("cpu", torch.float64).reshape(-1)
            positions = [times, *(torch.arange(n, dtype=torch.float64) for n in grid)]
            return grid_table(
                self.setup.dims,
                self.setup.thetas,
                self.axis_scalings(plan),
                plan.logit_scale,
                positions,
                device,
                full=True,
            )

        key = (tensor_key(frame_indices), grid, torch.device(device), plan_key(plan))
        return self.cached(key, build, anchors=(frame_indices,))


# -- families ------------------------------------------------------------------------------------------------

FRAMEPACK = Family(
    name="framepack",
    title="Framepack",
    classes=("HunyuanVideoFramepackTransformer3DModel",),
    kind=FrameIndicesKind(patch="patch_size"),
    axes=("reference", "spatial", "spatial"),
    rope_axes=RopeAxes(dims="rope_axes_dim", theta="rope_theta"),
    trained=(
        TrainedGrid(
            (40, 40),
            "FramePack: its demo (lllyasviel/FramePack demo_gradio.py) resizes every input to the nearest of its 640 "
            "resolution buckets (find_nearest_bucket(H, W, resolution=640)), about 640 x 640 px of area from 416 x 960 "
            "to 960 x 416 px; 640 x 640 px is 40 x 40 tokens (VAE 8x, 2x2 patches). A non-square bucket passes "
            "its own, "
            "e.g. trained_grid=(26, 60) for 416 x 960 px",
            pipeline_default=(45, 80),
        ),
    ),  # HunyuanVideoFramepackPipeline: 720 x 1280 px
    time=Timestep(1000.0, "HunyuanVideoFramepackPipeline passes the scheduler's timesteps, sigma * 1000"),
    rope_attr="rope",
    rope_classes=("HunyuanVideoFramepackRotaryPosEmbed",),
    pipelines=("HunyuanVideoFramepackPipeline",),
    makes_video=True,
    no_time_axis="places its frames at indices its pipeline packs into a fixed span, whatever the video's length",
)

FAMILIES = (FRAMEPACK,)

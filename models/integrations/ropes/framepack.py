"""Ropes given frame indices (Framepack): `rope(frame_indices, height, width, device)`.

HunyuanVideoFramepackRotaryPosEmbed returns cos, sin (frames * h * w, sum(dims)), each pair's
value twice, row-major, at times `frame_indices` (n_frames,) and positions 0 .. n - 1 over the
latent's height and width divided by the patch size. The transformer calls it once per stream of a
forward (the frames being made, the clean context, the 2x and 4x history, all at the same height
and width) and pools the history streams' tables itself. Framepack's pipeline packs the indices into
a span fixed by its section layout, whatever the video's length, so the time axis is an index axis
kept as trained; the methods act on height and width.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch

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

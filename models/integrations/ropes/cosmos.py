"""Cosmos's rope: `rope(hidden_states, fps)`, a theta per axis, halves layout.

CosmosRotaryPosEmbed splits attention_head_dim into t, y, x channels (y, x: head_dim // 6 * 2
each, t the rest), gives axis a the theta 10000 r_a^(d_a / (d_a - 2)) (r: the config's
rope_scale, an NTK factor the model was trained with), places y, x at token indices and time at
index * base_fps / fps (index without fps), and returns cos, sin (seq, head_dim) with the pairs
of t, y, x in order, the whole half repeated (not each pair twice). The replacement builds the
same format for any grid, with the methods counting time in those position units.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import ClassVar

import torch

from axialrope import rope_frequencies

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

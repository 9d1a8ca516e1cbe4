"""Tables the pipeline builds and passes in (CogVideoX): the transformer's argument is swapped per step.

CogVideoXPipeline builds cos, sin (seq, head_dim) once per call (diffusers'
`get_3d_rotary_pos_embed`: axes (t, y, x), each pair's value twice) and passes them to every
step as `image_rotary_emb`. The transformer's forward pre-hook swaps that argument for the
extrapolated table of the grid of `hidden_states` at the step's time; where the method leaves
the encoding as trained it passes the pipeline's own table through.

Columns: an axis the method scales gets token-index positions 0 .. n - 1 and the method's
frequencies. Once a spatial axis is scaled, every spatial axis takes token-index positions
(an unscaled one with its trained frequencies), so an axis within its trained length does not
keep the pipeline's squeezed positions while the other gets the method. Otherwise (none, riflex)
the pipeline's own columns stay, bit for bit, times the logit scale's gain: "none" is the
pipeline as it is, and riflex changes the time axis only, as RIFLEx's own CogVideoX code does.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import ClassVar

import torch

from .base import GivenTableRope, RopeKind, RopeSetup, grid_table, index_positions, plan_key, tensor_key


@dataclass(frozen=True)
class PipelineTablesKind(RopeKind):
    """argument: the transformer's forward argument holding the pipeline's (cos, sin).
    patch: config keys of the patch sizes (t, h, w); a None value or missing key counts as 1 (frames padded up).
    """

    argument: str = "image_rotary_emb"
    patch: tuple[str, str, str] = ("patch_size_t", "patch_size", "patch_size")
    title: ClassVar[str] = "tables from the pipeline"

    def make_rope(self, original, setup: RopeSetup) -> PipelineTablesRope:
        return PipelineTablesRope(None, setup)


class PipelineTablesRope(GivenTableRope):
    """tables(grid, given) -> cos, sin (seq, head_dim) of a (t, h, w) token grid from the pipeline's
    table `given`, or None where `given` stays as it is."""

    def __init__(self, original, setup: RopeSetup):
        super().__init__(original, setup)
        self.patch_size = tuple(setup.config.get(key) or 1 for key in setup.family.kind.patch)

    def grid_of(self, hidden_states: torch.Tensor) -> tuple[int, int, int]:
        """The token grid of hidden_states (b, frames, c, h, w)."""
        frames, _, height, width = hidden_states.shape[1:]
        p_t, p_h, p_w = self.patch_size
        return -(-frames // p_t), height // p_h, width // p_w  # CogVideoX 1.5 pads frames to pairs

    def tables(self, grid: tuple[int, int, int], given: tuple[torch.Tensor, torch.Tensor]):
        plan = self.plan(grid)
        if plan is None:
            return None
        if given[0].shape[0] != math.prod(grid):
            raise ValueError(f"image_rotary_emb has {given[0].shape[0]} rows for a grid of {grid} tokens")
        scalings = self.axis_scalings(plan)
        roles = self.setup.family.axes
        spatial_scaled = any(s is not None for s, role in zip(scalings, roles, strict=True) if role == "spatial")
        ours = [
            s is not None or (spatial_scaled and role == "spatial") for s, role in zip(scalings, roles, strict=True)
        ]

        def build():
            cos, sin = grid_table(
                self.setup.dims,
                self.setup.thetas,
                scalings,
                plan.logit_scale,
                index_positions(grid),
                given[0].device,
                full=True,
            )
            gain = math.sqrt(plan.logit_scale)
            out = [table.float() * gain for table in given]
            edges = [0, *itertools.accumulate(self.setup.dims)]
            for axis, replaced in enumerate(ours):
                if replaced:  # this axis's column block: token-index positions, the method's frequencies
                    columns = slice(edges[axis], edges[axis + 1])
                    out[0][:, columns], out[1][:, columns] = cos[:, columns], sin[:, columns]
            return tuple(t.to(given[0].dtype) for t in out)

        return self.cached((grid, *(tensor_key(t) for t in given), plan_key(plan)), build, anchors=tuple(given))

    def forward(self, hidden_states: torch.Tensor, image_rotary_emb: tuple[torch.Tensor, torch.Tensor]):
        """The table for `hidden_states`' grid, or None where the pipeline's own table stays."""
        return self.tables(self.grid_of(hidden_states), image_rotary_emb)

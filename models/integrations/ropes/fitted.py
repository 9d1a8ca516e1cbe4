"""Grid tables placed by the family's own position rule, mostly a fit into a fixed extent.

HunyuanDiT's pipeline fits every grid into its 512 px box, EasyAnimate's rope into a 480 x 720 px
box, CogView4's into 256 positions per axis: a bigger grid gets denser positions of the same span
(GLM-Image's rule is plain token indices, in CogView4's table format).
The family's own table (the pipeline's argument `argument`, or the rope module at `rope_attr`
called with the latent) stays wherever the plan is None. Beyond the trained grid an axis the method
scales gets positions i * d_a, d_a the mean spacing of its own positions at the trained grid, and
the method's frequencies at that spacing (`token_spacing`); once a spatial axis is scaled, every
spatial axis takes them (an unscaled one with its trained frequencies), as `pipeline_tables` does.
Otherwise (none, riflex) the family's own columns stay, times the logit scale's gain. The table
keeps the family's format: each pair's value twice ("interleaved") or the whole half-width table
twice ("halves"), its axes' column blocks in `columns` order.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar

import torch

from .base import GivenTableRope, RopeKind, RopeSetup, grid_table, plan_key, tensor_key


@dataclass(frozen=True)
class FittedKind(RopeKind):
    """positions(config, grid): per rope axis, the family's own positions (float64) of a token grid.
    grid(config, hidden_states): the token grid of the latent. argument: the forward argument holding
    the pipeline's (cos, sin) (None: the rope module returns it from the latent). layout: "interleaved"
    or "halves". columns: the rope axes in the order of the table's column blocks (None: axis order).
    """

    positions: Callable[[Mapping, Sequence[int]], list[torch.Tensor]]
    grid: Callable[[Mapping, torch.Tensor], tuple[int, ...]]
    argument: str | None = None
    layout: str = "interleaved"
    columns: tuple[int, ...] | None = None
    title: ClassVar[str] = "grid by its own position rule (fitted extents)"

    def make_rope(self, original, setup: RopeSetup) -> FittedRope:
        return FittedRope(original, setup)

    def spacing(self, config: Mapping, trained_grid: Sequence[int]) -> tuple[float, ...]:
        """Per rope axis, the mean distance between neighbouring positions at the trained grid (1 for one token)."""
        own = self.positions(config, trained_grid)
        return tuple(float(p[-1] - p[0]) / (len(p) - 1) if len(p) > 1 else 1.0 for p in own)


def column_blocks(dims: Sequence[int], order: Sequence[int], layout: str, width: int) -> list[list[int]]:
    """Per rope axis, its column indices in a table of `width` columns whose axis blocks come in `order`
    ("halves": each axis's dim // 2 pairs in both halves)."""
    per_axis = [d if layout == "interleaved" else d // 2 for d in dims]
    starts, at = {}, 0
    for axis in order:
        starts[axis], at = at, at + per_axis[axis]
    blocks = [list(range(starts[a], starts[a] + per_axis[a])) for a in range(len(dims))]
    return blocks if layout == "interleaved" else [[*b, *(width // 2 + c for c in b)] for b in blocks]


class FittedRope(GivenTableRope):
    """forward(hidden_states, given=None) -> the family's cos, sin (seq, head_dim) for the latent's grid;
    `given` the pipeline's table (argument kinds), else the own module's output is the trained table."""

    def __init__(self, original, setup: RopeSetup):
        super().__init__(original, setup)
        self.kind = setup.family.kind
        self.spacing = self.kind.spacing(setup.config, setup.trained_grid)

    def token_spacing(self):
        return self.spacing

    def _ours(self, grid, plan, device) -> tuple[torch.Tensor, torch.Tensor]:
        """cos, sin (seq, head_dim) at positions i * d_a per rope axis, in the family's layout, axes in rope order."""
        positions = [torch.arange(n, dtype=torch.float64) * d for n, d in zip(grid, self.spacing, strict=True)]
        interleaved = self.kind.layout == "interleaved"
        cos, sin = grid_table(
            self.setup.dims,
            self.setup.thetas,
            self.axis_scalings(plan),
            plan.logit_scale,
            positions,
            device,
            full=interleaved,
        )
        return (cos, sin) if interleaved else (torch.cat([cos, cos], -1), torch.cat([sin, sin], -1))

    def tables(
        self,
        grid: tuple[int, ...],
        own: Callable[[], tuple[torch.Tensor, torch.Tensor]],
        key: tuple,
        anchors: tuple = (),
    ):
        """The table of a token grid, or None where the family's own (`own()`) stays as it is."""
        plan = self.plan(grid)
        if plan is None:
            return None
        scalings, roles = self.axis_scalings(plan), self.setup.family.axes
        spatial_scaled = any(s is not None for s, role in zip(scalings, roles, strict=True) if role == "spatial")
        replaced = [
            a
            for a, (s, role) in enumerate(zip(scalings, roles, strict=True))
            if s is not None or (spatial_scaled and role == "spatial")
        ]

        def build():
            given = own()
            gain = math.sqrt(plan.logit_scale)
            out = [table.float() * gain for table in given]
            if replaced:
                cos, sin = self._ours(grid, plan, given[0].device)
                width, dims, layout = given[0].shape[-1], self.setup.dims, self.kind.layout
                own_order = column_blocks(dims, self.kind.columns or range(len(dims)), layout, width)
                ours_order = column_blocks(dims, range(len(dims)), layout, width)
                for axis in replaced:
                    mine, theirs = torch.tensor(ours_order[axis]), torch.tensor(own_order[axis])
                    out[0][:, theirs], out[1][:, theirs] = cos[:, mine], sin[:, mine]
            return tuple(t.to(given[0].dtype) for t in out)

        return self.cached((grid, *key, plan_key(plan)), build, anchors=anchors)

    def forward(self, hidden_states: torch.Tensor, given: tuple[torch.Tensor, torch.Tensor] | None = None):
        """The table for the latent's grid: the module's own output (or `given`) where the plan is None."""
        grid = tuple(self.kind.grid(self.setup.config, hidden_states))
        if given is not None:
            if given[0].shape[0] != math.prod(grid):
                raise ValueError(f"{self.kind.argument} has {given[0].shape[0]} rows for a grid of {grid} tokens")
            return self.tables(grid, lambda: given, tuple(tensor_key(t) for t in given), anchors=tuple(given))
        table = self.tables(grid, lambda: self.original(hidden_states), (hidden_states.device,))
        return self.original(hidden_states) if table is None else table

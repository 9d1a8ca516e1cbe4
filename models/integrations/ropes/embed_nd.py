"""EmbedND ropes called with batched ids built inside the forward (HiDream, PRX, ERNIE-Image).

The rope is called as `rope(ids)` with ids (b, seq, n_axes) that the transformer makes from the
latent's size (its text rows at 0 on the spatial axes, HiDream's padding rows at 0 too), and
returns per axis, concatenated over the pairs, one of two formats (`EmbedNDKind.table`):
- "rotation": rotation matrices [[cos, -sin], [sin, cos]] (b, seq, pairs, 2, 2) float32 with a
  singleton heads axis inserted at `heads_axis` (HiDream: 2, PRX: 1);
- "angles": the angles themselves, each pair's angle twice, (b, seq, 1, 2 pairs) float32 (ERNIE).
  A table of angles carries no gain: its family refuses the methods with one (`Family.no_gain`).
The plan's grid is the extent of the ids on the planned axes (no reference images here); the ids
are read once per call (they are new tensors every step) and the table is cached by their values.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import ClassVar

import torch

from axialrope import rope_frequencies

from .base import ExtrapolatedRope, RopeKind, RopeSetup, ids_table, plan_key

TABLES = ("rotation", "angles")


@dataclass(frozen=True)
class EmbedNDKind(RopeKind):
    """table: "rotation" or "angles" (module docstring); heads_axis: where the output's singleton heads axis sits."""

    table: str = "rotation"
    heads_axis: int = 2
    title: ClassVar[str] = "EmbedND (batched ids)"

    def __post_init__(self):
        if self.table not in TABLES:
            raise ValueError(f"table must be one of {TABLES}, got {self.table!r}")

    def make_rope(self, original, setup: RopeSetup) -> EmbedNDRope:
        return EmbedNDRope(original, setup)


def angle_table(dims, thetas, scalings, coords: torch.Tensor) -> torch.Tensor:
    """Angles (seq, 2 pairs) float32 of coords (seq, n_axes), each pair's angle twice, from float64
    angles (the scalings' frequencies; their gains are not representable and must be 1)."""
    parts = []
    for axis, (dim, theta, scaling) in enumerate(zip(dims, thetas, scalings, strict=True)):
        inv_freq, gain = rope_frequencies(dim, theta, scaling)
        if gain != 1.0:
            raise ValueError("a table of angles cannot carry a gain")
        parts.append(coords[:, axis, None] * inv_freq)
    return torch.cat(parts, dim=-1).repeat_interleave(2, dim=-1).float()


class EmbedNDRope(ExtrapolatedRope):
    """forward(ids (b, seq, n_axes)) -> the family's table (module docstring)."""

    def forward(self, ids: torch.Tensor):
        rows = ids.detach().to("cpu", torch.float64)
        flat = rows.reshape(-1, rows.shape[-1])
        columns = [flat[:, axis] for axis in self.setup.family.planned_axes]
        grid = tuple(int(c.max() - c.min()) + 1 if len(c) else 0 for c in columns)
        plan = self.plan(grid)
        if plan is None:
            return self.original(ids)
        kind, dims, thetas = self.setup.family.kind, self.setup.dims, self.setup.thetas
        scalings = self.axis_scalings(plan)

        def build():
            if kind.table == "angles":
                table = angle_table(dims, thetas, scalings, flat).to(ids.device)
                return table.reshape(*ids.shape[:-1], 1, -1)
            cos, sin = ids_table(dims, thetas, scalings, plan.logit_scale, flat.to(ids.device))
            cos, sin = cos[:, ::2], sin[:, ::2]
            matrices = torch.stack([cos, -sin, sin, cos], dim=-1).reshape(*ids.shape[:-1], -1, 2, 2)
            return matrices.unsqueeze(kind.heads_axis)

        values = hashlib.sha1(flat.numpy().tobytes()).hexdigest()
        return self.cached((tuple(ids.shape), values, ids.device, plan_key(plan)), build)

"""Kandinsky 5 and 6's video rope: rotation matrices over index positions divided by a scale factor.

Kandinsky5RoPE3D is called as `rope(shape, pos, scale_factor)` with shape (b, t, h, w), Kandinsky
6's (and its SR model's) as `rope(pos, scale_factor)`; pos holds one index tensor per axis (t, y,
x) and a token at index i sits at i / scale_factor[a] (the pipelines' own interpolation: Kandinsky
5 passes 2 at 480p-like sizes, 3.16 above; Kandinsky 6 has it in its config). They return rotation
matrices [[cos, -sin], [sin, cos]] (b, t, h, w, 1, pairs, 2, 2) (Kandinsky 6: without b). The
replacement keeps those positions and spacings (`token_spacing` 1 / scale_factor, for the methods
that count rotations over the trained length) and gives every axis the method; the text and audio
ropes (1D) stay as trained.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import ClassVar

import torch

from .base import ExtrapolatedRope, RopeKind, RopeSetup, grid_table, plan_key


@dataclass(frozen=True)
class KandinskyKind(RopeKind):
    """with_shape: the rope takes the grid's (b, t, h, w) first and returns a batch axis (Kandinsky 5)."""

    with_shape: bool = False
    title: ClassVar[str] = "rotation matrices (Kandinsky)"

    def make_rope(self, original, setup: RopeSetup) -> KandinskyRope:
        return KandinskyRope(original, setup)


class KandinskyRope(ExtrapolatedRope):
    """forward([shape,] pos, scale_factor) -> rotation matrices, as Kandinsky5RoPE3D / Kandinsky6RoPE3D."""

    def forward(self, *args, **kwargs):
        with_shape = self.setup.family.kind.with_shape
        names = ("shape", "pos", "scale_factor") if with_shape else ("pos", "scale_factor")
        given = {**dict(zip(names, args, strict=False)), **kwargs}
        pos, scale = given["pos"], tuple(float(s) for s in given.get("scale_factor", (1.0, 1.0, 1.0)))
        sizes = tuple(int(p.shape[0]) for p in pos)
        indices = [p.detach().to("cpu", torch.float64) for p in pos]
        # the extent of each axis's indices (Kandinsky 6's image-to-video adds its first frame again at index 0)
        extent = tuple(int(i.max() - i.min()) + 1 if len(i) else 0 for i in indices)
        plan = self.plan(extent, token_spacing=tuple(1.0 / s for s in scale))
        if plan is None:
            return self.original(*args, **kwargs)
        where = [i / s for i, s in zip(indices, scale, strict=True)]
        device = pos[0].device
        batch = int(given["shape"][0]) if with_shape else None

        def build():
            cos, sin = grid_table(
                self.setup.dims, self.setup.thetas, self.axis_scalings(plan), plan.logit_scale, where, device
            )
            rope = torch.stack([cos, -sin, sin, cos], dim=-1).reshape(*sizes, -1, 2, 2).unsqueeze(-4)
            return rope.expand(batch, *rope.shape) if with_shape else rope

        values = hashlib.sha1(torch.cat(where).numpy().tobytes()).hexdigest()
        return self.cached((sizes, values, batch, device, plan_key(plan)), build)

"""JoyImage Edit's rope, a method of the model: `get_rotary_pos_embed(vis_rope_size, txt_rope_size)`.

It returns ((cos, sin), text) on the CPU: cos, sin (frames * h * w, head_dim) at positions 0 .. n - 1
per axis (t, y, x of rope_dim_list channels, theta `theta`), row-major, each pair's value twice;
text None, or with rope_type "mrope" the same format for txt_rope_size tokens at m + 1, m + 2, ...
on every axis, m the largest grid index. The edit pipeline puts the reference image and the output
on the time axis as items (frames), an index axis kept as trained; the methods act on y and x, on
the text's y and x columns too (its positions stay the model's, after the grid). The replacement is
installed as an instance attribute shadowing the method (extrapolation.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch

from .base import (
    ExtrapolatedRope,
    RopeKind,
    RopeSetup,
    argument,
    axial_table,
    full_width,
    grid_table,
    index_positions,
    plan_key,
)


@dataclass(frozen=True)
class JoyImageKind(RopeKind):
    title: ClassVar[str] = "a method of the model (JoyImage Edit)"

    def make_rope(self, original, setup: RopeSetup) -> JoyImageRope:
        return JoyImageRope(original, setup)


class JoyImageRope(ExtrapolatedRope):
    """forward(vis_rope_size (t, h, w), txt_rope_size=None) -> ((cos, sin), text (cos, sin) or None), as
    JoyImageEditTransformer3DModel.get_rotary_pos_embed."""

    def forward(self, vis_rope_size, txt_rope_size=None):
        sizes = tuple(int(n) for n in vis_rope_size)
        sizes = (1,) * (3 - len(sizes)) + sizes
        plan = self.plan(sizes[1:])
        if plan is None:
            return self.original(vis_rope_size, txt_rope_size)
        scalings, cpu = self.axis_scalings(plan), torch.device("cpu")

        def build():
            vision = grid_table(
                self.setup.dims, self.setup.thetas, scalings, plan.logit_scale, index_positions(sizes), cpu, full=True
            )
            if txt_rope_size is None:
                return vision, None
            after = torch.arange(int(txt_rope_size), dtype=torch.float64) + max(sizes)  # largest grid index + 1
            text = axial_table(
                self.setup.dims, self.setup.thetas, scalings, plan.logit_scale, after[:, None].expand(-1, 3), cpu
            )
            return vision, tuple(full_width(t) for t in text)

        return self.cached((sizes, txt_rope_size, plan_key(plan)), build)


@dataclass(frozen=True)
class JoyImageRangeKind(RopeKind):
    title: ClassVar[str] = "a method of the model, per component (JoyImage Edit Plus)"

    def make_rope(self, original, setup: RopeSetup) -> JoyImageRangeRope:
        return JoyImageRangeRope(original, setup)


class JoyImageRangeRope(ExtrapolatedRope):
    """forward(start, stop) -> cos, sin ((stop - start) cells, head_dim) on the CPU, as JoyImage Edit Plus's
    `_get_rotary_pos_embed_for_range`: positions start_a .. stop_a - 1 per axis, row-major, each pair twice.

    The transformer calls it once per component of `shape_list` (the output first, then each reference
    image at its own size, after the previous ones on the time axis); the plan is the output's, so every
    component of a forward gets the same frequencies and the references keep their positions ("keep").
    """

    def call_inputs(self, args, kwargs, parameters):
        return {"shape_list": argument("shape_list", args, kwargs, parameters)}

    def forward(self, start, stop):
        start, stop = tuple(int(n) for n in start), tuple(int(n) for n in stop)
        shapes = getattr(self.call_state(), "inputs", {}).get("shape_list")
        output = tuple(shapes[0][0]) if shapes else tuple(b - a for a, b in zip(start, stop, strict=True))
        plan = self.plan(tuple(int(n) for n in output[1:]))
        if plan is None:
            return self.original(start, stop)
        scalings = self.axis_scalings(plan)

        def build():
            positions = [torch.arange(a, b, dtype=torch.float64) for a, b in zip(start, stop, strict=True)]
            return grid_table(
                self.setup.dims,
                self.setup.thetas,
                scalings,
                plan.logit_scale,
                positions,
                torch.device("cpu"),
                full=True,
            )

        return self.cached((start, stop, plan_key(plan)), build)

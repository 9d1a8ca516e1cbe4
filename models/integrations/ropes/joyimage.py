"""JoyImage Edit's and Edit Plus's ropes, methods of the models: `get_rotary_pos_embed(vis_rope_size, txt_rope_size)`.

It returns ((cos, sin), text) on the CPU: cos, sin (frames * h * w, head_dim) at positions 0 .. n - 1
per axis (t, y, x of rope_dim_list channels, head_dim // 3 each when None; theta `theta`, 256 by
default), row-major, each pair's value twice; text None, or with rope_type "mrope" the same format
for txt_rope_size tokens at m + 1, m + 2, ... on every axis, m the largest grid index. The edit
pipeline stacks the reference image and the output (both at the output's size) on the time axis as
items (frames), an index axis kept as trained; the methods act on y and x, on the text's y and x
columns too (its positions stay the model's, after the grid). Edit Plus packs the output and each
reference image (at its own size) one after the other on the time axis; the methods follow the
output's y, x and the references keep their positions. The replacement is installed as an
instance attribute shadowing the method (extrapolation.py). Time: both pipelines pass
FlowMatchEulerDiscreteScheduler's timesteps, sigma * 1000.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import ClassVar

import torch

from ..family import Family, RopeAxes, Timestep, TrainedGrid
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


# -- families ------------------------------------------------------------------------------------------------


def joyimage_axes_dims(config) -> tuple[int, int, int]:
    dims = config["rope_dim_list"]
    if dims is None:
        head_dim = int(config["hidden_size"]) // int(config["num_attention_heads"])
        return (head_dim // 3,) * 3
    return tuple(int(d) for d in dims)


JOYIMAGE_EDIT = Family(
    name="joyimage-edit",
    title="JoyImage Edit",
    classes=("JoyImageEditTransformer3DModel",),
    kind=JoyImageKind(),
    axes=("reference", "spatial", "spatial"),
    rope_axes=RopeAxes(dims=joyimage_axes_dims, theta="theta"),
    trained=(
        TrainedGrid(
            (64, 64),
            "JoyImage Edit: JoyImageEditPipeline resizes to its resolution buckets of about 1024 x 1024 px of area "
            "(JoyImageEditImageProcessor, basesize 1024, from 512 x 2048 to 2048 x 512 px; the model card was "
            "not read); "
            "1024 x 1024 px is 64 x 64 tokens (VAE 8x, patch (1, 2, 2)). A non-square bucket passes its own, e.g. "
            "trained_grid=(48, 80) for 768 x 1280 px",
        ),
    ),
    time=Timestep(1000.0, "JoyImageEditPipeline passes the scheduler's timesteps, sigma * 1000"),
    rope_attr="get_rotary_pos_embed",
    pipelines=("JoyImageEditPipeline",),
    no_time_axis="stacks its reference image and output as items on the time axis",
    no_latent=("its hidden_states stack the image being made with the reference images, each on a grid of its own"),
)

JOYIMAGE_EDIT_PLUS = replace(
    JOYIMAGE_EDIT,
    name="joyimage-edit-plus",
    title="JoyImage Edit Plus",
    classes=("JoyImageEditPlusTransformer3DModel",),
    kind=JoyImageRangeKind(),
    rope_attr="_get_rotary_pos_embed_for_range",
    trained=(
        TrainedGrid(
            (64, 64),
            "JoyImage Edit Plus: JoyImageEditPlusPipeline outputs 1024 x 1024 px without a reference image and "
            "otherwise the last reference's bucket of about 1024 x 1024 px of area (JoyImageEditImageProcessor, "
            "basesize 1024; the model card was not read); 64 x 64 tokens (VAE 8x, patch (1, 2, 2))",
        ),
    ),
    time=Timestep(1000.0, "JoyImageEditPlusPipeline passes the scheduler's timesteps, sigma * 1000"),
    pipelines=("JoyImageEditPlusPipeline",),
    no_time_axis="packs its output and reference images one after the other on the time axis",
)

FAMILIES = (JOYIMAGE_EDIT, JOYIMAGE_EDIT_PLUS)

"""JoyImage Edit and Edit Plus, whose ropes are methods of the models; see `rope_kinds/joyimage.py`.

Axes (t, y, x) of rope_dim_list channels (head_dim // 3 each when None), theta `theta` (256 by
default). JoyImageEditPipeline stacks the reference image and the output as items on the time axis,
both at the output's size: the time axis is an index axis kept as trained, the methods act on y and
x. Edit Plus packs the output and each reference image (at its own size) one after the other on the
time axis; the methods follow the output's y, x and the references keep their positions. Time: both
pipelines pass FlowMatchEulerDiscreteScheduler's timesteps, sigma * 1000.
"""

from __future__ import annotations

from dataclasses import replace

from ..family import Family, RopeAxes, Timestep, TrainedGrid
from ..ropes.joyimage import JoyImageKind, JoyImageRangeKind


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
    test="test_families.py, test_joyimage.py",
    no_time_axis="stacks its reference image and output as items on the time axis",
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

"""JoyImage Edit: its rope is a method of the model, shadowed on the instance while extrapolated."""

import copy

import torch

from axialrope.models import apply_extrapolation


def test_the_method_is_shadowed_while_applied_and_the_class_method_comes_back(tiny):
    small = tiny.TINY["joyimage-edit"]
    model = small.make()
    grid = (8, 8)
    plain = tiny.run(model, small, grid, 500.0)
    handle = apply_extrapolation(model, "ntk", trained_grid=small.trained)
    assert vars(model)["get_rotary_pos_embed"] is handle.rope
    assert "get_rotary_pos_embed" not in dict(model.named_children())  # not a child: the model's modules unchanged
    changed = tiny.run(model, small, grid, 500.0)
    twin = copy.deepcopy(model)  # the copy carries its own shadow, bound to the copy
    assert torch.equal(tiny.run(twin, small, grid, 500.0), changed)
    handle.remove()
    assert "get_rotary_pos_embed" not in vars(model)
    assert model.get_rotary_pos_embed.__func__ is type(model).get_rotary_pos_embed
    assert torch.equal(tiny.run(model, small, grid, 500.0), plain) and not torch.equal(changed, plain)

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


def test_edit_plus_references_take_the_outputs_frequencies_at_their_own_positions(tiny, reference):
    """The output is 8 x 8 tokens (2x the tiny trained 4 x 4): PI halves y's and x's frequencies for every
    component, the reference image (1 x 3 x 5 tokens, after the output on the time axis) included."""
    small = tiny.TINY["joyimage-edit-plus"]
    model = small.make()
    handle = apply_extrapolation(model, "pi", trained_grid=small.trained)
    seen = []
    hook = handle.rope.register_forward_hook(lambda m, a, out: seen.append(out))
    tiny.run(model, small, (8, 8), 500.0)
    hook.remove()
    handle.remove()
    t, h, w = 1, 3, 5  # tiny_video_own.JOYIMAGE_REFERENCE
    positions = reference.grid_indices((t, h, w)) + [1, 0, 0]  # after the output's one frame
    freqs = [reference.base_freqs(4, 256), reference.base_freqs(6, 256) / 2, reference.base_freqs(6, 256) / 2]
    expected = reference.interleaved([positions[:, a, None] * f for a, f in enumerate(freqs)], [1.0] * 3)
    assert len(seen) == 2
    for ours, theirs in zip(seen[1], expected, strict=True):
        torch.testing.assert_close(ours, theirs, rtol=0, atol=2e-6)

"""Qwen-Image-Layered, the qwen-image family's other rope (QwenEmbedLayer3DRope, `use_layer3d_rope`):
the harness's checks on its tiny config (tiny_kin.QWEN_LAYERED), its positions written out in float64."""

import math

import numpy as np
import pytest
import torch

from axialrope.models import apply_extrapolation
from axialrope.models.integrations.registry import family_of, methods_for


@pytest.fixture
def layered(tiny):
    import tiny_kin

    return tiny_kin, tiny_kin.QWEN_LAYERED


def _table(model, small, grid, timestep, tiny):
    return tiny.rope_table(model, family_of(model), small, grid, timestep)


def layered_reference(family, model, grid, trained, method, t, reference, authors, layers, text=4):
    """Complex (image, text) tables: generated images at frames 0 .. layers, the condition image at frame -1,
    y and x centred; `text` tokens from max(h // 2, w // 2, layers + 1) on all three axes; every token by the
    method."""
    per_axis = reference._per_axis(family, model.config, method, grid, trained, t, authors)
    gain = math.sqrt(reference.yarn_logit_scale(method, trained, grid, t))
    yx = reference.grid_indices(grid) - np.array([grid[0] - grid[0] // 2, grid[1] - grid[1] // 2])
    frames = [*range(layers + 1), -1]
    image = np.concatenate([np.pad(yx, ((0, 0), (1, 0)), constant_values=f) for f in frames])
    start = max(grid[0] // 2, grid[1] // 2, layers + 1)
    tables = []
    for where in (image, np.repeat((start + np.arange(float(text)))[:, None], 3, axis=1)):
        cos, sin = reference.interleaved(
            [where[:, a, None] * f for a, (f, _) in enumerate(per_axis)], [g * gain for _, g in per_axis]
        )
        tables.append(torch.complex(cos[:, ::2], sin[:, ::2]))
    return tables


def test_layered_is_bit_identical_at_the_trained_grid_and_remove_restores_it(layered, tiny):
    _, small = layered
    model = small.make()
    family = family_of(model)
    assert family.trained_grid(model.config).grid == (64, 64)  # the Layered grid, not Qwen-Image's 83 x 83
    bigger = tuple(2 * n for n in small.trained)
    plain = {grid: tiny.run(model, small, grid, 0.6) for grid in (small.trained, bigger)}
    for method in methods_for(family):
        handle = apply_extrapolation(model, method, trained_grid=small.trained)
        assert torch.equal(tiny.run(model, small, small.trained, 0.6), plain[small.trained]), method
        changed = tiny.run(model, small, bigger, 0.6)
        handle.remove()
        assert torch.equal(tiny.run(model, small, bigger, 0.6), plain[bigger]), method
        if method not in ("none", "riflex"):
            assert not torch.equal(changed, plain[bigger]), method


@pytest.mark.parametrize("method", ["pi", "ntk", "yarn", "kappa-yarn"])
def test_layered_tables_beyond_the_trained_grid_are_the_formula(layered, method, tiny, reference, authors):
    module, small = layered
    model = small.make()
    family = family_of(model)
    grid = tuple(2 * n for n in small.trained)
    handle = apply_extrapolation(model, method, trained_grid=small.trained)
    ours = _table(model, small, grid, 0.6, tiny)
    handle.remove()
    expected = layered_reference(family, model, grid, small.trained, method, 0.6, reference, authors, module.LAYERS)
    for a, b in zip(ours, expected, strict=True):
        assert a.shape == b.shape and a.dtype == b.dtype
        torch.testing.assert_close(a, b, rtol=0, atol=2e-6)


def test_layered_own_table_is_the_formula_at_the_trained_grid(layered, tiny, reference, authors):
    module, small = layered
    model = small.make()
    own = _table(model, small, small.trained, 0.5, tiny)
    expected = layered_reference(
        family_of(model), model, small.trained, small.trained, "none", 0.5, reference, authors, module.LAYERS
    )
    for a, b in zip(own, expected, strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-5)


# -- Qwen-Image 2.1: condition images in the joint sequence ----------------------------------------------------


def _edit_layout(grid, condition=(2, 4), text=(3, 2)):
    """img_shapes and image_pad_mask of text, a condition image, more text, then the generated image."""
    shapes = [(1, *condition), (1, *grid)]
    mask = [False] * text[0] + [True] * (condition[0] * condition[1]) + [False] * text[1] + [True] * (grid[0] * grid[1])
    return shapes, torch.tensor(mask)


def test_qwen21_positions_are_the_models_own_with_a_condition_image(tiny):
    from axialrope.models.integrations.ropes.base import axial_table
    from axialrope.models.integrations.ropes.qwen_image import joint_positions

    model = tiny.TINY["qwen-image-2.1"].make()
    shapes, mask = _edit_layout((5, 4))
    own = model.pos_embed(shapes, mask, device=torch.device("cpu"))
    cos, sin = axial_table((4, 6, 6), (10000.0,) * 3, (None,) * 3, 1.0, joint_positions(shapes, mask.tolist(), False))
    torch.testing.assert_close(own, torch.complex(cos, sin), rtol=0, atol=1e-5)


@pytest.mark.parametrize("rule", ["cover", "keep"])
def test_qwen21_condition_image_beyond_the_trained_grid_follows_the_reference_rule(rule, tiny):
    from axialrope.models.integrations.ropes.qwen_image import joint_positions

    model = tiny.TINY["qwen-image-2.1"].make()
    shapes, mask = _edit_layout((10, 8))
    at_trained = model.pos_embed(*_edit_layout((5, 4)), device=torch.device("cpu"))
    handle = apply_extrapolation(model, "pi", trained_grid=(5, 4), reference=rule)
    assert torch.equal(model.pos_embed(*_edit_layout((5, 4)), device=torch.device("cpu")), at_trained)
    ours = model.pos_embed(shapes, mask, device=torch.device("cpu"))
    handle.remove()
    where = joint_positions(shapes, mask.tolist(), rule == "cover")
    condition = slice(3, 3 + 8)
    spans = where[condition, 1].min(), where[condition, 1].max()
    # cover: each of the condition image's 2 rows covers 5 of the output's 10 (centres -3 and 2); keep: -1 and 0
    assert spans == ((-3.0, 2.0) if rule == "cover" else (-1.0, 0.0))
    pi = 1 / 2  # PI's divisor on y and x: 10 x 8 over 5 x 4
    inv = 10000.0 ** (-torch.arange(0, 6, 2, dtype=torch.float64) / 6)
    expected_y = torch.polar(torch.ones(3, dtype=torch.float64), where[condition, 1, None][0] * inv * pi)
    torch.testing.assert_close(ours[condition][0, 2:5].to(torch.complex128), expected_y, rtol=0, atol=2e-6)


def test_layered_text_keeps_its_trained_table_under_dype(layered, tiny):
    """DyPE's Qwen rule (the default dype_variant): text as trained, from max(h // 2, w // 2, layers + 1)."""
    module, small = layered
    model = small.make()
    grid = tuple(2 * n for n in small.trained)
    start = max(grid[0] // 2, grid[1] // 2, module.LAYERS + 1)
    handle = apply_extrapolation(model, "dype-yarn", trained_grid=small.trained)
    image, text = _table(model, small, grid, 0.6, tiny)
    handle.remove()
    assert torch.equal(text, model.pos_embed.pos_freqs[start : start + module.TEXT])
    assert not torch.equal(image, _table(model, small, grid, 0.6, tiny)[0])

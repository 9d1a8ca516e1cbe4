"""Qwen-Image-Layered, the qwen-image family's other rope (QwenEmbedLayer3DRope, `use_layer3d_rope`):
the harness's checks on its tiny config (tiny_rega.QWEN_LAYERED), its positions written out in float64."""

import math

import numpy as np
import pytest
import torch

from axialrope.models import apply_extrapolation
from axialrope.models.integrations.registry import family_of, methods_for


@pytest.fixture
def layered(tiny):
    import tiny_rega

    return tiny_rega, tiny_rega.QWEN_LAYERED


def _table(model, small, grid, timestep, tiny):
    return tiny.rope_table(model, family_of(model), small, grid, timestep)


def layered_reference(family, model, grid, trained, method, t, reference, authors, layers):
    """Complex (image, text) tables: generated images at frames 0 .. layers, the condition image at frame -1,
    y and x centred; text from max(h // 2, w // 2, layers + 1) on all three axes; every token by the method."""
    per_axis = reference._per_axis(family, model.config, method, grid, trained, t, authors)
    gain = math.sqrt(reference.yarn_logit_scale(method, trained, grid, t))
    yx = reference.grid_indices(grid) - np.array([grid[0] - grid[0] // 2, grid[1] - grid[1] // 2])
    frames = [*range(layers + 1), -1]
    image = np.concatenate([np.pad(yx, ((0, 0), (1, 0)), constant_values=f) for f in frames])
    start = max(grid[0] // 2, grid[1] // 2, layers + 1)
    text = np.repeat((start + np.arange(5.0))[:, None], 3, axis=1)
    tables = []
    for where in (image, text):
        cos, sin = reference.interleaved([where[:, a, None] * f for a, (f, _) in enumerate(per_axis)],
                                         [g * gain for _, g in per_axis])
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
    expected = layered_reference(family_of(model), model, small.trained, small.trained, "none", 0.5, reference,
                                 authors, module.LAYERS)
    for a, b in zip(own, expected, strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=1e-5)

"""apply_extrapolation is exact where it must be: at the trained grid, and after remove()."""

import pytest
import torch

from axialrope import EXTRAPOLATION_METHODS, Extrapolation
from axialrope.models import apply_extrapolation


def methods_for(case):
    return [m for m in EXTRAPOLATION_METHODS if m != "riflex" or case.video]


def _state(model):
    """What apply_extrapolation may change on a transformer, to compare before and after."""
    return ({name: child for name, child in model.named_children()}, dict(model._forward_pre_hooks),
            dict(model._forward_pre_hooks_with_kwargs), vars(model).get("_axialrope_extrapolation"))


@pytest.mark.parametrize("entropy_scaling", [False, True])
def test_every_method_is_bit_identical_at_and_inside_the_trained_grid(case, entropy_scaling):
    model = case.make()
    smaller = tuple(max(1, n - 1) for n in case.trained)
    timestep = 0.6 * case.timestep_scale
    plain = {grid: case.run(model, grid, timestep) for grid in (case.trained, smaller)}
    for method in methods_for(case):
        handle = apply_extrapolation(model, Extrapolation(method, entropy_scaling=entropy_scaling),
                                     trained_grid=case.trained)
        for grid, expected in plain.items():
            assert torch.equal(case.run(model, grid, timestep), expected), (method, grid)
        handle.remove()


def test_remove_restores_the_model_bit_for_bit(case):
    model = case.make()
    before = _state(model)
    grid, timestep = case.bigger(), 0.8 * case.timestep_scale
    plain = case.run(model, grid, timestep)
    for method in methods_for(case):
        handle = apply_extrapolation(model, method, trained_grid=case.trained)
        changed = case.run(model, grid, timestep)
        handle.remove()
        assert handle.removed and _state(model) == before, method
        assert torch.equal(case.run(model, grid, timestep), plain), method
        if method not in ("none", "riflex"):  # riflex stays as trained until past N_k, longer than this grid
            assert not torch.equal(changed, plain), method


def test_applying_twice_or_removing_twice_is_an_error_and_changes_nothing(case):
    model = case.make()
    handle = apply_extrapolation(model, "pi", trained_grid=case.trained)
    during = _state(model)
    with pytest.raises(ValueError, match="already applied"):
        apply_extrapolation(model, "ntk", trained_grid=case.trained)
    assert _state(model) == during
    handle.remove()
    after = _state(model)
    with pytest.raises(RuntimeError, match="already removed"):
        handle.remove()
    assert _state(model) == after


def test_the_handle_is_a_context_manager(case):
    model = case.make()
    grid, timestep = case.bigger(), 0.5 * case.timestep_scale
    plain = case.run(model, grid, timestep)
    with apply_extrapolation(model, "ntk", trained_grid=case.trained) as handle:
        assert not torch.equal(case.run(model, grid, timestep), plain)
        assert handle.family.name == case.name and handle.trained_grid == case.trained
    assert handle.removed and torch.equal(case.run(model, grid, timestep), plain)

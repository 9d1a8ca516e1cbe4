"""The harness every registered family passes, on its tiny config (tiny_families.py):

- every method is bit-identical to the untouched model at and inside the trained grid;
- `remove()` restores the model bit for bit, and every method but none (and riflex before N_k)
  changes the output beyond the trained grid;
- each method's table beyond the trained grid is its formula, written out in float64
  (reference_tables.py, one function per rope kind);
- the timestep is read by the family's convention.
Adding a family here is its declaration plus its entry in tiny_families.TINY.
"""

import sys

import pytest
import torch

from axialrope import Extrapolation
from axialrope.models import apply_extrapolation
from axialrope.models.integrations.registry import FAMILIES, methods_for, refusal

NAMES = [family.name for family in FAMILIES]
TINY = sys.modules["tiny_families"].TINY  # loaded by conftest.py
PARAMS = [pytest.param(name, marks=pytest.mark.slow) if name in TINY and TINY[name].slow else name for name in NAMES]
FORMULA_METHODS = ["pi", "ntk", "yarn", "dype-ntk", "dype-yarn", "kappa-pi", "kappa-ntk", "kappa-yarn"]
T = 0.6  # the diffusion time of the tables under test


@pytest.fixture(params=PARAMS)
def member(request, tiny):
    """(family, its tiny config)."""
    return tiny.FAMILY[request.param], tiny.TINY[request.param]


def _state(model):
    """What apply_extrapolation may change on a model, to compare before and after."""
    return (
        {name: child for name, child in model.named_children()},
        dict(model._forward_pre_hooks),
        dict(model._forward_pre_hooks_with_kwargs),
        dict(model._forward_hooks),
        vars(model).get("_axialrope_extrapolation"),
    )


def test_every_registered_family_has_a_tiny_config(tiny):
    missing = [name for name in NAMES if name not in tiny.TINY]
    assert not missing, f"add a tiny config to tests/models/integrations/tiny_families.py for {missing}"


@pytest.mark.parametrize("entropy_scaling", [False, True])
def test_every_method_is_bit_identical_at_and_inside_the_trained_grid(member, entropy_scaling, tiny):
    family, small = member
    model = small.make()
    if entropy_scaling and refusal(family, "none", entropy_scaling=True):  # a linear attention: no logit scale
        with pytest.raises(ValueError, match="entropy scaling"):
            apply_extrapolation(model, Extrapolation("none", entropy_scaling=True), trained_grid=small.trained)
        return
    inside = small.inside or tuple(max(1, n - 1) for n in small.trained)
    timestep = family.time.timestep_at(0.6)
    plain = {grid: tiny.run(model, small, grid, timestep) for grid in (small.trained, inside)}
    for method in methods_for(family):
        handle = apply_extrapolation(
            model, Extrapolation(method, entropy_scaling=entropy_scaling), trained_grid=small.trained
        )
        for grid, expected in plain.items():
            assert torch.equal(tiny.run(model, small, grid, timestep), expected), (method, grid)
        handle.remove()


def test_remove_restores_the_model_and_every_method_acts_beyond_the_trained_grid(member, tiny):
    family, small = member
    model = small.make()
    before = _state(model)
    grid, timestep = tuple(2 * n for n in small.trained), family.time.timestep_at(0.8)
    plain = tiny.run(model, small, grid, timestep)
    for method in methods_for(family):
        handle = apply_extrapolation(model, method, trained_grid=small.trained)
        changed = tiny.run(model, small, grid, timestep)
        handle.remove()
        assert handle.removed and _state(model) == before, method
        assert torch.equal(tiny.run(model, small, grid, timestep), plain), method
        if method not in ("none", "riflex"):  # riflex stays as trained until past N_k, longer than this grid
            assert not torch.equal(changed, plain), method


@pytest.mark.parametrize("method", FORMULA_METHODS)
def test_each_method_gives_its_formula_beyond_the_trained_grid(member, method, tiny, reference, authors):
    family, small = member
    if method not in methods_for(family):
        pytest.skip(f"{method} does not apply to {family.title} (test_extrapolation_errors.py)")
    if type(family.kind).__name__ == "LTXKind" and method not in reference.LTX_CHECKED_METHODS:
        pytest.skip("LTX-Video's banded methods: through the core representation (test_extrapolation_tables)")
    model = small.make()
    grid, timestep = tuple(2 * n for n in small.trained), family.time.timestep_at(T)
    plain = tiny.rope_table(model, family, small, grid, timestep)
    handle = apply_extrapolation(model, method, trained_grid=small.trained)
    ours = tiny.rope_table(model, family, small, grid, timestep)
    handle.remove()
    expected = reference.reference_for(family.kind)(
        family, model, small.inputs(model, grid, timestep), grid, small.trained, method, timestep, authors
    )
    for a, b in zip(ours, expected, strict=True):
        assert a.shape == b.shape and a.dtype == b.dtype
        torch.testing.assert_close(a, b, rtol=0, atol=2e-6)
    assert not all(torch.equal(a, b) for a, b in zip(ours, plain, strict=True))


def test_the_timestep_is_read_per_family_convention(member, tiny):
    family, small = member
    model = small.make()
    dependent = [m for m in ("kappa-ntk", "kappa-pi") if m in methods_for(family)]  # t-dependent methods
    handle = apply_extrapolation(model, dependent[0], trained_grid=small.trained)
    tables = {}
    grid = tuple(2 * n for n in small.trained)
    for t in (1.0, 0.25):
        tables[t] = tiny.rope_table(model, family, small, grid, family.time.timestep_at(t))
        assert handle.time.value() == pytest.approx(t, abs=1e-3)  # t from the timestep by the family's rule
    handle.remove()
    # tables differ (their parts, or the rows of a rope returning one tensor, whose first row may sit at the origin)
    assert not all(torch.equal(a, b) for a, b in zip(tables[1.0], tables[0.25], strict=True))


def test_applying_twice_or_removing_twice_is_an_error_and_changes_nothing(member):
    family, small = member
    model = small.make()
    handle = apply_extrapolation(model, "pi", trained_grid=small.trained)
    during = _state(model)
    with pytest.raises(ValueError, match="already applied"):
        apply_extrapolation(model, "ntk", trained_grid=small.trained)
    assert _state(model) == during
    handle.remove()
    after = _state(model)
    with pytest.raises(RuntimeError, match="already removed"):
        handle.remove()
    assert _state(model) == after


def test_the_handle_is_a_context_manager(member, tiny):
    family, small = member
    model = small.make()
    grid, timestep = tuple(2 * n for n in small.trained), family.time.timestep_at(0.5)
    plain = tiny.run(model, small, grid, timestep)
    method = next(m for m in ("ntk", "pi") if m in methods_for(family))
    with apply_extrapolation(model, method, trained_grid=small.trained) as handle:
        assert not torch.equal(tiny.run(model, small, grid, timestep), plain)
        assert handle.family is family and handle.trained_grid == small.trained
    assert handle.removed and torch.equal(tiny.run(model, small, grid, timestep), plain)


def test_the_declaration_describes_the_models_own_rope(member, tiny, reference, authors):
    """At the trained grid the model's own table is the reference formula with the declared dims,
    theta, positions and format (the model computes in float32; LTX-Video's and LTX-2's angles reach (pi/2) theta)."""
    family, small = member
    model = small.make()
    timestep = family.time.timestep_at(0.5)
    own = tiny.rope_table(model, family, small, small.trained, timestep)
    expected = reference.reference_for(family.kind)(
        family,
        model,
        small.inputs(model, small.trained, timestep),
        small.trained,
        small.trained,
        "none",
        timestep,
        authors,
    )
    tolerance = 2e-3 if type(family.kind).__name__ in ("LTXKind", "LTX2Kind") else 1e-5
    if type(family.kind).__name__ in ("InterleavedMRopeKind", "Cosmos3Kind"):  # float32 angles of far positions:
        # Ideogram 4's image sits at 65536, Cosmos 3's generated rows at 15000 past the text
        tolerance = 5e-3
    for a, b in zip(own, expected, strict=True):
        torch.testing.assert_close(a.to(b.dtype), b, rtol=0, atol=tolerance)

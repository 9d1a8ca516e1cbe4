"""A method on the DiT through its call plan: each forward plans RoPE from its own grid and timestep, and that
state lives with the call (nested calls, threads, deep copies), as the families' does (test_call_state.py)."""

import copy
import dataclasses
import threading

import pytest
import torch

from axialrope import Extrapolation
from axialrope.models.axial_dit.extrapolation import DiTExtrapolation
from axialrope.models.call_plan import Timestep

DYPE = Extrapolation("dype-yarn", entropy_scaling=True)
OUTER, INNER = (900.0, (8, 8)), (200.0, (8, 12))  # (timestep, token grid), both beyond the trained (4, 4)


def _inputs(timestep, grid):
    x = torch.randn(2, 3, *(2 * n for n in grid), generator=torch.Generator().manual_seed(1))  # patch 2
    return x, torch.full((2,), timestep)


def _run(model, timestep, grid):
    return model(*_inputs(timestep, grid), class_labels=torch.tensor([0, 3])).sample


def _planned(model, method, timestep, grid, at_noise=1000.0):
    """The config the call should get: the method's plan at t = timestep / at_noise clipped to [0, 1]; the
    model's own config itself where the plan changes nothing."""
    own = model.own_rope_config
    plan = method.plan(model.base_grid, grid, min(max(timestep / at_noise, 0.0), 1.0))
    if all(s is None for s in plan.scalings) and plan.logit_scale == 1.0:
        return own
    return dataclasses.replace(own, scaling=plan.scalings, attention_scale=own.attention_scale * plan.logit_scale)


def _with_config(model, config, timestep, grid):
    """The output with `config` assigned to the model, the way samplers swapped it before call plans."""
    own = model.own_rope_config
    model.rope_config = config
    try:
        return _run(model, timestep, grid)
    finally:
        model.rope_config = own


def _seen_configs(model):
    """Records the model's rope_config inside each forward (from its first block's pre-hook)."""
    seen = []
    model.blocks[0].register_forward_pre_hook(lambda module, args: seen.append(model.rope_config))
    return seen


def test_each_forward_plans_from_its_own_grid_and_timestep(make_model):
    model = make_model()
    own = model.rope_config
    seen = _seen_configs(model)
    expected = {state: _with_config(model, _planned(model, DYPE, *state), *state) for state in (OUTER, INNER)}
    seen.clear()
    with DiTExtrapolation(model, DYPE, grid=OUTER[1]).attach():
        outputs = {state: _run(model, *state) for state in (OUTER, INNER)}
        assert model.rope_config is own and model.own_rope_config is own  # outside a forward: the model's own
    assert seen == [_planned(model, DYPE, *OUTER), _planned(model, DYPE, *INNER)]
    assert all(torch.equal(outputs[state], expected[state]) for state in (OUTER, INNER))
    assert model.rope_config is own and not model._forward_pre_hooks and not model._forward_hooks


@pytest.mark.parametrize("timestep", [1000.0, 999.0, 437.5, 1.0, 0.0, 1500.0, -3.0])
def test_the_timestep_becomes_t_by_the_rule_clipped(make_model, timestep):
    model = make_model()
    seen = _seen_configs(model)
    method = Extrapolation("kappa-yarn")
    with DiTExtrapolation(model, method).attach():
        _run(model, timestep, (8, 6))
    with DiTExtrapolation(model, method, Timestep(at_noise=2000)).attach():  # a scheduler of 2000 steps
        _run(model, timestep, (8, 6))
    assert seen == [_planned(model, method, timestep, (8, 6)), _planned(model, method, timestep, (8, 6), 2000.0)]


def test_a_static_method_gives_every_call_of_a_grid_one_config(make_model):
    model = make_model()
    seen = _seen_configs(model)
    with DiTExtrapolation(model, Extrapolation("yarn")).attach():
        for timestep in (900.0, 10.0):
            _run(model, timestep, (8, 8))
        _run(model, 10.0, (4, 4))  # the trained grid: the model's own config itself
    assert seen[0] is seen[1] and seen[0].scaling is not None and seen[2] is model.rope_config


def test_a_call_nested_in_another_gets_its_own_state(make_model):
    model = make_model()
    expected = {state: _with_config(model, _planned(model, DYPE, *state), *state) for state in (OUTER, INNER)}
    inner = []

    def call_inside(module, args):  # runs the model again once its call began, before its forward reads RoPE
        if not inner:
            inner.append(None)
            inner[0] = _run(model, *INNER)

    model.register_forward_pre_hook(call_inside)  # the plan's pre-hook runs before every other
    with DiTExtrapolation(model, DYPE).attach():
        outer = _run(model, *OUTER)
    assert torch.equal(outer, expected[OUTER]) and torch.equal(inner[0], expected[INNER])


def test_calls_in_two_threads_get_their_own_state(make_model):
    model = make_model()
    expected = {state: _with_config(model, _planned(model, DYPE, *state), *state) for state in (OUTER, INNER)}
    inside, done, results = threading.Event(), threading.Event(), {}

    def wait_in_first(module, args):  # the first thread pauses once its call began, until the second has finished
        if threading.current_thread().name == "first":
            inside.set()
            assert done.wait(timeout=60)

    model.register_forward_pre_hook(wait_in_first)

    def first():
        results[OUTER] = _run(model, *OUTER)

    with DiTExtrapolation(model, DYPE).attach():
        thread = threading.Thread(target=first, name="first")
        thread.start()
        assert inside.wait(timeout=60)
        results[INNER] = _run(model, *INNER)
        done.set()
        thread.join(timeout=60)
    assert all(torch.equal(results[state], expected[state]) for state in (OUTER, INNER))


def test_a_deep_copy_follows_its_own_calls_and_its_own_plan(make_model):
    model = make_model()
    plain = _run(model, *INNER)
    handle = DiTExtrapolation(model, DYPE).attach()
    clone = copy.deepcopy(model)
    expected = _run(model, *INNER)
    assert not torch.equal(expected, plain)
    handle.remove()  # the original's plan: the copy keeps its own
    assert torch.equal(_run(clone, *INNER), expected) and torch.equal(_run(model, *INNER), plain)


def test_an_interrupted_forward_leaves_no_state_once_the_plan_is_removed(make_model):
    model = make_model()
    own = model.rope_config

    def interrupt(module, args):
        raise KeyboardInterrupt  # not an Exception: torch skips the forward hook that pops the state

    hook = model.blocks[0].register_forward_pre_hook(interrupt)
    with pytest.raises(KeyboardInterrupt), DiTExtrapolation(model, DYPE).attach():
        _run(model, *OUTER)
    hook.remove()
    assert model.rope_config is own


def test_one_plan_at_a_time(make_model):
    model = make_model()
    with DiTExtrapolation(model, DYPE).attach():
        with pytest.raises(ValueError, match="already carries a call plan"):
            DiTExtrapolation(model, Extrapolation("pi")).attach()


def test_a_sincos_model_takes_entropy_scaling_only(make_model):
    model = make_model(position_encoding="sincos")
    with pytest.raises(ValueError, match="uses absolute sin-cos positions; use 'none'"):
        DiTExtrapolation(model, Extrapolation("pi"))
    method = Extrapolation("none", entropy_scaling=True)
    scale = method.plan(model.base_grid, (8, 8)).logit_scale
    expected = _with_config(model, dataclasses.replace(model.rope_config, attention_scale=scale), 500.0, (8, 8))
    with DiTExtrapolation(model, method).attach():
        assert torch.equal(_run(model, 500.0, (8, 8)), expected)
    assert not torch.equal(_run(model, 500.0, (8, 8)), expected)


def test_a_method_that_does_not_suit_the_grid_is_refused_before_any_call(make_model):
    model = make_model()
    with pytest.raises(ValueError, match="riflex"):
        DiTExtrapolation(model, Extrapolation("riflex"), grid=(8, 8))
    assert not model._forward_pre_hooks

"""Each forward's state (its timestep, its whole ids, sega's latent) lives with the call: a call nested in another,
a call in another thread and a deep copy of a patched model each get their own output."""

import copy
import threading

import pytest
import torch

from axialrope.models import apply_extrapolation

OUTER, INNER = (0.9, (8, 8)), (0.2, (8, 12))  # (t, Flux token grid), both beyond the trained (4, 4)


def _flux(tiny, method="dype-yarn"):
    model = tiny.make_flux()
    return model, apply_extrapolation(model, method, trained_grid=(4, 4))


def _alone(model, tiny, t, grid):
    return tiny.run(model, tiny.TINY["flux"], grid, t)


@pytest.mark.parametrize("method", ["dype-yarn", "pi", "sega"])  # sega: each call's own latent
def test_a_call_nested_in_another_gets_its_own_state(tiny, method):
    model, _ = _flux(tiny, method)
    expected = {state: _alone(model, tiny, *state) for state in (OUTER, INNER)}
    inner = []

    def call_inside(module, args):  # runs the model again in the middle of a forward, before its rope runs
        if not inner:
            inner.append(None)
            inner[0] = _alone(model, tiny, *INNER)

    hook = model.x_embedder.register_forward_pre_hook(call_inside)
    outer = _alone(model, tiny, *OUTER)
    hook.remove()
    assert torch.equal(outer, expected[OUTER]) and torch.equal(inner[0], expected[INNER])


@pytest.mark.parametrize("method", ["dype-yarn", "sega"])
def test_calls_in_two_threads_get_their_own_state(tiny, method):
    model, _ = _flux(tiny, method)
    expected = {state: _alone(model, tiny, *state) for state in (OUTER, INNER)}
    inside, done, results = threading.Event(), threading.Event(), {}

    def wait_in_first(module, args):  # the first thread pauses mid-forward until the second has finished
        if threading.current_thread().name == "first":
            inside.set()
            assert done.wait(timeout=60)

    hook = model.x_embedder.register_forward_pre_hook(wait_in_first)

    def first():
        results[OUTER] = _alone(model, tiny, *OUTER)

    thread = threading.Thread(target=first, name="first")
    thread.start()
    assert inside.wait(timeout=60)
    results[INNER] = _alone(model, tiny, *INNER)
    done.set()
    thread.join(timeout=60)
    hook.remove()
    assert all(torch.equal(results[state], expected[state]) for state in (OUTER, INNER))


def test_a_deep_copy_of_a_patched_model_follows_its_own_calls(tiny):
    model, handle = _flux(tiny)
    clone = copy.deepcopy(model)
    expected = _alone(model, tiny, *INNER)
    _alone(model, tiny, *OUTER)  # the original's latest call is at another time and grid
    assert torch.equal(_alone(clone, tiny, *INNER), expected)
    clone._axialrope_extrapolation.remove()  # the copy's own patch: the original stays extrapolated
    handle_plain = _alone(clone, tiny, *INNER)
    assert not torch.equal(handle_plain, expected) and torch.equal(_alone(model, tiny, *INNER), expected)
    handle.remove()
    assert torch.equal(_alone(model, tiny, *INNER), handle_plain)

"""SEGA on the project's DiT: each forward plans from the spectrum of its own latent, on its own token grid."""

import dataclasses

import torch

from axialrope import Extrapolation
from axialrope.models.axial_dit.extrapolation import DiTExtrapolation

SEGA = Extrapolation("sega")


def _latent(grid, seed=1, frames=None):
    """A latent (2, 3, 2h, 2w) (patch 2), or (2, 3, frames, 2h, 2w) for a video model."""
    shape = (2, 3, *(() if frames is None else (frames,)), *(2 * n for n in grid))
    return torch.randn(shape, generator=torch.Generator().manual_seed(seed))


def _run(model, x):
    return model(x, torch.full((2,), 500.0), class_labels=torch.tensor([0, 3])).sample


def _by_hand(model, x):
    """The output with the config planned by hand from the latent's spectrum, assigned to the model."""
    grid = model.token_grid(x)
    plan = SEGA.plan(model.base_grid, grid, spectrum=SEGA.spectrum(x, grid))
    own = model.own_rope_config
    model.rope_config = dataclasses.replace(own, scaling=plan.scalings)
    try:
        return _run(model, x)
    finally:
        model.rope_config = own


def test_beyond_the_trained_grid_each_call_reads_its_latent(make_model):
    model = make_model()
    seen = []
    model.blocks[0].register_forward_pre_hook(lambda module, args: seen.append(model.rope_config))
    first, second = _latent((8, 12), seed=1), _latent((8, 12), seed=2)
    expected = [_by_hand(model, first), _by_hand(model, second)]
    seen.clear()
    with DiTExtrapolation(model, SEGA, grid=(8, 12)).attach():
        outputs = [_run(model, first), _run(model, second)]
    assert all(torch.equal(a, b) for a, b in zip(outputs, expected, strict=True))
    assert seen[0] != seen[1] and all(s.rope_type == "sega" for s in seen[0].scaling)  # one plan per latent
    assert not model._forward_pre_hooks and not model._forward_hooks


def test_at_and_inside_the_trained_grid_the_model_is_untouched(make_model):
    model = make_model()
    for grid in ((4, 4), (4, 2)):
        x = _latent(grid)
        plain = _run(model, x)
        with DiTExtrapolation(model, SEGA).attach():
            assert torch.equal(_run(model, x), plain)
        assert torch.equal(_run(model, x), plain)  # removed: as before


def test_video_model_leaves_time_as_trained(make_model):
    model = make_model(num_frames=4)  # trained (4, 4, 4) tokens
    seen = []
    model.blocks[0].register_forward_pre_hook(lambda module, args: seen.append(model.rope_config))
    with DiTExtrapolation(model, SEGA).attach():
        _run(model, _latent((8, 8), frames=6))
    assert seen[0].scaling[0] is None and [s.factor for s in seen[0].scaling[1:]] == [2.0, 2.0]

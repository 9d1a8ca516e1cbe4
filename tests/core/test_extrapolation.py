"""Extrapolation methods: each one's frequencies against its formula, identity at the trained size."""

import math

import pytest
import torch

from axialrope import EXTRAPOLATION_METHODS, AxialRotaryEmbedding, Extrapolation, rope_frequencies
from axialrope.extrapolation import split_name
from axialrope.frequencies import riflex_intrinsic_index

AXES_DIMS = (16, 24, 24)
TRAIN = (8, 16, 16)


def inv_freqs(plan, thetas=(10000.0,) * 3):
    """Per axis: the inverse frequencies a model would use under this plan."""
    rope = AxialRotaryEmbedding(AXES_DIMS, theta=thetas, scaling=list(plan.scalings))
    return [f for f, _ in rope.axis_frequencies()]


def trained_inv_freqs():
    return [rope_frequencies(d)[0] for d in AXES_DIMS]


@pytest.mark.parametrize("method", EXTRAPOLATION_METHODS)
@pytest.mark.parametrize("entropy_scaling", [False, True])
def test_every_method_is_the_trained_encoding_at_the_trained_size(method, entropy_scaling):
    plan = Extrapolation(method, entropy_scaling=entropy_scaling).plan(TRAIN, TRAIN, timestep=0.7)
    assert plan.scalings == (None, None, None) and plan.logit_scale == 1.0
    for ours, trained in zip(inv_freqs(plan), trained_inv_freqs(), strict=True):
        assert torch.equal(ours, trained)


@pytest.mark.parametrize("method", ["kappa-pi", "kappa-ntk", "kappa-yarn"])
def test_the_kappa_variants_reach_the_trained_encoding_at_the_last_step(method):
    extrapolation = Extrapolation(method)
    last = extrapolation.plan(TRAIN, (16, 32, 48), timestep=0.0)
    assert last.scalings == (None, None, None) and last.logit_scale == 1.0
    # at pure noise with lambda_s = 1 they are the static method; between, a smaller scale
    static = Extrapolation(method.removeprefix("kappa-")).plan(TRAIN, (16, 32, 48))
    assert extrapolation.plan(TRAIN, (16, 32, 48), timestep=1.0) == static
    middle = extrapolation.plan(TRAIN, (16, 32, 48), timestep=0.5)
    assert all(1 < m < s for m, s in zip(middle.factors, static.factors, strict=True))
    assert middle.factors[2] == pytest.approx(3.0 ** (0.5**2))


def test_pi_divides_each_scaled_axis_by_its_own_factor():
    plan = Extrapolation("pi").plan(TRAIN, (8, 32, 48))
    assert plan.factors == (1.0, 2.0, 3.0)
    ours, trained = inv_freqs(plan), trained_inv_freqs()
    assert torch.equal(ours[0], trained[0])
    torch.testing.assert_close(ours[1], trained[1] / 2, rtol=1e-15, atol=0)
    torch.testing.assert_close(ours[2], trained[2] / 3, rtol=1e-15, atol=0)


def test_ntk_raises_each_axis_base_by_its_own_factor():
    plan = Extrapolation("ntk").plan(TRAIN, (8, 32, 48))
    ours = inv_freqs(plan)
    for axis, s in ((1, 2.0), (2, 3.0)):
        d = AXES_DIMS[axis]
        expected = rope_frequencies(d, 10000.0 * s ** (d / (d - 2)))[0]
        torch.testing.assert_close(ours[axis], expected, rtol=1e-14, atol=0)


@pytest.mark.parametrize("temperature, s", [("tokens", 6.0), ("max_axis", 3.0)])
def test_yarn_per_axis_with_its_own_trained_length_and_one_temperature(temperature, s):
    plan = Extrapolation("yarn", yarn_temperature=temperature).plan(TRAIN, (8, 32, 48))
    ours = inv_freqs(plan)
    for axis, factor in ((1, 2.0), (2, 3.0)):
        scaling = {"rope_type": "yarn", "factor": factor, "original_max_position_embeddings": TRAIN[axis]}
        torch.testing.assert_close(ours[axis], rope_frequencies(AXES_DIMS[axis], scaling=scaling)[0], rtol=0, atol=0)
    assert plan.logit_scale == pytest.approx((0.1 * math.log(s) + 1) ** 2)


def test_riflex_slows_only_the_intrinsic_temporal_pair():
    plan = Extrapolation("riflex").plan(TRAIN, (24, 32, 32))
    ours, trained = inv_freqs(plan), trained_inv_freqs()
    assert torch.equal(ours[1], trained[1]) and torch.equal(ours[2], trained[2])
    k = riflex_intrinsic_index(trained[0], TRAIN[0])
    periods = 2 * math.pi / trained[0]
    assert (periods - TRAIN[0]).abs().argmin() == k
    changed = (ours[0] != trained[0]).nonzero().flatten().tolist()
    assert changed == [k]
    # 0.9 of a period over the new length: the intrinsic pair no longer repeats within 24 frames
    assert 2 * math.pi / float(ours[0][k]) == pytest.approx(24 / 0.9)


def test_entropy_scaling_factor():
    plan = Extrapolation("none", entropy_scaling=True).plan((16, 16), (32, 32))
    assert plan.logit_scale == pytest.approx(math.sqrt(math.log(1024) / math.log(256)))
    assert plan.scalings == (None, None)


def test_smaller_grids_keep_the_trained_encoding():
    plan = Extrapolation("ntk").plan((16, 16), (8, 32))
    assert plan.scalings[0] is None and plan.factors == (1.0, 2.0)


@pytest.mark.parametrize(
    "make, match",
    [
        (lambda: Extrapolation("bilinear"), "method must be one of"),
        (lambda: Extrapolation("dype-pi"), "now called 'kappa-pi'"),
        (lambda: Extrapolation("dype-yarn", dype_beta=(0.75, 1.25)), "dype_beta must be two numbers"),
        (lambda: Extrapolation("riflex", riflex_index=0), "riflex_index must be a positive integer"),
        (lambda: Extrapolation("pi").plan((16, 16), (32, 32), token_spacing=(1.0, 0.0)), "token_spacing must be"),
        (lambda: Extrapolation("yarn", yarn_temperature="mean"), "yarn_temperature must be one of"),
        (lambda: Extrapolation("yarn", beta_fast=1.0, beta_slow=2.0), "beta_fast > beta_slow"),
        (lambda: Extrapolation("dype-ntk").plan((16, 16), (32, 32)), "needs a timestep in"),
        (lambda: Extrapolation("dype-ntk").plan((16, 16), (32, 32), timestep=1.5), "needs a timestep in"),
        (lambda: Extrapolation("riflex").plan((16, 16), (32, 32)), "riflex needs a"),
        (lambda: Extrapolation("pi").plan((16, 16), (32, 32, 32)), "different numbers of axes"),
        (lambda: Extrapolation("pi").plan((16, 0), (32, 32)), "train_grid sizes must be positive"),
    ],
)
def test_bad_input(make, match):
    with pytest.raises(ValueError, match=match):
        make()


@pytest.mark.parametrize(
    "name, options, expected",
    [
        ("yarn", {}, Extrapolation("yarn")),
        ("yarn+entropy", {"beta_fast": 16.0}, Extrapolation("yarn", entropy_scaling=True, beta_fast=16.0)),
        ("pi", {"entropy_scaling": True}, Extrapolation("pi", entropy_scaling=True)),
        ("pi+entropy", {"entropy_scaling": False}, Extrapolation("pi", entropy_scaling=True)),  # the suffix adds it
        (Extrapolation("ntk"), {}, Extrapolation("ntk")),
        (Extrapolation("yarn"), {"beta_slow": 2.0}, Extrapolation("yarn", beta_slow=2.0)),
        (Extrapolation("pi", entropy_scaling=True), {"entropy_scaling": False}, Extrapolation("pi")),
    ],
)
def test_from_name_reads_a_name_or_an_extrapolation_with_options(name, options, expected):
    assert Extrapolation.from_name(name, **options) == expected


def test_split_name_reads_the_entropy_suffix_of_any_name():
    assert split_name("yarn+entropy") == ("yarn", True) and split_name("auto") == ("auto", False)
    with pytest.raises(TypeError, match="method must be a method name"):
        split_name(3)


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda: Extrapolation.from_name("yarn", beta_fastt=1.0), TypeError, "unknown option 'beta_fastt'"),
        (lambda: Extrapolation.from_name(Extrapolation("pi"), method="ntk"), TypeError, "unknown option 'method'"),
        (lambda: Extrapolation.from_name("auto"), ValueError, "method must be one of"),
        (lambda: Extrapolation.from_name("pi", beta_fast=16.0), ValueError, "beta_fast=16.0 is not read by"),
        (lambda: Extrapolation.from_name(Extrapolation("pi"), beta_fast=16.0), ValueError, "is not read by"),
    ],
)
def test_from_name_refuses_what_it_cannot_read(call, error, match):
    with pytest.raises(error, match=match):
        call()

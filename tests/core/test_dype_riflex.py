"""DyPE's Dy-NTK and Dy-YaRN and RIFLEx's rule in the core, against the authors' formulas
(the `authors` fixture in tests/conftest.py, written out from their released code)."""

import math

import numpy as np
import pytest
import torch

from axialrope import AxialRotaryEmbedding, Extrapolation, RopeScaling, rope_frequencies
from axialrope.frequencies import riflex_index_beyond, riflex_period


@pytest.mark.parametrize("t", [1.0, 0.7, 0.3, 0.1, 0.02])
@pytest.mark.parametrize("dim, scale", [(56, 2.0), (56, 4.0), (16, 3.0)])
def test_dype_yarn_equals_the_authors_formula(authors, dim, scale, t):
    plan = Extrapolation("dype-yarn").plan((64,), (int(64 * scale),), timestep=t)
    (scaling,) = plan.scalings
    ours, gain = rope_frequencies(dim, 10000.0, scaling)
    expected, expected_gain = authors.dype_yarn(dim, 10000.0, scale, 64, t)
    np.testing.assert_allclose(ours.numpy(), expected, rtol=1e-12)
    assert gain == pytest.approx(expected_gain, rel=1e-15)


def test_dype_yarn_at_t0_is_the_limit_of_the_authors_code(authors):
    # their code divides by zero at kappa = 0; towards it, both ramps turn over to PI everywhere
    ours, gain = rope_frequencies(
        56, 10000.0, RopeScaling("dype_yarn", factor=2.0, original_max_position_embeddings=64, kappa=0.0)
    )
    torch.testing.assert_close(ours, rope_frequencies(56)[0] / 2, rtol=1e-15, atol=0)
    almost = authors.dype_yarn(56, 10000.0, 2.0, 64, 1e-4)[0]
    np.testing.assert_allclose(ours.numpy(), almost, rtol=1e-12)
    assert gain == pytest.approx(0.1 * math.log(2) + 1)


@pytest.mark.parametrize("t", [1.0, 0.5, 0.0])
def test_dype_ntk_grows_the_base_by_s_to_the_2_kappa(authors, t):
    dim, s = 56, 3.0
    plan = Extrapolation("dype-ntk").plan((64, 64), (64, 192), timestep=t)
    assert plan.scalings[0] is None
    inv_freq = AxialRotaryEmbedding((16, dim), scaling=list(plan.scalings)).axis_frequencies()[1][0]
    np.testing.assert_allclose(inv_freq.numpy(), authors.dype_ntk(dim, 10000.0, s, t), rtol=1e-13)
    assert (plan.scalings[1] is None) == (t == 0)


def test_every_scaled_axis_gets_its_own_dype_yarn_and_mscale_in_the_tables():
    rope = AxialRotaryEmbedding((8, 16, 16))
    plan = Extrapolation("dype-yarn").plan((4, 8, 8), (4, 16, 24), timestep=0.5)
    assert plan.scalings[0] is None and [s.factor for s in plan.scalings[1:]] == [2.0, 3.0]
    rope.set_frequencies(scaling=list(plan.scalings))
    cos, sin = rope(torch.zeros(1, 3))
    torch.testing.assert_close(cos[0, :4], torch.ones(4))
    torch.testing.assert_close(cos[0, 4:12], torch.full((8,), 0.1 * math.log(2) + 1))
    torch.testing.assert_close(cos[0, 12:], torch.full((8,), 0.1 * math.log(3) + 1))


@pytest.mark.parametrize("theta, dim, k, n_k, trained", [(256.0, 16, 4, 50, 33), (10000.0, 16, 2, 20, 13)])
def test_riflex_rule_with_the_published_k(authors, theta, dim, k, n_k, trained):
    """HunyuanVideo (theta 256, d_t 16, k 4, N_k 50) and CogVideoX (10000, 16, 2, 20), 1-based k."""
    plain = rope_frequencies(dim, theta)[0]
    assert riflex_period(plain, k - 1) == n_k
    assert authors.identify_k(theta, dim, n_k) == (k, n_k)
    # the pair with the shortest period beyond the trained length is the published one
    assert riflex_index_beyond(plain, trained) == k - 1
    extrapolation = Extrapolation("riflex", riflex_index=k)
    for length in (n_k - 1, n_k):  # not past N_k: the trained frequencies
        plan = extrapolation.plan((trained, 4, 4), (length, 4, 4))
        torch.testing.assert_close(rope_frequencies(dim, theta, plan.scalings[0])[0], plain, rtol=0, atol=0)
    for length in (n_k + 1, 2 * n_k):
        plan = extrapolation.plan((trained, 4, 4), (length, 4, 4))
        ours = rope_frequencies(dim, theta, plan.scalings[0])[0]
        np.testing.assert_allclose(ours.numpy(), authors.riflex(dim, theta, k, length), rtol=1e-14)

"""DyPE's Dy-NTK and Dy-YaRN and RIFLEx's rule in the core, against the formulas written out here.

The references are written from the authors' released code, read for the formula only:
guyyariv/DyPE flux/transformer_flux.py (get_1d_rotary_pos_embed with yarn/dype, FluxPosEmbed's
ntk branch) and thu-ml/RIFLEx riflex_utils.py (get_1d_rotary_pos_embed_riflex, identify_k).
"""

import math

import numpy as np
import pytest
import torch

from axialrope import AxialRotaryEmbedding, Extrapolation, RopeScaling, rope_frequencies
from axialrope.frequencies import riflex_index_beyond, riflex_period


def dype_yarn_reference(dim, theta, scale, trained, t):
    """Per pair: Dy-YaRN's inverse frequency (float64) and the cos/sin gain, as DyPE's Flux code has it."""
    kappa = t**2
    i = np.arange(0, dim, 2) / dim
    base = theta ** -i
    linear = base / scale
    ntk = (theta * scale ** (dim / (dim - 2))) ** -i

    def edge(rotations):  # fractional pair index where r_i = rotations
        return dim * math.log(trained / (rotations * 2 * math.pi)) / (2 * math.log(theta))

    def mask(fast, slow):  # their band edges: floor/ceil, then clamped twice
        low = max(np.floor(edge(fast * kappa)), 0)
        high = min(np.ceil(edge(slow * kappa)), dim - 1, dim // 2)
        if low == high:
            high += 0.001
        return np.clip((np.arange(dim // 2) - low) / (high - low), 0, 1)

    ramp = mask(1.25, 0.75)
    freqs = linear * ramp + ntk * (1 - ramp)
    ramp = mask(16, 2)
    freqs = freqs * ramp + base * (1 - ramp)
    return freqs, 0.1 * math.log(scale) + 1


@pytest.mark.parametrize("t", [1.0, 0.7, 0.3, 0.1, 0.02])
@pytest.mark.parametrize("dim, scale", [(56, 2.0), (56, 4.0), (16, 3.0)])
def test_dype_yarn_equals_the_authors_formula(dim, scale, t):
    plan = Extrapolation("dype-yarn").plan((64,), (int(64 * scale),), timestep=t)
    (scaling,) = plan.scalings
    ours, gain = rope_frequencies(dim, 10000.0, scaling)
    expected, expected_gain = dype_yarn_reference(dim, 10000.0, scale, 64, t)
    np.testing.assert_allclose(ours.numpy(), expected, rtol=1e-12)
    assert gain == pytest.approx(expected_gain, rel=1e-15)


def test_dype_yarn_at_t0_is_the_limit_of_the_authors_code():
    # their code divides by zero at kappa = 0; towards it, both ramps turn over to PI everywhere
    ours, gain = rope_frequencies(56, 10000.0, RopeScaling("dype_yarn", factor=2.0, original_max_position_embeddings=64,
                                                           kappa=0.0))
    torch.testing.assert_close(ours, rope_frequencies(56)[0] / 2, rtol=1e-15, atol=0)
    almost = dype_yarn_reference(56, 10000.0, 2.0, 64, 1e-4)[0]
    np.testing.assert_allclose(ours.numpy(), almost, rtol=1e-12)
    assert gain == pytest.approx(0.1 * math.log(2) + 1)


@pytest.mark.parametrize("t", [1.0, 0.5, 0.0])
def test_dype_ntk_grows_the_base_by_s_to_the_2_kappa(t):
    dim, s = 56, 3.0
    plan = Extrapolation("dype-ntk").plan((64, 64), (64, 192), timestep=t)
    assert plan.scalings[0] is None
    inv_freq = AxialRotaryEmbedding((16, dim), scaling=list(plan.scalings)).axis_frequencies()[1][0]
    base = 10000.0 * (s ** (dim / (dim - 2))) ** (2 * t**2)  # DyPE's ntk_factor, as they compute it
    expected = base ** -(np.arange(0, dim, 2) / dim)
    np.testing.assert_allclose(inv_freq.numpy(), expected, rtol=1e-13)
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


def riflex_reference(dim, theta, k, length):
    """RIFLEx's temporal frequencies: pair k (1-based) set to 0.9 * 2 pi / L_test."""
    freqs = theta ** -(np.arange(0, dim, 2) / dim)
    freqs[k - 1] = 0.9 * 2 * math.pi / length
    return freqs


def identify_k_reference(theta, dim, repetition):
    """RIFLEx's identify_k: the 1-based pair whose rounded period is closest to the repetition frame."""
    periods = [round(2 * math.pi * theta ** (2 * (j - 1) / dim)) for j in range(1, dim // 2 + 1)]
    k = int(np.argmin([abs(p - repetition) for p in periods])) + 1
    return k, periods[k - 1]


@pytest.mark.parametrize("theta, dim, k, n_k, trained", [(256.0, 16, 4, 50, 33), (10000.0, 16, 2, 20, 13)])
def test_riflex_rule_with_the_published_k(theta, dim, k, n_k, trained):
    """HunyuanVideo (theta 256, d_t 16, k 4, N_k 50) and CogVideoX (10000, 16, 2, 20), 1-based k."""
    plain = rope_frequencies(dim, theta)[0]
    assert riflex_period(plain, k - 1) == n_k
    assert identify_k_reference(theta, dim, n_k) == (k, n_k)
    # the pair with the shortest period beyond the trained length is the published one
    assert riflex_index_beyond(plain, trained) == k - 1
    extrapolation = Extrapolation("riflex", riflex_index=k)
    for length in (n_k - 1, n_k):  # not past N_k: the trained frequencies
        plan = extrapolation.plan((trained, 4, 4), (length, 4, 4))
        torch.testing.assert_close(rope_frequencies(dim, theta, plan.scalings[0])[0], plain, rtol=0, atol=0)
    for length in (n_k + 1, 2 * n_k):
        plan = extrapolation.plan((trained, 4, 4), (length, 4, 4))
        ours = rope_frequencies(dim, theta, plan.scalings[0])[0]
        np.testing.assert_allclose(ours.numpy(), riflex_reference(dim, theta, k, length), rtol=1e-14)

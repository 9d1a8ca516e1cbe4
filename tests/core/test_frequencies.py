"""rope_frequencies: the formulas of `axialrope.frequencies`' docstring, and transformers' numbers."""

import math

import pytest
import torch
from transformers import LlamaConfig
from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS

from axialrope import RopeScaling, rope_frequencies
from axialrope.frequencies import scaling_is_identity


def transformers_frequencies(params: dict, dim: int, theta: float, max_position_embeddings: int, seq_len=None):
    """(inv_freq float32, attention_factor) from transformers' own ROPE_INIT_FUNCTIONS."""
    config = LlamaConfig(
        hidden_size=dim * 4,
        num_attention_heads=4,
        max_position_embeddings=max_position_embeddings,
        rope_parameters={"rope_theta": theta, **params},
    )
    return ROPE_INIT_FUNCTIONS[params["rope_type"]](config, "cpu", seq_len=seq_len)


def assert_matches_transformers(ours, theirs):
    inv_freq, factor = ours
    their_inv_freq, their_factor = theirs
    assert inv_freq.dtype == torch.float64
    # transformers computes in float32: agree to float32 precision
    torch.testing.assert_close(inv_freq.float(), their_inv_freq, rtol=2e-6, atol=0)
    assert factor == pytest.approx(their_factor, rel=1e-12)


def test_default_is_theta_to_the_minus_2i_over_d():
    inv_freq, factor = rope_frequencies(8, theta=100.0)
    assert inv_freq.tolist() == pytest.approx([100.0 ** (-2 * i / 8) for i in range(4)], rel=1e-15)
    assert factor == 1.0


@pytest.mark.parametrize("factor", [1.0, 2.0, 8.5])
@pytest.mark.parametrize("dim", [64, 128])
def test_linear_matches_transformers(dim, factor):
    params = {"rope_type": "linear", "factor": factor}
    ours = rope_frequencies(dim, 10000.0, params)
    assert_matches_transformers(ours, transformers_frequencies(params, dim, 10000.0, 2048))


def test_ntk_raises_the_base_by_s_to_the_d_over_d_minus_2():
    dim, theta, s = 64, 10000.0, 4.0
    inv_freq, _ = rope_frequencies(dim, theta, {"rope_type": "ntk", "factor": s})
    expected, _ = rope_frequencies(dim, theta * s ** (dim / (dim - 2)))
    torch.testing.assert_close(inv_freq, expected, rtol=1e-14, atol=0)
    # the highest frequency is kept, the lowest is divided by s exactly
    assert inv_freq[0] == 1.0
    assert float(inv_freq[-1]) == pytest.approx(float(rope_frequencies(dim, theta)[0][-1]) / s, rel=1e-12)


@pytest.mark.parametrize("seq_len", [None, 100, 1024, 2048, 5000])
@pytest.mark.parametrize("factor", [2.0, 4.0])
def test_dynamic_matches_transformers(factor, seq_len):
    dim, theta, trained = 64, 10000.0, 1024
    ours = rope_frequencies(
        dim, theta, {"rope_type": "dynamic", "factor": factor, "original_max_position_embeddings": trained}, seq_len
    )
    theirs = transformers_frequencies({"rope_type": "dynamic", "factor": factor}, dim, theta, trained, seq_len)
    assert_matches_transformers(ours, theirs)


def test_dynamic_is_identity_within_the_trained_length():
    scaling = {"rope_type": "dynamic", "factor": 4.0, "original_max_position_embeddings": 512}
    plain, _ = rope_frequencies(64, 10000.0)
    for seq_len in (None, 1, 511, 512):
        torch.testing.assert_close(rope_frequencies(64, 10000.0, scaling, seq_len)[0], plain, rtol=0, atol=0)
    assert not torch.equal(rope_frequencies(64, 10000.0, scaling, 513)[0], plain)


YARN_CASES = [
    {"factor": 4.0},
    {"factor": 8.0, "beta_fast": 16.0, "beta_slow": 2.0},
    {"factor": 4.0, "truncate": False},
    {"factor": 2.5, "beta_fast": 64.0, "beta_slow": 0.5, "truncate": False},
    {"factor": 40.0, "mscale": 1.0, "mscale_all_dim": 1.0},  # DeepSeek-V3 style: factor 1 temperature
    {"factor": 16.0, "mscale": 0.8, "mscale_all_dim": 0.5},
    {"factor": 4.0, "attention_factor": 1.3},
    {"factor": 1.0},
]


@pytest.mark.parametrize("params", YARN_CASES, ids=str)
@pytest.mark.parametrize("dim, theta, trained", [(64, 10000.0, 1024), (128, 500000.0, 8192), (32, 10000.0, 128)])
def test_yarn_matches_transformers(params, dim, theta, trained):
    params = {"rope_type": "yarn", "original_max_position_embeddings": trained, **params}
    ours = rope_frequencies(dim, theta, params)
    assert_matches_transformers(ours, transformers_frequencies(params, dim, theta, trained * 4))


def test_yarn_keeps_fast_pairs_and_interpolates_slow_pairs():
    """r_i = L_train theta_i / (2 pi) rotations: > beta_fast kept, < beta_slow divided by s."""
    dim, theta, trained, s = 128, 10000.0, 4096, 8.0
    scaling = RopeScaling("yarn", factor=s, original_max_position_embeddings=trained, truncate=False)
    plain, _ = rope_frequencies(dim, theta)
    scaled, mscale = rope_frequencies(dim, theta, scaling)
    rotations = trained * plain / (2 * math.pi)
    fast, slow = rotations > scaling.beta_fast, rotations < scaling.beta_slow
    assert fast.any() and slow.any() and (~fast & ~slow).any()
    torch.testing.assert_close(scaled[fast], plain[fast], rtol=1e-15, atol=0)
    torch.testing.assert_close(scaled[slow], plain[slow] / s, rtol=1e-15, atol=0)
    middle = ~fast & ~slow
    assert ((scaled[middle] < plain[middle]) & (scaled[middle] > plain[middle] / s)).all()
    assert mscale == pytest.approx(0.1 * math.log(s) + 1)


LLAMA3_CASES = [
    (
        128,
        500000.0,
        {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 8192},
    ),
    (
        64,
        10000.0,
        {"factor": 4.0, "low_freq_factor": 2.0, "high_freq_factor": 8.0, "original_max_position_embeddings": 2048},
    ),
    (
        64,
        10000.0,
        {"factor": 32.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 256},
    ),
]


@pytest.mark.parametrize("dim, theta, params", LLAMA3_CASES, ids=str)
def test_llama3_matches_transformers(dim, theta, params):
    params = {"rope_type": "llama3", **params}
    ours = rope_frequencies(dim, theta, params)
    assert_matches_transformers(ours, transformers_frequencies(params, dim, theta, 131072))


def test_llama3_bands():
    dim, theta = 128, 500000.0
    scaling = RopeScaling(
        "llama3", factor=8.0, original_max_position_embeddings=8192, low_freq_factor=1.0, high_freq_factor=4.0
    )
    plain, _ = rope_frequencies(dim, theta)
    scaled, _ = rope_frequencies(dim, theta, scaling)
    wavelength = 2 * math.pi / plain
    short, long = wavelength < 8192 / 4.0, wavelength > 8192 / 1.0
    assert short.any() and long.any()
    torch.testing.assert_close(scaled[short], plain[short], rtol=0, atol=0)
    torch.testing.assert_close(scaled[long], plain[long] / 8.0, rtol=1e-15, atol=0)


def test_dict_forms_are_equivalent():
    new = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 512}
    legacy = {"type": "yarn", "factor": 4, "original_max_position_embeddings": 512}
    v5 = {**new, "rope_theta": 10000.0, "beta_fast": None}
    typed = RopeScaling("yarn", factor=4.0, original_max_position_embeddings=512)
    results = [rope_frequencies(64, 10000.0, s) for s in (new, legacy, v5, typed)]
    for inv_freq, factor in results[1:]:
        assert torch.equal(inv_freq, results[0][0]) and factor == results[0][1]
    assert RopeScaling.from_dict(typed.to_dict()) == typed
    assert hash(RopeScaling.from_dict(legacy)) == hash(typed)


@pytest.mark.parametrize(
    "scaling, identity",
    [
        (None, True),
        (RopeScaling("default"), True),
        (RopeScaling("linear", factor=1.0), True),
        (RopeScaling("linear", factor=2.0), False),
        (RopeScaling("riflex", factor=1.0, original_max_position_embeddings=4, riflex_index=3), True),  # before N_k
        (RopeScaling("riflex", factor=9.0, original_max_position_embeddings=4, riflex_index=3), False),
        ({"rope_type": "yarn", "factor": 2.0, "original_max_position_embeddings": 8}, False),
        (RopeScaling("yarn", factor=2.0, original_max_position_embeddings=8, attention_factor=1.0), False),
    ],
)
def test_scaling_is_identity_where_frequencies_and_gain_stay_as_trained(scaling, identity):
    scaled, gain = rope_frequencies(16, 100.0, scaling)
    assert (gain == 1.0 and torch.equal(scaled, rope_frequencies(16, 100.0)[0])) == identity  # the definition
    assert scaling_is_identity(16, 100.0, scaling) == identity

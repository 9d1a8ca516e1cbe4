"""Bad input fails early with an error that names the argument."""

import math

import pytest
import torch

from axialrope import (
    AxialRotaryEmbedding,
    RoPEAttention,
    RopeScaling,
    RotaryEmbedding,
    apply_rotary,
    grid_coords,
    rope_frequencies,
)


@pytest.mark.parametrize(
    "make, error, match",
    [
        (lambda: rope_frequencies(63), ValueError, "dim must be a positive even"),
        (lambda: rope_frequencies(64.0), TypeError, "dim must be an int"),
        (lambda: RotaryEmbedding(63), ValueError, "dim must be a positive even"),
        (lambda: AxialRotaryEmbedding((16, 23, 24)), ValueError, r"axes_dims\[1\] must be a positive even"),
        (lambda: AxialRotaryEmbedding((16, 0, 24)), ValueError, r"axes_dims\[1\]"),
        (lambda: AxialRotaryEmbedding((-2, 24)), ValueError, r"axes_dims\[0\]"),
        (lambda: AxialRotaryEmbedding(64), TypeError, "axes_dims must be a non-empty sequence"),
        (lambda: AxialRotaryEmbedding((16, 24, 24), head_dim=32), ValueError, "more than head_dim=32"),
        (lambda: AxialRotaryEmbedding((16, 24), theta=(1e4, 1e4, 1e4)), ValueError, "theta must be"),
        (lambda: AxialRotaryEmbedding((16, 24), theta=0.5), ValueError, r"theta\[0\] must be a finite number > 1"),
        (lambda: AxialRotaryEmbedding((16, 24), scaling=[None]), ValueError, "scaling must be one config or a list of 2"),
        (lambda: rope_frequencies(64, scaling={"rope_type": "linear", "factor": 0.5}), ValueError, "factor must be >= 1"),
        (lambda: rope_frequencies(64, scaling={"rope_type": "linear", "factor": math.nan}), ValueError, "factor must be finite"),
        (lambda: rope_frequencies(64, scaling={"rope_type": "longrope", "factor": 2.0}), ValueError, "unknown rope_type 'longrope'"),
        (lambda: rope_frequencies(64, scaling={"rope_type": "yarn", "factor": 2.0}), ValueError, "needs original_max_position_embeddings"),
        (lambda: rope_frequencies(64, scaling={"rope_type": "dynamic", "factor": 2.0}), ValueError, "needs original_max_position_embeddings"),
        (lambda: rope_frequencies(64, scaling={"rope_type": "llama3", "factor": 8.0, "original_max_position_embeddings": 8}),
         ValueError, "needs high_freq_factor, low_freq_factor"),
        (lambda: rope_frequencies(64, scaling={"rope_type": "linear", "factr": 2.0}), ValueError, r"keys \['factr'\]"),
        (lambda: rope_frequencies(64, scaling={"rope_type": "linear", "factor": "2"}), TypeError, "factor must be a real number"),
        (lambda: rope_frequencies(64, 1e4, {"rope_type": "linear", "factor": 2.0, "rope_theta": 5e5}), ValueError, "rope_theta"),
        (lambda: rope_frequencies(64, scaling="yarn"), TypeError, "scaling must be None, a dict or a RopeScaling"),
        (lambda: rope_frequencies(2, scaling={"rope_type": "ntk", "factor": 2.0}), ValueError, "dim must be > 2"),
        (lambda: RopeScaling("yarn", 4.0, 64, beta_fast=1.0, beta_slow=32.0), ValueError, "beta_fast > beta_slow"),
        (lambda: RoPEAttention(64, 8, 3), ValueError, "num_heads=8 must be divisible by num_kv_heads=3"),
        (lambda: RoPEAttention(60, 8), ValueError, "dim=60 must be divisible by num_heads=8"),
        (lambda: grid_coords(4, 0), ValueError, "grid sizes must be positive integers"),
        (lambda: grid_coords(4, 4, offset=(1, 2, 3)), ValueError, "offset must be a number or have one entry per axis"),
    ],
)
def test_construction_errors(make, error, match):
    with pytest.raises(error, match=match):
        make()


def test_coords_with_the_wrong_number_of_axes():
    with pytest.raises(ValueError, match=r"coords must have shape \(\.\.\., seq, n_axes\) with n_axes=3"):
        AxialRotaryEmbedding((16, 24, 24))(grid_coords(4, 4))


def test_non_finite_positions():
    with pytest.raises(ValueError, match="must be finite"):
        RotaryEmbedding(16)(torch.tensor([0.0, math.inf]))
    with pytest.raises(ValueError, match="must be finite"):
        AxialRotaryEmbedding((8, 8))(torch.tensor([[0.0, math.nan]]))


def test_positions_must_be_tensors():
    with pytest.raises(TypeError, match="positions must be a torch.Tensor"):
        RotaryEmbedding(16)([0, 1, 2])


def test_tables_wider_than_x():
    cos, sin = RotaryEmbedding(64)(torch.arange(4))
    with pytest.raises(ValueError, match="cos/sin are too wide for x: they rotate 64 channels"):
        apply_rotary(torch.randn(1, 4, 32), cos, sin)


def test_tables_that_do_not_broadcast():
    cos, sin = RotaryEmbedding(16)(torch.arange(5))
    with pytest.raises(ValueError, match="do not broadcast against x"):
        apply_rotary(torch.randn(1, 2, 4, 16), cos, sin)


def test_unknown_layout():
    cos, sin = RotaryEmbedding(16)(torch.arange(4))
    with pytest.raises(ValueError, match="layout must be one of"):
        apply_rotary(torch.randn(4, 16), cos, sin, layout="neox")


def test_attention_input_width():
    with pytest.raises(ValueError, match=r"x must have shape \(batch, seq, 64\)"):
        RoPEAttention(64, 8)(torch.randn(2, 5, 32))


def test_riflex_index_out_of_range():
    with pytest.raises(ValueError, match="riflex_index=9 is out of range for 8 pairs"):
        rope_frequencies(16, scaling={"rope_type": "riflex", "factor": 2.0,
                                      "original_max_position_embeddings": 16, "riflex_index": 9})

"""Tables stay exact at large positions: angles are formed in float64, stored in float32."""

import pytest
import torch

from axialrope import AxialRotaryEmbedding, RotaryEmbedding


def float64_reference(positions: torch.Tensor, dim: int, theta: float):
    """cos, sin (seq, dim // 2) computed entirely in float64."""
    exponents = torch.arange(0, dim, 2, dtype=torch.float64) / dim
    angles = positions.double()[:, None] * theta**-exponents
    return angles.cos(), angles.sin()


POSITIONS = torch.cat((torch.arange(0, 2**20 + 1, 4099), torch.tensor([2**20 - 1, 2**20])))


@pytest.mark.parametrize("theta", [1e4, 5e5])
def test_tables_up_to_2_pow_20_agree_with_float64(theta):
    cos, sin = RotaryEmbedding(128, theta=theta)(POSITIONS)
    ref_cos, ref_sin = float64_reference(POSITIONS, 128, theta)
    assert cos.dtype == torch.float32
    assert (cos.double() - ref_cos).abs().max() <= 1e-6
    assert (sin.double() - ref_sin).abs().max() <= 1e-6


def test_float32_angles_would_fail_the_same_bound():
    """Why float64: the same table built from float32 angles is off by far more than 1e-6."""
    exponents = torch.arange(0, 128, 2, dtype=torch.float32) / 128
    naive = (POSITIONS.float()[:, None] * 1e4**-exponents).cos()
    ref_cos, _ = float64_reference(POSITIONS, 128, 1e4)
    assert (naive.double() - ref_cos).abs().max() > 1e-3


def test_fractional_coordinates_at_large_offsets():
    coords = torch.tensor([[2.0**20 + 0.25, 2.0**19 + 0.5]], dtype=torch.float64)
    cos, _ = AxialRotaryEmbedding((32, 32), theta=(1e4, 5e5))(coords)
    ref_y, _ = float64_reference(coords[:, 0], 32, 1e4)
    ref_x, _ = float64_reference(coords[:, 1], 32, 5e5)
    assert (cos.double() - torch.cat((ref_y, ref_x), -1)).abs().max() <= 1e-6

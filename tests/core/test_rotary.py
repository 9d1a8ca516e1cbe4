"""apply_rotary: parity with the two reference formulations, partial rotary, dtypes, gradients."""

import pytest
import torch
from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

from axialrope import RotaryEmbedding, apply_rotary


def random_qk(batch=2, heads=3, seq=17, dim=64, dtype=torch.float32, seed=0):
    g = torch.Generator().manual_seed(seed)
    return [torch.randn(batch, heads, seq, dim, generator=g, dtype=dtype) for _ in range(2)]


def test_half_layout_matches_transformers():
    q, k = random_qk()
    cos, sin = RotaryEmbedding(64, theta=10000.0)(torch.arange(5, 22))  # (seq, 32), any offset
    # transformers wants full-width tables (seq, 64) with one batch axis
    full_cos, full_sin = torch.cat((cos, cos), -1)[None], torch.cat((sin, sin), -1)[None]
    their_q, their_k = apply_rotary_pos_emb(q, k, full_cos, full_sin)
    torch.testing.assert_close(apply_rotary(q, cos, sin), their_q, rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(apply_rotary(k, cos, sin), their_k, rtol=1e-6, atol=1e-6)


def test_interleaved_layout_is_complex_multiplication():
    """Meta's llama reference: pairs (2j, 2j+1) are complex numbers times exp(i m theta_j)."""
    q, _ = random_qk(dtype=torch.float64)
    positions = torch.arange(17, dtype=torch.float64) * 0.75 + 3
    cos, sin = RotaryEmbedding(64)(positions)
    inv_freq = 10000.0 ** -(torch.arange(0, 64, 2, dtype=torch.float64) / 64)
    phases = torch.polar(torch.ones(17, 32, dtype=torch.float64), positions[:, None] * inv_freq)
    as_complex = torch.view_as_complex(q.reshape(*q.shape[:-1], 32, 2))
    expected = torch.view_as_real(as_complex * phases).flatten(-2)
    torch.testing.assert_close(apply_rotary(q, cos, sin, "interleaved"), expected, rtol=0, atol=1e-6)


@pytest.mark.parametrize("layout", ["half", "interleaved"])
def test_channels_past_the_table_pass_through(layout):
    q, _ = random_qk(dim=40)
    cos, sin = RotaryEmbedding(24)(torch.arange(17))
    out = apply_rotary(q, cos, sin, layout)
    assert torch.equal(out[..., 24:], q[..., 24:])
    torch.testing.assert_close(out[..., :24], apply_rotary(q[..., :24].contiguous(), cos, sin, layout))
    assert not torch.allclose(out[..., :24], q[..., :24])


@pytest.mark.parametrize("layout", ["half", "interleaved"])
def test_zero_angle_is_identity(layout):
    q, _ = random_qk()
    cos, sin = RotaryEmbedding(64)(torch.zeros(17))
    assert torch.equal(apply_rotary(q, cos, sin, layout), q)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("layout", ["half", "interleaved"])
def test_half_precision_inputs_give_the_float32_result_rounded(dtype, layout):
    q, _ = random_qk()
    cos, sin = RotaryEmbedding(64)(torch.arange(1000, 1017))
    low = q.to(dtype)
    out = apply_rotary(low, cos, sin, layout)
    assert out.dtype == dtype
    # the math ran in float32 on the rounded input: one rounding at the end, nothing else
    assert torch.equal(out, apply_rotary(low.float(), cos, sin, layout).to(dtype))
    eps = torch.finfo(dtype).eps
    exact = apply_rotary(q, cos, sin, layout)
    assert (out.float() - exact).abs().max() <= 2 * eps * q.abs().max()


def test_float64_stays_float64():
    q, _ = random_qk(dtype=torch.float64)
    cos, sin = RotaryEmbedding(64)(torch.arange(17))
    assert apply_rotary(q, cos, sin).dtype == torch.float64


@pytest.mark.parametrize("layout", ["half", "interleaved"])
def test_gradients(layout):
    q = torch.randn(1, 2, 5, 12, dtype=torch.float64, requires_grad=True)
    cos, sin = RotaryEmbedding(8)(torch.arange(5.0) * 1.5)
    assert torch.autograd.gradcheck(lambda x: apply_rotary(x, cos.double(), sin.double(), layout), (q,))


def test_tables_broadcast_over_batch_and_heads():
    q, _ = random_qk()
    cos, sin = RotaryEmbedding(64)(torch.arange(17))
    per_batch = apply_rotary(q, cos.expand(2, 1, 17, 32), sin.expand(2, 1, 17, 32))
    assert torch.equal(per_batch, apply_rotary(q, cos, sin))

"""RoPEAttention: grouped-query heads, causal masking, and a KV cache that changes nothing."""

import math

import pytest
import torch
from einops import rearrange

from axialrope import RoPEAttention, RotaryEmbedding, apply_rotary


def make_attention(num_heads=8, num_kv_heads=2, dim=64, seed=0, **kwargs):
    torch.manual_seed(seed)
    return RoPEAttention(dim, num_heads, num_kv_heads, **kwargs).double()


def reference_attention(attention: RoPEAttention, x: torch.Tensor) -> torch.Tensor:
    """Full causal pass written out: explicit head repetition and softmax, float64."""
    h, kv, d = attention.num_heads, attention.num_kv_heads, attention.head_dim
    q = rearrange(attention.q_proj(x), "b n (h d) -> b h n d", h=h)
    k, v = rearrange(attention.kv_proj(x), "b n (two h d) -> two b h n d", two=2, h=kv)
    cos, sin = RotaryEmbedding(d)(torch.arange(x.shape[1]))
    q, k = apply_rotary(q, cos, sin), apply_rotary(k, cos, sin)
    # query head i uses key/value head i // (h // kv)
    k, v = k.repeat_interleave(h // kv, dim=1), v.repeat_interleave(h // kv, dim=1)
    logits = q @ k.transpose(-1, -2) / math.sqrt(d)
    n = x.shape[1]
    logits = logits.masked_fill(~torch.ones(n, n, dtype=torch.bool).tril(), float("-inf"))
    y = rearrange(logits.softmax(-1) @ v, "b h n d -> b n (h d)")
    return attention.out_proj(y)


@pytest.mark.parametrize("num_heads, num_kv_heads", [(8, 8), (8, 2), (8, 1)])
def test_full_pass_matches_the_written_out_reference(num_heads, num_kv_heads):
    attention = make_attention(num_heads, num_kv_heads)
    x = torch.randn(2, 11, 64, dtype=torch.float64)
    y, cache = attention(x)
    torch.testing.assert_close(y, reference_attention(attention, x), rtol=1e-10, atol=1e-10)
    assert cache.keys.shape == (2, num_kv_heads, 11, 8) and cache.length == 11


def test_prefill_then_one_token_decodes_equal_the_full_pass():
    attention = make_attention()
    x = torch.randn(2, 12, 64, dtype=torch.float64)
    full, _ = attention(x)
    y, cache = attention(x[:, :5])
    outputs = [y]
    for i in range(5, 12):
        y, cache = attention(x[:, i : i + 1], cache)
        outputs.append(y)
    torch.testing.assert_close(torch.cat(outputs, dim=1), full, rtol=1e-10, atol=1e-10)


def test_chunked_prefill_equals_the_full_pass():
    attention = make_attention()
    x = torch.randn(2, 13, 64, dtype=torch.float64)
    full, _ = attention(x)
    outputs, cache, start = [], None, 0
    for size in (3, 5, 1, 4):  # a chunk after a cache attends causally within itself
        y, cache = attention(x[:, start : start + size], cache)
        outputs.append(y)
        start += size
    torch.testing.assert_close(torch.cat(outputs, dim=1), full, rtol=1e-10, atol=1e-10)


def test_cache_holds_each_key_rotated_once_at_its_own_position():
    attention = make_attention()
    x = torch.randn(1, 9, 64, dtype=torch.float64)
    _, cache = attention(x[:, :4])
    _, cache = attention(x[:, 4:], cache)
    k, _ = rearrange(attention.kv_proj(x), "b n (two h d) -> two b h n d", two=2, h=attention.num_kv_heads)
    cos, sin = RotaryEmbedding(attention.head_dim)(torch.arange(9))
    torch.testing.assert_close(cache.keys, apply_rotary(k, cos, sin), rtol=1e-12, atol=1e-12)


def test_outputs_do_not_depend_on_later_tokens():
    attention = make_attention()
    x = torch.randn(1, 10, 64, dtype=torch.float64)
    changed = x.clone()
    changed[:, 6:] += 1
    torch.testing.assert_close(attention(x)[0][:, :6], attention(changed)[0][:, :6], rtol=0, atol=1e-12)

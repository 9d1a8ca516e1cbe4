"""Causal self-attention with RoPE, grouped-query heads and a KV cache (for text)."""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from einops import rearrange
from torch import nn

from .rotary import apply_rotary_qk
from .scaling import ScalingLike
from .tables import RotaryEmbedding
from .validation import is_int


@dataclass
class KVCache:
    """Keys (already rotated) and values of the tokens seen so far.

    keys, values: (batch, num_kv_heads, length, head_dim).
    """

    keys: torch.Tensor
    values: torch.Tensor

    def __post_init__(self) -> None:
        for name in ("keys", "values"):
            value = getattr(self, name)
            if not isinstance(value, torch.Tensor) or value.ndim != 4:
                raise TypeError(
                    f"KVCache {name} must be a (batch, num_kv_heads, length, head_dim) tensor, "
                    f"got {getattr(value, 'shape', type(value).__name__)}"
                )
        for name in ("keys", "values"):
            if not getattr(self, name).is_floating_point():
                raise TypeError(
                    f"KVCache {name} must be floating-point (as the keys and values attention makes), got "
                    f"{getattr(self, name).dtype}"
                )
        if self.keys.dtype != self.values.dtype or self.keys.device != self.values.device:
            raise ValueError(
                f"KVCache keys ({self.keys.dtype} on {self.keys.device}) and values ({self.values.dtype} on "
                f"{self.values.device}) must have one dtype and one device"
            )
        if self.keys.shape[:3] != self.values.shape[:3]:
            raise ValueError(
                f"KVCache values {tuple(self.values.shape)} must hold one entry per key {tuple(self.keys.shape)}: "
                "the same batch, heads and length"
            )

    @property
    def length(self) -> int:
        return self.keys.shape[-2]


class RoPEAttention(nn.Module):
    """Causal grouped-query self-attention; RoPE on q and k; an optional KV cache.

    Args:
        dim: model width; split into num_heads heads of dim // num_heads channels.
        num_heads: query heads.
        num_kv_heads: key/value heads (None: num_heads); num_heads must be a multiple,
            each group of num_heads // num_kv_heads query heads shares one key/value head.
        theta, scaling: RoPE base and context scaling (see `rope_frequencies`).

    forward(x, cache=None) with x (batch, seq, dim) returns (y, cache): y (batch, seq, dim)
    and a `KVCache` holding every key and value so far. The chunk's positions continue
    from cache.length; its tokens attend causally among themselves and to all the cache.
    Keys are rotated once, when they enter the cache. With "dynamic" scaling the table
    follows the current length, so cached keys keep the angles of the step they entered.
    """

    def __init__(
        self,
        dim: int,
        num_heads: int,
        num_kv_heads: int | None = None,
        theta: float = 10000.0,
        scaling: ScalingLike = None,
        bias: bool = False,
    ):
        super().__init__()
        num_kv_heads = num_heads if num_kv_heads is None else num_kv_heads
        for name, value in (("dim", dim), ("num_heads", num_heads), ("num_kv_heads", num_kv_heads)):
            if not is_int(value) or value <= 0:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if dim % num_heads:
            raise ValueError(f"dim={dim} must be divisible by num_heads={num_heads}")
        if num_heads % num_kv_heads:
            raise ValueError(f"num_heads={num_heads} must be divisible by num_kv_heads={num_kv_heads}")
        self.num_heads, self.num_kv_heads = num_heads, num_kv_heads
        self.head_dim = dim // num_heads
        self.q_proj = nn.Linear(dim, num_heads * self.head_dim, bias=bias)
        self.kv_proj = nn.Linear(dim, 2 * num_kv_heads * self.head_dim, bias=bias)
        self.out_proj = nn.Linear(num_heads * self.head_dim, dim, bias=bias)
        self.rope = RotaryEmbedding(self.head_dim, theta=theta, scaling=scaling)

    def forward(self, x: torch.Tensor, cache: KVCache | None = None) -> tuple[torch.Tensor, KVCache]:
        if x.ndim != 3 or x.shape[-1] != self.q_proj.in_features:
            raise ValueError(f"x must have shape (batch, seq, {self.q_proj.in_features}), got {tuple(x.shape)}")
        self._check_input(x)
        if cache is not None:
            self._check_cache(cache, x)
        new, past = x.shape[1], 0 if cache is None else cache.length
        q = rearrange(self.q_proj(x), "b n (h d) -> b h n d", h=self.num_heads)
        k, v = rearrange(self.kv_proj(x), "b n (two h d) -> two b h n d", two=2, h=self.num_kv_heads)
        if cache is not None and cache.keys.dtype != k.dtype:  # torch.cat would promote, attention then fail
            raise TypeError(
                f"cache keys and values are {cache.keys.dtype} but this step's are {k.dtype} (x is {x.dtype}): "
                f"keep the cache in the dtype the attention computes in (cache.keys.to({k.dtype}))"
            )

        positions = torch.arange(past, past + new, device=x.device)
        cos, sin = self.rope(positions, seq_len=past + new)  # (new, head_dim // 2)
        q, k = apply_rotary_qk(q, k, cos, sin)
        if cache is not None:
            k = torch.cat((cache.keys, k), dim=-2)
            v = torch.cat((cache.values, v), dim=-2)

        # query i (position past + i) sees keys 0 .. past + i
        mask = None
        if cache is not None and new > 1:
            mask = torch.ones(new, past + new, dtype=torch.bool, device=x.device).tril(diagonal=past)
        y = F.scaled_dot_product_attention(
            q,
            k,
            v,
            attn_mask=mask,
            is_causal=cache is None and new > 1,
            # shares each key/value head across its query group without repeat_interleave copies
            enable_gqa=self.num_kv_heads != self.num_heads,
        )
        y = rearrange(y, "b h n d -> b n (h d)")
        return self.out_proj(y), KVCache(k, v)

    def _check_input(self, x: torch.Tensor) -> None:
        """x (batch, seq, dim) on the weights' device, floating-point, in their dtype unless autocast casts it."""
        weight = self.q_proj.weight
        if x.device != weight.device:
            raise ValueError(f"x is on {x.device} but the attention's weights are on {weight.device}: move one")
        if not x.is_floating_point():
            raise TypeError(
                f"x must be a floating-point tensor (the attention's weights are {weight.dtype}), got {x.dtype}"
            )
        if x.dtype != weight.dtype and not torch.is_autocast_enabled(x.device.type):
            raise TypeError(
                f"x is {x.dtype} but the attention's weights are {weight.dtype}: cast x (x.to({weight.dtype})) or the "
                f"attention (.to({x.dtype})), or run under torch.autocast"
            )

    def _check_cache(self, cache, x: torch.Tensor) -> None:
        if not isinstance(cache, KVCache):
            raise TypeError(f"cache must be a KVCache (or None), got {type(cache).__name__}")
        if cache.keys.device != x.device:
            raise ValueError(f"cache keys and values are on {cache.keys.device} but x is on {x.device}: move one")
        expected = (x.shape[0], self.num_kv_heads, cache.length, self.head_dim)
        for name in ("keys", "values"):
            shape = tuple(getattr(cache, name).shape)
            if shape != expected:
                raise ValueError(
                    f"cache {name} must have shape (batch={x.shape[0]}, num_kv_heads={self.num_kv_heads}, length, "
                    f"head_dim={self.head_dim}), got {shape}"
                )

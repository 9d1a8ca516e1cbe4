"""DiT blocks: attention with optional q/k RMSNorm and RoPE, adaLN-Zero block, final layer.

Tokens are (b, seq, dim); heads are (b, heads, seq, head_dim). A RoPE table is the
core's half-width (cos, sin), each (seq, rotary_dim // 2), built once per forward by
the model and handed to every block. A list of tables is SPA's position variants: the
attention runs once per table and its outputs are averaged before the output projection.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from einops import rearrange
from torch import nn

from axialrope import apply_rotary_qk, rms_norm_rotary_qk

Table = tuple[torch.Tensor, torch.Tensor]


def modulate(x: torch.Tensor, shift: torch.Tensor, scale: torch.Tensor) -> torch.Tensor:
    """adaLN: x (b, seq, dim) normalised, then x * (1 + scale) + shift with shift, scale (b, dim)."""
    return x * (1 + scale.unsqueeze(1)) + shift.unsqueeze(1)


class Attention(nn.Module):
    """Multi-head self-attention; q/k RMSNorm (optional) then RoPE (optional) on q and k.

    forward(x, rope=None, attention_scale=1.0): x (b, seq, dim) -> (b, seq, dim).
    attention_scale multiplies the logits (1 / sqrt(head_dim) is applied as usual).
    rope a list of tables (SPA): the attention outputs of each, averaged.
    With both q/k RMSNorm and RoPE, the two run as one pass (`rms_norm_rotary_qk`); the norms
    stay modules, so their weights keep their names in checkpoints.
    """

    def __init__(self, dim: int, num_heads: int, qk_norm: bool = False):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = dim // num_heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.q_norm = nn.RMSNorm(self.head_dim, eps=1e-6) if qk_norm else nn.Identity()
        self.k_norm = nn.RMSNorm(self.head_dim, eps=1e-6) if qk_norm else nn.Identity()
        self.proj = nn.Linear(dim, dim)

    def project(self, x: torch.Tensor, rope: Table | None = None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """x (b, seq, dim) -> q, k, v (b, heads, seq, head_dim), q and k normalised and rotated."""
        q, k, v = rearrange(self.qkv(x), "b n (three h d) -> three b h n d", three=3, h=self.num_heads)
        if rope is None:
            return self.q_norm(q), self.k_norm(k), v
        cos, sin = rope
        if isinstance(self.q_norm, nn.RMSNorm):  # normalised and rotated in one pass
            q, k = rms_norm_rotary_qk(q, k, cos, sin, self.q_norm.weight, self.k_norm.weight, eps=self.q_norm.eps)
        else:
            q, k = apply_rotary_qk(q, k, cos, sin)
        return q, k, v

    def forward(
        self, x: torch.Tensor, rope: Table | list[Table] | None = None, attention_scale: float = 1.0
    ) -> torch.Tensor:
        scale = attention_scale / math.sqrt(self.head_dim)
        if isinstance(rope, list):
            y = averaged_attention(self.project, x, rope, scale)
        else:
            q, k, v = self.project(x, rope)
            y = F.scaled_dot_product_attention(q, k, v, scale=scale)
        return self.proj(rearrange(y, "b h n d -> b n (h d)"))


def averaged_attention(project, x: torch.Tensor, tables: list[Table], scale: float) -> torch.Tensor:
    """SPA: mean over `tables` of softmax(q k^T * scale) v with q, k rotated by each table, (b, heads, seq, head_dim).

    `project(x, None)` gives q, k, v (b, heads, seq, head_dim), q and k normalised, not rotated: projected once,
    rotated per table. The averaging is of attention outputs, not of rotations (a mean of rotations is no
    rotation, and the softmax does not commute with it). The sum runs in float32 at least.
    """
    if not tables:
        raise ValueError("averaged_attention needs at least one table")
    q, k, v = project(x, None)
    total = None
    for cos, sin in tables:
        y = F.scaled_dot_product_attention(*apply_rotary_qk(q, k, cos, sin), v, scale=scale)
        y = y.to(torch.promote_types(y.dtype, torch.float32))
        total = y if total is None else total + y
    return (total / len(tables)).to(v.dtype)


class DiTBlock(nn.Module):
    """A DiT block with adaLN-Zero conditioning (Peebles and Xie, 2023).

    forward(x, c, rope=None, attention_scale=1.0): x (b, seq, dim) tokens, c (b, dim) the
    conditioning (timestep + class); returns (b, seq, dim). With the modulation zeroed
    (as `DiT.initialize_weights` does) every gate is 0 and the block is the identity.
    """

    def __init__(self, dim: int, num_heads: int, mlp_ratio: float = 4.0, qk_norm: bool = False):
        super().__init__()
        hidden = int(dim * mlp_ratio)
        self.norm1 = nn.LayerNorm(dim, elementwise_affine=False, eps=1e-6)
        self.attn = Attention(dim, num_heads, qk_norm=qk_norm)
        self.norm2 = nn.LayerNorm(dim, elementwise_affine=False, eps=1e-6)
        self.mlp = nn.Sequential(nn.Linear(dim, hidden), nn.GELU(approximate="tanh"), nn.Linear(hidden, dim))
        self.adaLN_modulation = nn.Sequential(nn.SiLU(), nn.Linear(dim, 6 * dim))

    def forward(
        self, x: torch.Tensor, c: torch.Tensor, rope: Table | list[Table] | None = None, attention_scale: float = 1.0
    ) -> torch.Tensor:
        shift_msa, scale_msa, gate_msa, shift_mlp, scale_mlp, gate_mlp = self.adaLN_modulation(c).chunk(6, dim=1)
        x = x + gate_msa.unsqueeze(1) * self.attn(modulate(self.norm1(x), shift_msa, scale_msa), rope, attention_scale)
        x = x + gate_mlp.unsqueeze(1) * self.mlp(modulate(self.norm2(x), shift_mlp, scale_mlp))
        return x


class FinalLayer(nn.Module):
    """adaLN then a linear map from tokens (b, seq, dim) to patches (b, seq, out_dim)."""

    def __init__(self, dim: int, out_dim: int):
        super().__init__()
        self.norm_final = nn.LayerNorm(dim, elementwise_affine=False, eps=1e-6)
        self.linear = nn.Linear(dim, out_dim)
        self.adaLN_modulation = nn.Sequential(nn.SiLU(), nn.Linear(dim, 2 * dim))

    def forward(self, x: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
        shift, scale = self.adaLN_modulation(c).chunk(2, dim=1)
        return self.linear(modulate(self.norm_final(x), shift, scale))


__all__ = ["Attention", "DiTBlock", "FinalLayer", "modulate"]

"""Applying a rotary table to queries or keys.

A table is half-width: `cos` and `sin` hold one value per rotated pair. Which channels
form a pair is the `layout`, spelled below as einops patterns:

    half         pair j = channels (j, j + r/2)   '... (two pair) -> ... two pair'
    interleaved  pair j = channels (2j, 2j + 1)   '... (pair two) -> ... two pair'

where r = 2 * cos.shape[-1] is the rotary dimension. Channels past r pass through.
"""

from __future__ import annotations

import torch
from einops import rearrange

LAYOUTS = ("half", "interleaved")

_SPLIT_PAIRS = {
    "half": "... (two pair) -> ... two pair",
    "interleaved": "... (pair two) -> ... two pair",
}
_JOIN_PAIRS = {
    "half": "... two pair -> ... (two pair)",
    "interleaved": "... two pair -> ... (pair two)",
}


def check_layout(layout) -> str:
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {LAYOUTS}, got {layout!r}")
    return layout


def _check_table(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> None:
    for name, value in (("x", x), ("cos", cos), ("sin", sin)):
        if not isinstance(value, torch.Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(value).__name__}")
    if cos.shape != sin.shape:
        raise ValueError(f"cos and sin must have the same shape, got {tuple(cos.shape)} and {tuple(sin.shape)}")
    if cos.ndim == 0:
        raise ValueError("cos and sin must have a last dimension (one value per rotated pair)")
    if 2 * cos.shape[-1] > x.shape[-1]:
        raise ValueError(
            f"cos/sin are too wide for x: they rotate {2 * cos.shape[-1]} channels "
            f"({cos.shape[-1]} pairs) but x has only {x.shape[-1]} channels in its last dimension"
        )
    try:
        torch.broadcast_shapes(x.shape[:-1], cos.shape[:-1])
    except RuntimeError:
        raise ValueError(
            f"cos/sin of shape {tuple(cos.shape)} do not broadcast against x of shape {tuple(x.shape)} "
            "(all but the last dimension must broadcast, e.g. cos (seq, pairs) for x (batch, heads, seq, dim))"
        ) from None


def apply_rotary(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, layout: str = "half") -> torch.Tensor:
    """Rotates the first `2 * cos.shape[-1]` channels of `x` pair by pair.

    Args:
        x: (..., dim), for example (batch, heads, seq, head_dim).
        cos, sin: (..., pairs), half-width tables that broadcast against x without its
            last dimension, for example (seq, pairs); 2 * pairs <= dim.
        layout: "half" or "interleaved" (see the module docstring).

    Returns:
        A tensor shaped and typed like x. Pair (a, b) becomes
        (a cos - b sin, b cos + a sin); the math runs in float32 (float64 stays float64).
    """
    _check_table(x, cos, sin)
    check_layout(layout)
    rotary_dim = 2 * cos.shape[-1]
    compute_dtype = torch.promote_types(x.dtype, torch.float32)
    pairs = rearrange(x[..., :rotary_dim].to(compute_dtype), _SPLIT_PAIRS[layout], two=2)
    first, second = pairs.unbind(dim=-2)
    rotated = torch.stack((first * cos - second * sin, second * cos + first * sin), dim=-2)
    out = rearrange(rotated, _JOIN_PAIRS[layout]).to(x.dtype)
    if rotary_dim == x.shape[-1]:
        return out
    return torch.cat((out, x[..., rotary_dim:]), dim=-1)

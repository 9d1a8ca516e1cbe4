"""Kernels of RMSNorm then rotation in one pass (`rms_norm_rotary_qk`): the formula, eager, compiled.

A row is what one RMSNorm normalises: one head's channels x (..., head_dim), or with
`across_heads` all heads of a token together, x (..., heads, head_dim) (Wan's q/k norm).
Per row, in float32 (float64 stays float64):

    rstd = 1 / sqrt(mean(x^2) + eps)
    n    = x * rstd * w                 (w: one weight per channel of the row, or none)
    y    = R(angle) n                   (each head's first 2 * pairs channels; the rest of n as is)

rounded to x's dtype once. Backward, with g = R(-angle) dy (the rotation is orthogonal) and
xhat = x * rstd:

    dx = rstd * (g w - xhat * mean(g w xhat))      dw = sum over rows of g xhat

    norm_rotate_composite             the forward in differentiable torch ops (what torch.compile
                                      traces inside a caller's graph, and what inductor compiles)
    norm_rotate_backward_composite    the backward in torch ops (what inductor compiles)
    norm_rotate_eager, ..._backward_eager   the same in eager ops into few temporaries
    norm_rotate_compiled, ..._backward_compiled   the composites compiled (see `compiling`), q and
                                      k in one call sharing their reads of the table

(and, on CUDA, the Triton kernels in `triton_norm_rope`). The rotation itself is `kernels`'.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from . import compiling
from .eager import (
    TablesInOrder,
    compute_dtype,
    inverse_permutation,
    join_pairs,
    memory_order,
    rotate_composite,
    rotate_into,
    split_pairs,
)


def _row_dims(across_heads: bool) -> tuple[int, ...]:
    return (-2, -1) if across_heads else (-1,)


def _sum_of_squares(x: torch.Tensor, xf: torch.Tensor, cos: torch.Tensor, layout: str, across_heads: bool):
    """sum(x^2) over each row, (..., 1) or (..., 1, 1); xf is x in the compute dtype.

    For float32 and float64 x it is written so that inductor runs it in the rotation's loop: one
    pass over x in memory, not two. Inductor fuses a reduction with the pointwise loop after it
    only if both iterate over the same dims. The rotation's loop keeps the token dim apart (it
    indexes the table), while a reduction that reads x alone runs over rows flattened to one dim.
    Adding `0 * cos` (exact: the table is finite) makes the reduction index the table too, so it
    keeps the rotation's dims and fuses. Half-precision x keeps the plain sum: there one loop was
    slower (its per-row work, not memory, is the limit; benchmarks/rope_apply.py). So do
    interleaved pairs, whose stride-2 members inductor reads one element at a time.
    """
    dims = _row_dims(across_heads)
    if x.dtype != xf.dtype or layout != "half":
        return xf.square().sum(dims, keepdim=True)
    first, second, rest = split_pairs(xf, cos.shape[-1], layout)
    total = (first.square() + second.square() + 0 * cos).sum(dims, keepdim=True)
    if rest is not None:  # partial rotary: the channels that are not rotated
        total = total + rest.square().sum(dims, keepdim=True)
    return total


def _row_size(x: torch.Tensor, across_heads: bool) -> int:
    return x.shape[-1] * (x.shape[-2] if across_heads else 1)


def rstd_from_sum_of_squares(sum_of_squares: torch.Tensor, row_size: int, eps: float) -> torch.Tensor:
    """1 / sqrt(mean(x^2) + eps) from the rows' sums of squares."""
    return torch.rsqrt(sum_of_squares / row_size + eps)


def _norm_rotate(x, cos, sin, weight, eps: float, layout: str, across_heads: bool):
    """(y, sum of squares per row): norm_rotate_composite before its rstd is formed."""
    dtype = compute_dtype(x, cos)
    xf = x.to(dtype)
    sum_of_squares = _sum_of_squares(x, xf, cos, layout, across_heads)
    normed = xf * rstd_from_sum_of_squares(sum_of_squares, _row_size(x, across_heads), eps)
    if weight is not None:
        normed = normed * weight.to(dtype)
    return rotate_composite(normed, cos, sin, layout, out_dtype=x.dtype), sum_of_squares


def norm_rotate_composite(
    x: Tensor, cos: Tensor, sin: Tensor, weight: Tensor | None, eps: float, layout: str, across_heads: bool = False
) -> tuple[Tensor, Tensor]:
    """(y, rstd): y like x (rounded once to x's dtype), rstd (..., 1) or (..., 1, 1) in the compute dtype.

    x (..., head_dim) or, across heads, (..., heads, head_dim); cos, sin (..., pairs) broadcast
    against x without its last dim; weight None or shaped like a row ((head_dim,) or (heads, head_dim)).
    """
    y, sum_of_squares = _norm_rotate(x, cos, sin, weight, eps, layout, across_heads)
    return y, rstd_from_sum_of_squares(sum_of_squares, _row_size(x, across_heads), eps)


def norm_rotate_backward_composite(
    grad: Tensor,
    x: Tensor,
    rstd: Tensor,
    cos: Tensor,
    sin: Tensor,
    weight: Tensor | None,
    layout: str,
    across_heads: bool = False,
) -> tuple[Tensor, Tensor | None]:
    """(dx, dw) of y = norm_rotate(x) for the output gradient grad (shaped like x); dw None without weight.

    For half pairs it is written member by member of each pair (first, second, the unrotated
    rest), with R(-angle) dy rebuilt for each of its three uses: inductor then computes it inside
    each loop instead of writing it out (the joined form costs two more passes over a temporary of
    x's size). Interleaved members sit at stride 2, which inductor's CPU code reads one element at
    a time; there the joined form is faster (the interleaved column of benchmarks/rope_apply.py).
    """
    if layout != "half":
        return _norm_rotate_backward_joined(grad, x, rstd, cos, sin, weight, layout, across_heads)
    dtype, pairs = rstd.dtype, cos.shape[-1]

    def members():
        """[(g w, g, xhat)] per member, g = R(-angle) dy and xhat = x * rstd: (..., pairs) for the
        two members of the pairs, (..., rest) for the unrotated channels if there are any."""
        g1, g2, g_rest = split_pairs(grad.to(dtype), pairs, layout)
        x1, x2, x_rest = split_pairs(x.to(dtype) * rstd, pairs, layout)
        parts = [(g1 * cos + g2 * sin, x1), (g2 * cos - g1 * sin, x2)] + ([] if g_rest is None else [(g_rest, x_rest)])
        if weight is None:
            return [(g, g, xhat) for g, xhat in parts]
        return [
            (g * w, g, xhat) for (g, xhat), w in zip(parts, split_pairs(weight.to(dtype), pairs, layout), strict=False)
        ]

    dims = _row_dims(across_heads)
    (gw1, _, x1), (gw2, _, x2), *rest = members()
    total = (gw1 * x1 + gw2 * x2).sum(dims, keepdim=True)  # one reduction over the pairs
    for gw, _, xhat in rest:
        total = total + (gw * xhat).sum(dims, keepdim=True)
    mean = total / _row_size(x, across_heads)
    dx = join_pairs(layout, *[(rstd * (gw - xhat * mean)).to(x.dtype) for gw, _, xhat in members()])
    if weight is None:
        return dx, None
    lead = tuple(range(x.ndim - weight.ndim))
    return dx, join_pairs(layout, *[(g * xhat).sum(lead).to(weight.dtype) for _, g, xhat in members()])


def _norm_rotate_backward_joined(grad, x, rstd, cos, sin, weight, layout: str, across_heads: bool):
    """norm_rotate_backward_composite with R(-angle) dy formed once as a whole tensor."""
    dtype = rstd.dtype
    g = rotate_composite(grad.to(dtype), cos, -sin, layout)
    xhat = x.to(dtype) * rstd
    gw = g if weight is None else g * weight.to(dtype)
    dx = rstd * (gw - xhat * (gw * xhat).mean(_row_dims(across_heads), keepdim=True))
    if weight is None:
        return dx.to(x.dtype), None
    lead = tuple(range(x.ndim - weight.ndim))
    return dx.to(x.dtype), (g * xhat).sum(lead).to(weight.dtype)


# -- eager ------------------------------------------------------------------------------------


def _rstd(x: torch.Tensor, dtype: torch.dtype, eps: float, across_heads: bool) -> torch.Tensor:
    """1 / sqrt(mean(x^2) + eps) per row, (..., 1) or (..., 1, 1): one read of x, no temporary of its size."""
    norm = torch.linalg.vector_norm(x, 2, dim=_row_dims(across_heads), keepdim=True, dtype=dtype)
    return rstd_from_sum_of_squares(norm.square_(), _row_size(x, across_heads), eps)


def norm_rotate_eager(
    x: Tensor, cos: Tensor, sin: Tensor, weight: Tensor | None, eps: float, layout: str, across_heads: bool = False
) -> tuple[Tensor, Tensor]:
    """norm_rotate_composite's (y, rstd) in eager ops: rstd, one normalised float32 temporary, its rotation."""
    dtype = compute_dtype(x, cos)
    rstd = _rstd(x, dtype, eps, across_heads)
    normed = x.to(dtype) * rstd  # the one temporary (a copy either way)
    if weight is not None:
        normed.mul_(weight.to(dtype))
    out = torch.empty_like(x)
    rotate_into(normed, cos, sin, layout, out)  # rounds to x's dtype on the way out
    return out, rstd


def norm_rotate_backward_eager(
    grad: Tensor,
    x: Tensor,
    rstd: Tensor,
    cos: Tensor,
    sin: Tensor,
    weight: Tensor | None,
    layout: str,
    across_heads: bool = False,
) -> tuple[Tensor, Tensor | None]:
    """norm_rotate_backward_composite's (dx, dw) in eager ops."""
    dtype = rstd.dtype
    g = torch.empty(grad.shape, dtype=dtype, device=grad.device)
    rotate_into(grad, cos, sin, layout, g, inverse=True)  # R(-angle) dy, in the compute dtype
    xhat = x.to(dtype) * rstd
    dw = None
    if weight is not None:
        lead = tuple(range(x.ndim - weight.ndim))
        dw = (g * xhat).sum(lead).to(weight.dtype)
        g.mul_(weight.to(dtype))
    mean = (g * xhat).mean(_row_dims(across_heads), keepdim=True)
    dx = g.sub_(xhat.mul_(mean)).mul_(rstd)
    return dx.to(x.dtype), dw


# -- torch.compile ------------------------------------------------------------------------------


def _norm_rotations(layout: str, across_heads: bool, eps: float, need_rstd: bool, *args):
    """args = (x, cos, sin, weight) per tensor -> (y, sum of squares per row) per tensor, flattened
    (the sums only if need_rstd: a kernel that returned rstd itself would form it in a loop of its
    own and read x twice)."""
    outs = []
    for i in range(0, len(args), 4):
        y, sum_of_squares = _norm_rotate(args[i], args[i + 1], args[i + 2], args[i + 3], eps, layout, across_heads)
        outs += [y, sum_of_squares] if need_rstd else [y]
    return tuple(outs)


def _norm_rotation_backwards(layout: str, across_heads: bool, *args):
    """args = (grad, x, rstd, cos, sin, weight) per tensor -> (dx, dw) per tensor, flattened."""
    outs = []
    for i in range(0, len(args), 6):
        outs += norm_rotate_backward_composite(*args[i : i + 6], layout, across_heads)
    return tuple(outs)


def _order(x: torch.Tensor, across_heads: bool):
    """x's memory order over the dims a row does not span (the heads stay put across heads), or None."""
    return memory_order(x, keep=2 if across_heads else 1)


def compiled_spec(
    xs: Sequence[Tensor],
    weights: Sequence[Tensor | None],
    cos: Tensor,
    layout: str,
    across_heads: bool,
    kind: str = "forward",
) -> tuple:
    """The spec a compiled kind ("forward", "training forward" (with rstd) or "backward") of xs runs
    under; its compile budget is kept per spec."""
    per_x = tuple(
        (
            x.dtype,
            x.ndim,
            2 * cos.shape[-1] == x.shape[-1],
            w is not None and w.dtype,
            _order(x, across_heads) is not None,
        )
        for x, w in zip(xs, weights, strict=True)
    )
    return ("norm_rotate", kind, layout, across_heads, cos.dtype, cos.ndim, xs[0].device.type, per_x)


def norm_rotate_compiled(
    xs: Sequence[Tensor],
    weights: Sequence[Tensor | None],
    cos: Tensor,
    sin: Tensor,
    eps: float,
    layout: str,
    across_heads: bool = False,
    need_rstd: bool = True,
) -> list[tuple[Tensor, Tensor | None]] | None:
    """[(y, rstd) for each x] from one compiled call, each x in its memory order (rstd None unless
    need_rstd); None if compiling failed."""
    args, orders, tables = [], [], TablesInOrder(cos, sin)
    for x, weight in zip(xs, weights, strict=True):
        order = _order(x, across_heads)
        orders.append(order)
        args += [x if order is None else x.permute(order), *tables(x.ndim, order), weight]
    spec = compiled_spec(xs, weights, cos, layout, across_heads, "training forward" if need_rstd else "forward")
    outs = compiling.run(spec, _norm_rotations, layout, across_heads, float(eps), need_rstd, *args)
    if outs is None:
        return None
    step = 2 if need_rstd else 1
    results = []
    for i, order in enumerate(orders):
        y = outs[step * i]
        rstd = rstd_from_sum_of_squares(outs[step * i + 1], _row_size(xs[i], across_heads), eps) if need_rstd else None
        if order is not None:
            back = inverse_permutation(order)
            y, rstd = y.permute(back), None if rstd is None else rstd.permute(back)
        results.append((y, rstd))
    return results


def norm_rotate_backward_compiled(
    grads: Sequence[Tensor],
    xs: Sequence[Tensor],
    rstds: Sequence[Tensor],
    weights: Sequence[Tensor | None],
    cos: Tensor,
    sin: Tensor,
    layout: str,
    across_heads: bool = False,
) -> list[tuple[Tensor, Tensor | None]] | None:
    """[(dx, dw) for each x] from one compiled call, in each x's memory order; None if compiling failed.

    Each permuted x gets table views of its own: shared ones let inductor merge the backward loops
    of q and k, which measured slower in the projection layout (benchmarks/rope_apply.py).
    """
    args, orders = [], []
    for grad, x, rstd, weight in zip(grads, xs, rstds, weights, strict=True):
        order = _order(x, across_heads)
        orders.append(order)
        per_row = (grad, x, rstd) if order is None else (grad.permute(order), x.permute(order), rstd.permute(order))
        args += [*per_row, *TablesInOrder(cos, sin)(x.ndim, order), weight]
    spec = compiled_spec(xs, weights, cos, layout, across_heads, "backward")
    outs = compiling.run(spec, _norm_rotation_backwards, layout, across_heads, *args)
    if outs is None:
        return None
    return [
        (outs[2 * i] if order is None else outs[2 * i].permute(inverse_permutation(order)), outs[2 * i + 1])
        for i, order in enumerate(orders)
    ]


__all__ = [
    "compiled_spec",
    "norm_rotate_backward_compiled",
    "norm_rotate_backward_composite",
    "norm_rotate_backward_eager",
    "norm_rotate_compiled",
    "norm_rotate_composite",
    "norm_rotate_eager",
    "rstd_from_sum_of_squares",
]

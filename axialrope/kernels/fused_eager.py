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

import torch

from . import compiling
from .eager import compute_dtype, inverse_permutation, memory_order, rotate_composite, rotate_into


def _row_dims(across_heads: bool) -> tuple[int, ...]:
    return (-2, -1) if across_heads else (-1,)


def norm_rotate_composite(x, cos, sin, weight, eps: float, layout: str, across_heads: bool = False):
    """(y, rstd): y like x (rounded once to x's dtype), rstd (..., 1) or (..., 1, 1) in the compute dtype.

    x (..., head_dim) or, across heads, (..., heads, head_dim); cos, sin (..., pairs) broadcast
    against x without its last dim; weight None or shaped like a row ((head_dim,) or (heads, head_dim)).
    """
    dtype = compute_dtype(x, cos)
    xf = x.to(dtype)
    rstd = torch.rsqrt(xf.square().mean(_row_dims(across_heads), keepdim=True) + eps)
    normed = xf * rstd
    if weight is not None:
        normed = normed * weight.to(dtype)
    return rotate_composite(normed, cos, sin, layout, out_dtype=x.dtype), rstd


def norm_rotate_backward_composite(grad, x, rstd, cos, sin, weight, layout: str, across_heads: bool = False):
    """(dx, dw) of y = norm_rotate(x) for the output gradient grad (shaped like x); dw None without weight."""
    dtype = rstd.dtype
    g = rotate_composite(grad.to(dtype), cos, -sin, layout)  # R(-angle) dy
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
    dims = _row_dims(across_heads)
    count = x.shape[-1] * (x.shape[-2] if across_heads else 1)
    norm = torch.linalg.vector_norm(x, 2, dim=dims, keepdim=True, dtype=dtype)
    return norm.square_().div_(count).add_(eps).rsqrt_()


def norm_rotate_eager(x, cos, sin, weight, eps: float, layout: str, across_heads: bool = False):
    """norm_rotate_composite's (y, rstd) in eager ops: rstd, one normalised float32 temporary, its rotation."""
    dtype = compute_dtype(x, cos)
    rstd = _rstd(x, dtype, eps, across_heads)
    normed = x.to(dtype) * rstd  # the one temporary (a copy either way)
    if weight is not None:
        normed.mul_(weight.to(dtype))
    out = torch.empty_like(x)
    rotate_into(normed, cos, sin, layout, out)  # rounds to x's dtype on the way out
    return out, rstd


def norm_rotate_backward_eager(grad, x, rstd, cos, sin, weight, layout: str, across_heads: bool = False):
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
    """args = (x, cos, sin, weight) per tensor -> (y, rstd) per tensor, flattened (rstd only if need_rstd)."""
    outs = []
    for i in range(0, len(args), 4):
        y, rstd = norm_rotate_composite(args[i], args[i + 1], args[i + 2], args[i + 3], eps, layout, across_heads)
        outs += [y, rstd] if need_rstd else [y]
    return tuple(outs)


def _norm_rotation_backwards(layout: str, across_heads: bool, *args):
    """args = (grad, x, rstd, cos, sin, weight) per tensor -> (dx, dw) per tensor, flattened."""
    outs = []
    for i in range(0, len(args), 6):
        outs += norm_rotate_backward_composite(*args[i:i + 6], layout, across_heads)
    return tuple(outs)


def _order(x: torch.Tensor, across_heads: bool):
    """x's memory order over the dims a row does not span (the heads stay put across heads), or None."""
    return memory_order(x, keep=2 if across_heads else 1)


def _permuted(t: torch.Tensor, shape, order):
    """t (a table or rstd) broadcast to shape and permuted by order (stride-0 views, no copy)."""
    return t.expand(shape).permute(order)


def compiled_spec(xs, weights, cos, layout: str, across_heads: bool, kind: str = "forward") -> tuple:
    """The spec a compiled kind ("forward", "training forward" (with rstd) or "backward") of xs runs
    under; its compile budget is kept per spec."""
    per_x = tuple((x.dtype, x.ndim, 2 * cos.shape[-1] == x.shape[-1], w is not None and w.dtype,
                   _order(x, across_heads) is not None) for x, w in zip(xs, weights))
    return ("norm_rotate", kind, layout, across_heads, cos.dtype, cos.ndim, xs[0].device.type, per_x)


def norm_rotate_compiled(xs, weights, cos, sin, eps: float, layout: str, across_heads: bool = False,
                         need_rstd: bool = True):
    """[(y, rstd) for each x] from one compiled call, each x in its memory order (rstd None unless
    need_rstd); None if compiling failed."""
    args, orders = [], []
    for x, weight in zip(xs, weights):
        order = _order(x, across_heads)
        orders.append(order)
        if order is None:
            args += [x, cos, sin, weight]
        else:
            shape = (*x.shape[:-1], cos.shape[-1])
            args += [x.permute(order), _permuted(cos, shape, order), _permuted(sin, shape, order), weight]
    spec = compiled_spec(xs, weights, cos, layout, across_heads, "training forward" if need_rstd else "forward")
    outs = compiling.run(spec, _norm_rotations, layout, across_heads, float(eps), need_rstd, *args)
    if outs is None:
        return None
    step = 2 if need_rstd else 1
    results = []
    for i, order in enumerate(orders):
        y, rstd = outs[step * i], outs[step * i + 1] if need_rstd else None
        if order is not None:
            back = inverse_permutation(order)
            y, rstd = y.permute(back), None if rstd is None else rstd.permute(back)
        results.append((y, rstd))
    return results


def norm_rotate_backward_compiled(grads, xs, rstds, weights, cos, sin, layout: str, across_heads: bool = False):
    """[(dx, dw) for each x] from one compiled call, in each x's memory order; None if compiling failed."""
    args, orders = [], []
    for grad, x, rstd, weight in zip(grads, xs, rstds, weights):
        order = _order(x, across_heads)
        orders.append(order)
        if order is None:
            args += [grad, x, rstd, cos, sin, weight]
        else:
            shape = (*x.shape[:-1], cos.shape[-1])
            args += [grad.permute(order), x.permute(order), rstd.permute(order),
                     _permuted(cos, shape, order), _permuted(sin, shape, order), weight]
    spec = compiled_spec(xs, weights, cos, layout, across_heads, "backward")
    outs = compiling.run(spec, _norm_rotation_backwards, layout, across_heads, *args)
    if outs is None:
        return None
    return [(outs[2 * i] if order is None else outs[2 * i].permute(inverse_permutation(order)), outs[2 * i + 1])
            for i, order in enumerate(orders)]


__all__ = [
    "compiled_spec",
    "norm_rotate_backward_compiled",
    "norm_rotate_backward_composite",
    "norm_rotate_backward_eager",
    "norm_rotate_compiled",
    "norm_rotate_composite",
    "norm_rotate_eager",
]

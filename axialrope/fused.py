"""RMSNorm then RoPE on queries and keys in one pass: `rms_norm_rotary_qk`.

A DiT with q/k RMSNorm (ours, Flux, Wan, Qwen-Image, HunyuanVideo, LTX) normalises q and k right
before rotating them: two passes over each where one does.

    q, k = rms_norm_rotary_qk(q, k, cos, sin, attn.q_norm.weight, attn.k_norm.weight, eps=1e-6)

is, up to float rounding (it rounds once, the pair of ops twice),

    q, k = apply_rotary_qk(F.rms_norm(q, (d,), q_weight, eps), F.rms_norm(k, (d,), k_weight, eps), cos, sin)

The kernel is chosen as for `apply_rotary` (`backends.choose`), and a call the few-ops kernel takes
is remembered in the same plan cache. The formulas and the backward are in `kernels.fused_eager`.
"""

from __future__ import annotations

import math
from numbers import Real

import torch
import torch.nn.functional as F
from torch.autograd.function import once_differentiable

from .kernels import backends, fused_eager, triton_norm_rope
from .kernels.eager import compute_dtype, plan_few_ops
from .rotary import check_layout, check_table


def _check_weight(weight, x: torch.Tensor, name: str, x_name: str, across_heads: bool):
    """weight as one value per channel of a row ((head_dim,), or (heads, head_dim) across heads), or None."""
    if weight is None:
        return None
    if not isinstance(weight, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor or None, got {type(weight).__name__}")
    if not weight.is_floating_point():
        raise TypeError(f"{name} must be a floating-point tensor, got {weight.dtype}")
    row = (x.shape[-2], x.shape[-1]) if across_heads else (x.shape[-1],)
    if tuple(weight.shape) not in (row, (math.prod(row),)):
        what = f"{x_name}'s heads x head_dim = {row[0]} x {row[1]}" if across_heads else f"{x_name}'s head_dim {row[0]}"
        raise ValueError(f"{name} must have one value per channel of {what}, got shape {tuple(weight.shape)}")
    if weight.device != x.device:
        raise ValueError(f"{name} is on {weight.device} but {x_name} is on {x.device}")
    return weight.view(row)


def _check(q, k, cos, sin, eps, layout, across_heads) -> None:
    check_table(q, cos, sin, "q")
    check_table(k, cos, sin, "k")
    check_layout(layout)
    for name, x in (("q", q), ("k", k)):
        if not x.is_floating_point():
            raise TypeError(f"{name} must be a floating-point tensor, got {x.dtype}")
    if not isinstance(across_heads, bool):
        raise TypeError(f"across_heads must be a bool, got {across_heads!r}")
    if across_heads:
        for name, x in (("q", q), ("k", k)):
            if x.ndim < 2:
                raise ValueError(f"across_heads needs {name} shaped (..., heads, head_dim), got shape {tuple(x.shape)}")
    if isinstance(eps, bool) or not isinstance(eps, Real) or not math.isfinite(eps) or eps <= 0:
        raise ValueError(f"eps must be a positive number, got {eps!r}")


def _plan_few_ops(xs, weights, cos, eps, layout, across_heads):
    """run(xs, weights, cos, sin) for tiny inputs like these (one decoded token): torch's F.rms_norm
    in the compute dtype, then the few-ops rotation, rounded once; plain differentiable ops, where
    dispatch is the cost. Everything that depends on shapes and dtypes is settled here."""
    dtype = compute_dtype(xs[0], cos)
    rows = [tuple(x.shape[-2:] if across_heads else x.shape[-1:]) for x in xs]
    out_dtypes = [x.dtype for x in xs]
    normed_like = [
        torch.empty(x.shape, dtype=dtype, device=x.device).requires_grad_(
            x.requires_grad or (w is not None and w.requires_grad)
        )
        for x, w in zip(xs, weights, strict=True)
    ]
    rotate = plan_few_ops(normed_like, cos, layout)

    def run(xs, weights, cos, sin):
        normed = [
            F.rms_norm(x.to(dtype), row, None if w is None else w.reshape(row).to(dtype), eps)
            for x, w, row in zip(xs, weights, rows, strict=True)
        ]
        return tuple(r.to(out) for r, out in zip(rotate(normed, cos, sin), out_dtypes, strict=True))

    return run


def _forward(xs, weights, cos, sin, eps, layout, across_heads, backend, need_rstd):
    """[(y, rstd)] of each x with one fast kernel, no autograd (rstd may be None unless need_rstd)."""
    if backend == "triton":
        return [
            triton_norm_rope.norm_rotate(x, cos, sin, w, eps, layout, across_heads, need_rstd)
            for x, w in zip(xs, weights, strict=True)
        ]
    if backend == "compiled":
        results = fused_eager.norm_rotate_compiled(xs, weights, cos, sin, eps, layout, across_heads, need_rstd)
        if results is not None:
            return results
    return [
        fused_eager.norm_rotate_eager(x, cos, sin, w, eps, layout, across_heads)
        for x, w in zip(xs, weights, strict=True)
    ]


def _backward(grads, xs, rstds, weights, cos, sin, layout, across_heads, backend):
    """[(dx, dw)] of each x with the forward's kernel."""
    if backend == "triton":
        return [
            triton_norm_rope.norm_rotate_backward(g, x, r, cos, sin, w, layout, across_heads)
            for g, x, r, w in zip(grads, xs, rstds, weights, strict=True)
        ]
    if backend == "compiled":
        results = fused_eager.norm_rotate_backward_compiled(grads, xs, rstds, weights, cos, sin, layout, across_heads)
        if results is not None:
            return results
    return [
        fused_eager.norm_rotate_backward_eager(g, x, r, cos, sin, w, layout, across_heads)
        for g, x, r, w in zip(grads, xs, rstds, weights, strict=True)
    ]


class _NormRotation(torch.autograd.Function):
    """(q, k, q_weight, k_weight) -> (R norm(q), R norm(k)); see `kernels.fused_eager` for the backward."""

    @staticmethod
    def forward(ctx, cos, sin, layout, eps, across_heads, backend, q, k, q_weight, k_weight):
        (yq, rq), (yk, rk) = _forward((q, k), (q_weight, k_weight), cos, sin, eps, layout, across_heads, backend, True)
        ctx.save_for_backward(cos, sin, q, k, rq, rk, q_weight, k_weight)
        ctx.layout, ctx.across_heads, ctx.backend = layout, across_heads, backend
        ctx.set_materialize_grads(False)
        return yq, yk

    @staticmethod
    @once_differentiable
    def backward(ctx, grad_q, grad_k):
        cos, sin, q, k, rq, rk, wq, wk = ctx.saved_tensors
        needs = ctx.needs_input_grad
        todo = [i for i, g in enumerate((grad_q, grad_k)) if g is not None and (needs[6 + i] or needs[8 + i])]
        saved = ((grad_q, q, rq, wq), (grad_k, k, rk, wk))
        picked = [saved[i] for i in todo]
        results = (
            _backward(
                [p[0] for p in picked],
                [p[1] for p in picked],
                [p[2] for p in picked],
                [p[3] for p in picked],
                cos,
                sin,
                ctx.layout,
                ctx.across_heads,
                ctx.backend,
            )
            if todo
            else []
        )
        grads = [None] * 10
        for i, (dx, dw) in zip(todo, results, strict=True):
            grads[6 + i] = dx if needs[6 + i] else None
            grads[8 + i] = dw if needs[8 + i] else None
        return tuple(grads)


def rms_norm_rotary_qk(
    q: torch.Tensor,
    k: torch.Tensor,
    cos: torch.Tensor,
    sin: torch.Tensor,
    q_weight: torch.Tensor | None = None,
    k_weight: torch.Tensor | None = None,
    eps: float = 1e-6,
    layout: str = "half",
    *,
    across_heads: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    """RMSNorm over each head's channels, then RoPE, on q and k in one pass.

    Args:
        q: (..., head_dim), e.g. (batch, heads, seq, head_dim) or (batch, seq, heads, head_dim).
        k: (..., head_dim); its leading dims may differ from q's (grouped-query heads) as long as
            the table broadcasts against both.
        cos, sin: (..., pairs), the half-width table (see `apply_rotary`), 2 * pairs <= head_dim.
            Channels past 2 * pairs are normalised but not rotated (partial rotary).
        q_weight, k_weight: the RMSNorms' weights, (head_dim,) each, or None for no weight.
        eps: added to the mean square, > 0.
        layout: "half" or "interleaved" pairs.
        across_heads: normalise all heads of a token together, as Wan's q/k RMSNorm over
            heads * head_dim does: q, k (..., heads, head_dim), weights (heads * head_dim,) or
            (heads, head_dim). The rotation still acts on each head.

    Returns:
        (q_out, k_out), shaped and typed like q and k: per row, x / sqrt(mean(x^2) + eps) * weight,
        rotated, computed in float32 (float64 stays float64) and rounded once.
    """
    key = backends.norm_rotation_signature(q, k, cos, sin, q_weight, k_weight, eps, layout, across_heads)
    plan = backends.remembered(key)
    if plan is not None:  # checked and planned before: one lookup, then the ops
        return plan((q, k), (q_weight, k_weight), cos, sin)
    _check(q, k, cos, sin, eps, layout, across_heads)
    xs = (q, k)
    weights = (
        _check_weight(q_weight, q, "q_weight", "q", across_heads),
        _check_weight(k_weight, k, "k_weight", "k", across_heads),
    )
    eps = float(eps)
    tracked = torch.is_grad_enabled() and any(t is not None and t.requires_grad for t in (*xs, *weights))
    kind = "training forward" if tracked else "forward"  # training keeps 1 / rms for the backward
    backend = backends.choose(
        xs, cos, sin, layout, spec=lambda: fused_eager.compiled_spec(xs, weights, cos, layout, across_heads, kind)
    )
    if backend == "composite":
        return tuple(
            fused_eager.norm_rotate_composite(x, cos, sin, w, eps, layout, across_heads)[0]
            for x, w in zip(xs, weights, strict=True)
        )
    if backend == "few_ops":
        plan = _plan_few_ops(xs, weights, cos, eps, layout, across_heads)
        backends.remember(key, plan)
        return plan(xs, weights, cos, sin)
    if tracked:
        return _NormRotation.apply(cos, sin, layout, eps, across_heads, backend, *xs, *weights)
    (yq, _), (yk, _) = _forward(xs, weights, cos, sin, eps, layout, across_heads, backend, need_rstd=False)
    return yq, yk


__all__ = ["rms_norm_rotary_qk"]

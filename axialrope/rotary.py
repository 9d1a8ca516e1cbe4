"""Applying a rotary table to queries or keys.

A table is half-width: `cos` and `sin` hold one value per rotated pair. Which channels
form a pair is the `layout`, spelled below as einops patterns:

    half         pair j = channels (j, j + r/2)   '... (two pair) -> ... two pair'
    interleaved  pair j = channels (2j, 2j + 1)   '... (pair two) -> ... two pair'

where r = 2 * cos.shape[-1] is the rotary dimension. Channels past r pass through.

    q = apply_rotary(q, cos, sin)                     # a new tensor
    q, k = apply_rotary_qk(q, k, cos, sin)            # both at once, one check of the table
    apply_rotary_(q, cos, sin)                        # in place, no new memory

Which kernel runs is `backends.choose` (docs/performance.md, "Which kernel runs"), with the same
results up to float rounding; `rotary_backend(...)` overrides it. A call that the few-ops kernel
takes (one decoded token) is remembered by its signature, so its repeats skip the checks.
The backward is the rotation by the opposite angle; only cos and sin are saved.
"""

from __future__ import annotations

import torch

from .kernels import backends, triton_rope
from .kernels.backends import LAYOUTS, broadcast
from .kernels.backends import rotary_backend as rotary_backend  # public here too
from .kernels.eager import compiled_spec, plan_few_ops, rotate_compiled, rotate_compiled_, rotate_composite, rotate_into
from .overlap import has_internal_overlap, shares_memory


def check_layout(layout: str) -> str:
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {LAYOUTS}, got {layout!r}")
    return layout


def check_table(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, name: str = "x") -> None:
    """TypeError or ValueError naming the argument unless cos, sin (..., pairs) can rotate x (..., dim)."""
    for arg, value in ((name, x), ("cos", cos), ("sin", sin)):
        if not isinstance(value, torch.Tensor):
            raise TypeError(f"{arg} must be a torch.Tensor, got {type(value).__name__}")
    for arg, value in ((name, x), ("cos", cos), ("sin", sin)):
        # an integer x would come back truncated, a complex one half-rotated: refuse both
        if not value.is_floating_point():
            raise TypeError(
                f"{arg} must be a real floating-point tensor (float16, bfloat16, float32 or float64), got {value.dtype}"
            )
    for arg, value in (("cos", cos), ("sin", sin)):
        if value.device != x.device:  # torch would fail deep in the kernel, naming neither
            raise ValueError(
                f"{arg} is on {value.device} but {name} is on {x.device}: build the table on {name}'s device "
                f"(rope(coords.to({name}.device))) or move it with .to({name}.device)"
            )
    if cos.shape != sin.shape:
        raise ValueError(f"cos and sin must have the same shape, got {tuple(cos.shape)} and {tuple(sin.shape)}")
    if cos.ndim == 0:
        raise ValueError("cos and sin must have a last dimension (one value per rotated pair)")
    if x.ndim == 0:
        raise ValueError(f"{name} must have a last (channel) dimension, got a scalar")
    if 2 * cos.shape[-1] > x.shape[-1]:
        raise ValueError(
            f"cos/sin are too wide for {name}: they rotate {2 * cos.shape[-1]} channels "
            f"({cos.shape[-1]} pairs) but {name} has only {x.shape[-1]} channels in its last dimension"
        )
    shape = broadcast(x.shape[:-1], cos.shape[:-1])
    if shape is None:
        raise ValueError(
            f"cos/sin of shape {tuple(cos.shape)} do not broadcast against {name} of shape {tuple(x.shape)} "
            "(all but the last dimension must broadcast, e.g. cos (seq, pairs) for x (batch, heads, seq, dim))"
        )
    if shape != tuple(x.shape[:-1]):  # e.g. a table of more positions than x: x would be silently copied up
        raise ValueError(
            f"cos/sin of shape {tuple(cos.shape)} would enlarge {name} of shape {tuple(x.shape)} to "
            f"{(*shape, x.shape[-1])}: the table must broadcast to {name}'s shape without enlarging it "
            f"(one row per position of {name})"
        )


def _rotate(xs, cos, sin, layout: str, inverse: bool, inplace: bool, backend: str) -> tuple[torch.Tensor, ...]:
    """Runs one fast kernel on the tensors of xs (no autograd); returns the rotated tensors."""
    if backend == "compiled" and not inplace:
        rotated = rotate_compiled(xs, cos, sin, layout, inverse)  # q and k in one call
        if rotated is not None:
            return rotated
    outs = []
    for x in xs:
        if backend == "compiled" and inplace:
            outs.append(rotate_compiled_(x, cos, sin, layout, inverse))
            continue
        out = x if inplace else torch.empty_like(x)
        if backend == "triton":
            triton_rope.rotate(x, cos, sin, layout, out, inverse)
        else:
            rotate_into(x, cos, sin, layout, out, inverse)
        outs.append(out)
    return tuple(outs)


class _Rotation(torch.autograd.Function):
    """y = R(angle) x for a tuple of tensors sharing one table; dx = R(-angle) dy."""

    @staticmethod
    def forward(ctx, cos, sin, layout, inverse, inplace, backend, *xs):
        ctx.save_for_backward(cos, sin)
        ctx.layout, ctx.inverse, ctx.backend = layout, inverse, backend
        ctx.set_materialize_grads(False)
        if inplace:
            ctx.mark_dirty(*xs)
        return _rotate(xs, cos, sin, layout, inverse, inplace, backend)

    @staticmethod
    def backward(ctx, *grads):
        cos, sin = ctx.saved_tensors
        todo = [i for i, g in enumerate(grads) if g is not None and ctx.needs_input_grad[6 + i]]
        grad_xs = [None] * len(grads)
        if todo:
            # through _Rotation again, so a double backward works too
            rotated = _Rotation.apply(
                cos, sin, ctx.layout, not ctx.inverse, False, ctx.backend, *(grads[i] for i in todo)
            )
            for i, g in zip(todo, rotated, strict=True):
                grad_xs[i] = g
        return (None,) * 6 + tuple(grad_xs)


def _apply(xs, cos, sin, layout: str, inplace: bool, key: tuple | None = None) -> tuple[torch.Tensor, ...]:
    """Rotates xs (checked already) with the chosen kernel; remembers `key` if that is the few-ops one."""
    if len(xs) > 1 and len({x.requires_grad for x in xs}) > 1:
        return tuple(_apply((x,), cos, sin, layout, inplace)[0] for x in xs)  # one at a time
    backend = backends.choose(xs, cos, sin, layout, inplace=inplace, spec=lambda: compiled_spec(xs, cos, layout))
    if backend == "composite":
        rotated = tuple(rotate_composite(x, cos, sin, layout) for x in xs)
        return tuple(x.copy_(r) for x, r in zip(xs, rotated, strict=True)) if inplace else rotated
    if backend == "few_ops":  # plain differentiable ops: autograd needs nothing more
        plan = plan_few_ops(xs, cos, layout)
        backends.remember(key, plan)
        return plan(xs, cos, sin)
    if torch.is_grad_enabled() and xs[0].requires_grad:
        return _Rotation.apply(cos, sin, layout, False, inplace, backend, *xs)
    return _rotate(xs, cos, sin, layout, False, inplace, backend)


def _check_inplace(x: torch.Tensor, cos: torch.Tensor, name: str) -> None:
    if broadcast(x.shape[:-1], cos.shape[:-1]) != x.shape[:-1]:
        raise ValueError(
            f"in place, cos/sin of shape {tuple(cos.shape)} must broadcast to {name} of shape "
            f"{tuple(x.shape)} without enlarging it"
        )
    if any(stride == 0 and size > 1 for stride, size in zip(x.stride(), x.shape, strict=True)):
        raise ValueError(f"{name} is an expanded (broadcast) view; rotate a copy or use apply_rotary")
    if has_internal_overlap(x):  # torch lets such views through; a rotation would read what it already wrote
        raise ValueError(
            f"{name} is a view whose elements overlap in memory (strides {tuple(x.stride())} for shape "
            f"{tuple(x.shape)}): in place, a pair would be read after it was rotated; rotate {name}.clone() or use "
            "apply_rotary"
        )


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
    key = backends.rotation_signature(x, cos, sin, layout)
    plan = backends.remembered(key)
    if plan is not None:
        return plan((x,), cos, sin)[0]
    check_table(x, cos, sin)
    check_layout(layout)
    return _apply((x,), cos, sin, layout, inplace=False, key=key)[0]


def apply_rotary_(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, layout: str = "half") -> torch.Tensor:
    """`apply_rotary` in place: rotates x's own memory and returns x.

    x (..., dim) must not be an expanded view, and cos, sin (..., pairs) must broadcast
    to it without enlarging it. Saves the output allocation (the bulk of the cost on CPU);
    autograd works as for any in-place op (not on a leaf that requires grad).
    """
    check_table(x, cos, sin)
    check_layout(layout)
    _check_inplace(x, cos, "x")
    return _apply((x,), cos, sin, layout, inplace=True)[0]


def apply_rotary_qk(
    q: torch.Tensor,
    k: torch.Tensor,
    cos: torch.Tensor,
    sin: torch.Tensor,
    layout: str = "half",
    inplace: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Rotates queries and keys with one table: `(apply_rotary(q, ...), apply_rotary(k, ...))`.

    Args:
        q: (..., dim_q), e.g. (batch, heads, seq, head_dim).
        k: (..., dim_k), e.g. (batch, kv_heads, seq, head_dim); its leading dims may differ
            from q's (grouped-query heads) as long as the table broadcasts against both.
        cos, sin: (..., pairs), 2 * pairs <= dim_q and dim_k.
        layout: "half" or "interleaved".
        inplace: rotate q and k in their own memory (see `apply_rotary_`).

    Returns:
        (q_rotated, k_rotated), shaped and typed like q and k.
    """
    key = None if inplace else backends.rotation_signature(q, cos, sin, layout, k)
    plan = backends.remembered(key)
    if plan is not None:  # the decode fast path: checked and planned before, one lookup now
        return plan((q, k), cos, sin)
    check_table(q, cos, sin, "q")
    check_table(k, cos, sin, "k")
    check_layout(layout)
    if inplace:
        if q is k:
            raise ValueError("in place, q and k must be different tensors (k would be rotated twice)")
        _check_inplace(q, cos, "q")
        _check_inplace(k, cos, "k")
        if shares_memory(q, k):
            raise ValueError(
                "in place, q and k overlap in memory (views of one buffer that share elements): each shared element "
                "would be rotated twice; rotate copies, or use inplace=False"
            )
    q, k = _apply((q, k), cos, sin, layout, inplace, key=key)
    return q, k

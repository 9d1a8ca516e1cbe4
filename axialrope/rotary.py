"""Applying a rotary table to queries or keys.

A table is half-width: `cos` and `sin` hold one value per rotated pair. Which channels
form a pair is the `layout`, spelled below as einops patterns:

    half         pair j = channels (j, j + r/2)   '... (two pair) -> ... two pair'
    interleaved  pair j = channels (2j, 2j + 1)   '... (pair two) -> ... two pair'

where r = 2 * cos.shape[-1] is the rotary dimension. Channels past r pass through.

    q = apply_rotary(q, cos, sin)                     # a new tensor
    q, k = apply_rotary_qk(q, k, cos, sin)            # both at once, one check of the table
    apply_rotary_(q, cos, sin)                        # in place, no new memory

Which kernel runs (see `kernels` and `triton_rope`), with the same results up to float
rounding:
    CUDA, Triton installed        the Triton kernel (one pass)
    CPU, >= COMPILE_MIN_NUMEL     the inductor-compiled kernel (one pass; compiled once per
                                  layout and dtype, then reused for every size)
    otherwise                     the eager kernel; always for float32 interleaved pairs,
                                  complex numbers that one eager complex multiply rotates
    inside torch.compile, or      the plain composite formula (inductor fuses it into the
    tables that need gradients    caller's graph; autograd covers cos and sin)
`rotary_backend(...)` overrides the choice.

Gradients: the rotation is orthogonal, so its backward is the rotation by the opposite
angle. Only cos and sin are saved for backward (no activation), and the in-place form is
differentiable too.
"""

from __future__ import annotations

import contextlib

import torch

from . import triton_rope
from .kernels import compile_available, rotate_compiled, rotate_compiled_, rotate_composite, rotate_into

LAYOUTS = ("half", "interleaved")
BACKENDS = ("auto", "eager", "compiled", "triton", "composite")

# Below this many elements per tensor the eager kernel's few passes beat the compiled
# kernel's call overhead on CPU; above it the single fused pass wins (benchmarks/rope_apply.py).
COMPILE_MIN_NUMEL = 1 << 18

_backend = "auto"


def check_layout(layout) -> str:
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {LAYOUTS}, got {layout!r}")
    return layout


def _check_table(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, name: str = "x") -> None:
    for arg, value in ((name, x), ("cos", cos), ("sin", sin)):
        if not isinstance(value, torch.Tensor):
            raise TypeError(f"{arg} must be a torch.Tensor, got {type(value).__name__}")
    for arg, value in ((name, x), ("cos", cos), ("sin", sin)):
        # an integer x would come back truncated, a complex one half-rotated: refuse both
        if not value.is_floating_point():
            raise TypeError(f"{arg} must be a real floating-point tensor (float16, bfloat16, float32 or float64), "
                            f"got {value.dtype}")
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
    shape = _broadcast(x.shape[:-1], cos.shape[:-1])
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


def _broadcast(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...] | None:
    """torch.broadcast_shapes(a, b), or None where they do not broadcast (and ~50x faster)."""
    if len(a) < len(b):
        a, b = b, a
    b = (1,) * (len(a) - len(b)) + tuple(b)
    out = []
    for m, n in zip(a, b):
        if m != n and m != 1 and n != 1:
            return None
        out.append(n if m == 1 else m)
    return tuple(out)


@contextlib.contextmanager
def rotary_backend(name: str):
    """Forces one kernel inside the block: "auto" (the default choice), "eager", "compiled",
    "triton" (CUDA tensors only) or "composite" (the plain formula).

        with rotary_backend("eager"):
            q = apply_rotary(q, cos, sin)
    """
    global _backend
    if name not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {name!r}")
    previous, _backend = _backend, name
    try:
        yield
    finally:
        _backend = previous


def _choose_backend(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, layout: str, inplace: bool) -> str:
    """The kernel for x; "composite" wherever the fast kernels do not apply."""
    if torch.compiler.is_compiling():
        return "composite"  # inductor fuses the formula into the caller's graph
    if not (x.is_floating_point() and cos.is_floating_point() and sin.is_floating_point()):
        return "composite"
    if cos.dtype != sin.dtype or cos.device != x.device or sin.device != x.device:
        return "composite"
    if torch.is_grad_enabled() and (cos.requires_grad or sin.requires_grad):
        return "composite"  # the custom backward gives gradients for x only
    triton_ok = x.is_cuda and triton_rope.available() and triton_rope.supports(x)
    if _backend == "triton":
        if not triton_ok:
            raise RuntimeError("rotary_backend('triton') needs a CUDA tensor and an installed Triton")
        return "triton"
    if _backend in ("eager", "composite"):
        return _backend
    if _backend == "compiled":
        return "compiled"
    if triton_ok:
        return "triton"
    # float32 interleaved pairs are complex numbers: one eager complex multiply is one pass already
    one_eager_pass = layout == "interleaved" and x.dtype in (torch.float32, torch.float64)
    big = x.device.type == "cpu" and x.numel() >= COMPILE_MIN_NUMEL
    if big and not one_eager_pass and compile_available():
        return "compiled"
    return "eager"


def _rotate(xs, cos, sin, layout: str, inverse: bool, inplace: bool, backend: str) -> tuple[torch.Tensor, ...]:
    """Runs one fast kernel on each tensor of xs (no autograd); returns the rotated tensors."""
    outs = []
    for x in xs:
        out = None
        if backend == "compiled":
            if inplace:
                out = rotate_compiled_(x, cos, sin, layout, inverse)
            else:
                out = rotate_compiled(x, cos, sin, layout, inverse)  # None if compiling failed
        if out is None:
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
            rotated = _Rotation.apply(cos, sin, ctx.layout, not ctx.inverse, False, ctx.backend,
                                      *(grads[i] for i in todo))
            for i, g in zip(todo, rotated):
                grad_xs[i] = g
        return (None,) * 6 + tuple(grad_xs)


def _apply(xs, cos, sin, layout: str, inplace: bool) -> tuple[torch.Tensor, ...]:
    backend = _choose_backend(xs[0], cos, sin, layout, inplace)
    tracked = torch.is_grad_enabled() and xs[0].requires_grad
    if any(_choose_backend(x, cos, sin, layout, inplace) != backend or x.requires_grad != xs[0].requires_grad
           for x in xs[1:]):
        return tuple(_apply((x,), cos, sin, layout, inplace)[0] for x in xs)  # one at a time
    if backend == "composite":
        rotated = tuple(rotate_composite(x, cos, sin, layout) for x in xs)
        return tuple(x.copy_(r) for x, r in zip(xs, rotated)) if inplace else rotated
    if tracked:
        return _Rotation.apply(cos, sin, layout, False, inplace, backend, *xs)
    return _rotate(xs, cos, sin, layout, False, inplace, backend)


def _check_inplace(x: torch.Tensor, cos: torch.Tensor, name: str) -> None:
    if _broadcast(x.shape[:-1], cos.shape[:-1]) != x.shape[:-1]:
        raise ValueError(
            f"in place, cos/sin of shape {tuple(cos.shape)} must broadcast to {name} of shape "
            f"{tuple(x.shape)} without enlarging it"
        )
    if any(stride == 0 and size > 1 for stride, size in zip(x.stride(), x.shape)):
        raise ValueError(f"{name} is an expanded (broadcast) view; rotate a copy or use apply_rotary")


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
    return _apply((x,), cos, sin, layout, inplace=False)[0]


def apply_rotary_(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, layout: str = "half") -> torch.Tensor:
    """`apply_rotary` in place: rotates x's own memory and returns x.

    x (..., dim) must not be an expanded view, and cos, sin (..., pairs) must broadcast
    to it without enlarging it. Saves the output allocation (the bulk of the cost on CPU);
    autograd works as for any in-place op (not on a leaf that requires grad).
    """
    _check_table(x, cos, sin)
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
    _check_table(q, cos, sin, "q")
    _check_table(k, cos, sin, "k")
    check_layout(layout)
    if inplace:
        if q is k:
            raise ValueError("in place, q and k must be different tensors (k would be rotated twice)")
        _check_inplace(q, cos, "q")
        _check_inplace(k, cos, "k")
    q, k = _apply((q, k), cos, sin, layout, inplace)
    return q, k

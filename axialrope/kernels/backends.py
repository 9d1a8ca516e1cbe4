"""Which kernel runs a rotation, or a fused RMSNorm + rotation, and the plan cache of the decode fast path.

`choose` is the one choice that `apply_rotary*` and `rms_norm_rotary_qk` share; its rows, with why
each kernel wins there, are the table "Which kernel runs" of docs/performance.md, and each branch
below names its row. `rotary_backend` overrides it.

The few-ops kernel's plans are kept by the signature of a checked call (`rotation_signature`,
`norm_rotation_signature`): a repeat call is one lookup (`remembered`) and the plan's ops.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence

import torch

from . import compiling, triton_rope

BACKENDS = ("auto", "eager", "compiled", "triton", "composite", "few_ops")
LAYOUTS = ("half", "interleaved")  # which channels pair up (see `axialrope.rotary`)

# Below this many elements per tensor the eager kernel's few passes beat the compiled kernel's
# call overhead on CPU; above it the single fused pass wins (benchmarks/rope_apply.py).
COMPILE_MIN_NUMEL = 1 << 18

# Up to this many elements in all (q and k together) the few-ops kernel beats the eager one,
# whose extra op dispatches outweigh its fewer passes (benchmarks/rope_apply.py, decode case).
# Its four temporaries of the inputs' size stay below glibc's first mmap threshold here; past it
# each of them can cost fresh pages, and the eager kernel wins.
FEW_OPS_MAX_NUMEL = 1 << 14

_backend = "auto"


def current() -> str:
    """The backend `rotary_backend` forces now ("auto" outside any such block)."""
    return _backend


@contextlib.contextmanager
def rotary_backend(name: str) -> Iterator[None]:
    """Forces one kernel inside the block, for apply_rotary* and rms_norm_rotary_qk: "auto" (the
    default choice), "eager", "compiled", "triton" (CUDA tensors only), "composite" (the plain
    formula) or "few_ops" (out of place; in place runs "eager" then).

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


def broadcast(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...] | None:
    """torch.broadcast_shapes(a, b) of two shape tuples, or None where they do not broadcast."""
    if len(a) < len(b):
        a, b = b, a
    b = (1,) * (len(a) - len(b)) + tuple(b)
    out = []
    for m, n in zip(a, b, strict=True):
        if m != n and m != 1 and n != 1:
            return None
        out.append(n if m == 1 else m)
    return tuple(out)


def choose(
    xs: Sequence[torch.Tensor],
    cos: torch.Tensor,
    sin: torch.Tensor,
    layout: str,
    *,
    inplace: bool = False,
    spec: Callable[[], tuple] | None = None,
) -> str:
    """The kernel for all of xs (tensors sharing one table), by the rows of docs/performance.md's
    "Which kernel runs", first match wins.

    spec: the compiled kernel's spec for xs, asked only where compiling is considered, so that
    `compiling.pays_off` can keep its budget.
    """
    if torch.compiler.is_compiling():
        return "composite"  # row "traced"
    if not (cos.is_floating_point() and sin.is_floating_point()) or cos.dtype != sin.dtype:
        return "composite"  # row "unusual table"
    if torch.is_grad_enabled() and (cos.requires_grad or sin.requires_grad):
        return "composite"  # row "table gradients"
    x = xs[0]
    for other in xs:
        if not other.is_floating_point() or other.device != cos.device or sin.device != cos.device:
            return "composite"  # row "unusual table"
        if broadcast(other.shape[:-1], cos.shape[:-1]) != other.shape[:-1]:
            return "composite"  # row "unusual table": it would enlarge x
    triton_ok = x.is_cuda and triton_rope.available() and all(triton_rope.supports(other) for other in xs)
    if _backend != "auto":  # row "forced"
        if _backend == "triton" and not triton_ok:
            raise RuntimeError("rotary_backend('triton') needs CUDA tensors and an installed Triton")
        return "eager" if _backend == "few_ops" and inplace else _backend
    if triton_ok:
        return "triton"  # row "CUDA"
    numel = sum(other.numel() for other in xs)
    if not inplace and numel <= FEW_OPS_MAX_NUMEL:
        return "few_ops"  # row "tiny"
    big = x.device.type == "cpu" and x.numel() >= COMPILE_MIN_NUMEL
    if big and layout == "half" and compiling.compile_available() and spec is not None:
        if compiling.pays_off(spec(), numel):
            return "compiled"  # row "large CPU"
    return "eager"  # row "otherwise"


# -- the plan cache of the decode fast path ---------------------------------------------------

_PLANS: dict[tuple, Callable] = {}  # signature of a checked call -> its few-ops plan
MAX_REMEMBERED = 4096  # signatures kept before the cache starts over

remembered = _PLANS.get  # signature (or None) -> the plan kept for it, or None; a bound method: no call of ours


def remember(key: tuple | None, plan: Callable) -> None:
    """Keeps the few-ops plan of a checked call by its signature (None: nothing is kept)."""
    if key is None:
        return
    if len(_PLANS) >= MAX_REMEMBERED:
        _PLANS.clear()
    _PLANS[key] = plan


def rotation_signature(
    x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, layout: str, k: torch.Tensor | None = None
) -> tuple | None:
    """What the checks, the choice and the few-ops plan of `apply_rotary(x, ...)` (with k:
    `apply_rotary_qk(x, k, ...)`) depend on: shapes, dtypes, devices and requires_grad of the
    tensors, the layout and the forced backend. None for non-tensors (the checks say which) and
    while torch.compile traces (the cache stays invisible to it). Spelled out, not looped: this
    is most of the fast path's Python time."""
    if torch.compiler.is_compiling() or layout not in LAYOUTS:
        return None
    try:
        key = (
            "rotate",
            x.shape,
            cos.shape,
            sin.shape,
            x.dtype,
            cos.dtype,
            sin.dtype,
            x.device,
            cos.device,
            sin.device,
            x.requires_grad,
            cos.requires_grad,
            sin.requires_grad,
            layout,
            _backend,
        )
        return key if k is None else key + (k.shape, k.dtype, k.device, k.requires_grad)
    except AttributeError:
        return None


def norm_rotation_signature(
    q: torch.Tensor,
    k: torch.Tensor,
    cos: torch.Tensor,
    sin: torch.Tensor,
    q_weight: torch.Tensor | None,
    k_weight: torch.Tensor | None,
    eps: float,
    layout: str,
    across_heads: bool,
) -> tuple | None:
    """`rotation_signature` of `rms_norm_rotary_qk`: also the weights, eps and across_heads; None
    also for an eps that is not a float and an across_heads that is not a bool."""
    if (
        torch.compiler.is_compiling()
        or type(eps) is not float
        or layout not in LAYOUTS
        or type(across_heads) is not bool
    ):
        return None
    try:
        weights = tuple(
            None if w is None else (w.shape, w.dtype, w.device, w.requires_grad) for w in (q_weight, k_weight)
        )
        return (
            "norm_rotate",
            q.shape,
            k.shape,
            cos.shape,
            sin.shape,
            q.dtype,
            k.dtype,
            cos.dtype,
            sin.dtype,
            q.device,
            k.device,
            cos.device,
            sin.device,
            q.requires_grad,
            k.requires_grad,
            cos.requires_grad,
            sin.requires_grad,
            weights,
            eps,
            layout,
            across_heads,
            _backend,
        )
    except AttributeError:
        return None


__all__ = [
    "BACKENDS",
    "COMPILE_MIN_NUMEL",
    "FEW_OPS_MAX_NUMEL",
    "LAYOUTS",
    "MAX_REMEMBERED",
    "broadcast",
    "choose",
    "current",
    "norm_rotation_signature",
    "remember",
    "remembered",
    "rotary_backend",
    "rotation_signature",
]

"""Which kernel runs a rotation, or a fused RMSNorm + rotation: the one choice that `apply_rotary`
and `rms_norm_rotary_qk` share, and `rotary_backend` to override it.

    inside torch.compile, or tables      "composite": the plain formula (inductor fuses it into
    that need gradients                  the caller's graph; autograd covers cos and sin)
    CUDA, Triton installed               "triton": one pass
    at most FEW_OPS_MAX_NUMEL elements   "few_ops": a few torch ops per tensor (one decoded token:
    in all, not in place                 dispatch, not arithmetic, is the cost)
    CPU, half layout, at least           "compiled": the inductor-compiled formula, one pass;
    COMPILE_MIN_NUMEL elements, once     compiled once per spec, then reused for every size
    compiling pays (`compiling`)
    otherwise                            "eager": torch ops into preallocated outputs; always
                                         for interleaved pairs (a complex multiply), whose stride-2
                                         members inductor's CPU code cannot vectorize
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable

import torch

from . import compiling, triton_rope

BACKENDS = ("auto", "eager", "compiled", "triton", "composite", "few_ops")

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
def rotary_backend(name: str):
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
    """torch.broadcast_shapes(a, b), or None where they do not broadcast (and ~50x faster)."""
    if len(a) < len(b):
        a, b = b, a
    b = (1,) * (len(a) - len(b)) + tuple(b)
    out = []
    for m, n in zip(a, b, strict=True):
        if m != n and m != 1 and n != 1:
            return None
        out.append(n if m == 1 else m)
    return tuple(out)


def choose(xs, cos: torch.Tensor, sin: torch.Tensor, layout: str, *, inplace: bool = False,
           fused: bool = False, spec: Callable[[], tuple] | None = None) -> str:
    """The kernel for all of xs (tensors sharing one table); "composite" where the fast ones do not apply.

    fused: a norm + rotation (its eager kernel is never a single pass).
    spec: the compiled kernel's spec for xs, asked only where compiling is considered, so that
    `compiling.pays_off` can keep its budget.
    """
    if torch.compiler.is_compiling():
        return "composite"  # inductor fuses the formula into the caller's graph
    if not (cos.is_floating_point() and sin.is_floating_point()) or cos.dtype != sin.dtype:
        return "composite"
    if torch.is_grad_enabled() and (cos.requires_grad or sin.requires_grad):
        return "composite"  # the custom backwards give gradients for x (and norm weights) only
    x = xs[0]
    for other in xs:
        if not other.is_floating_point() or other.device != cos.device or sin.device != cos.device:
            return "composite"
        if broadcast(other.shape[:-1], cos.shape[:-1]) != other.shape[:-1]:
            return "composite"  # a table wider than x broadcasts x up: keep the formula's result
    triton_ok = x.is_cuda and triton_rope.available() and all(triton_rope.supports(other) for other in xs)
    if _backend == "triton":
        if not triton_ok:
            raise RuntimeError("rotary_backend('triton') needs CUDA tensors and an installed Triton")
        return "triton"
    if _backend == "few_ops":
        return "eager" if inplace else "few_ops"
    if _backend != "auto":
        return _backend
    if triton_ok:
        return "triton"
    numel = sum(other.numel() for other in xs)
    if not inplace and numel <= FEW_OPS_MAX_NUMEL:
        return "few_ops"
    # interleaved pairs sit at stride 2, which inductor's CPU code reads one element at a time;
    # the eager kernel's complex multiply (one pass for float32) beats it in every dtype
    big = x.device.type == "cpu" and x.numel() >= COMPILE_MIN_NUMEL
    if big and layout == "half" and compiling.compile_available() and spec is not None:
        if compiling.pays_off(spec(), numel):
            return "compiled"
    return "eager"


__all__ = ["BACKENDS", "COMPILE_MIN_NUMEL", "FEW_OPS_MAX_NUMEL", "broadcast", "choose", "current", "rotary_backend"]

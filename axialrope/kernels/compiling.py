"""Inductor-compiled kernels for the CPU: one compiled function per spec, compiled only where it pays.

A spec is what dynamo guards on besides sizes (which formula, layout, dtypes, ranks, ...). Each
spec gets its own `torch.compile` of the formula, with dynamic shapes (one compile serves every
size) and its own recompile count (`isolate_recompiles`), so no number of specs reaches dynamo's
recompile limit.

Compiling costs seconds, so `auto` does not compile on first sight: it counts the elements the
eager kernels process for each spec and compiles once that count reaches `COMPILE_AFTER_NUMEL`,
about the work whose extra eager time matches a compile (the ski-rental rule: a short job never
compiles, a long one spends at most about twice the better choice in hindsight; docs/performance.md).
`warm_up()` compiles at once, for callers that know their job is long.

    out = run(spec, formula, *args)  # formula(*args) compiled for spec, without grad; None if compiling failed
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Callable, Iterator

import torch

# Elements of one spec the eager kernels process before auto compiles it: the work whose extra
# eager time (per element, against the compiled kernel) adds up to about one compile with
# inductor's on-disk cache warm, on the CPU of docs/performance.md (benchmarks/rope_apply.py
# times both kernels and the compiling call).
COMPILE_AFTER_NUMEL = 1 << 31

# What torch.compile hands the traced graph to; tests set a cheaper one ("eager": dynamo only)
BACKEND = "inductor"

_COMPILED: dict[tuple, Callable | None] = {}  # spec -> compiled function, None where compiling failed
_eager_work: dict[tuple, int] = {}  # spec -> elements processed eagerly so far
_compile_works = True  # False after a failure with nothing compiled before it (e.g. no C++ compiler)
_warm = False  # warm_up(): compile every spec on first sight


def compile_available() -> bool:
    """False once compiling has failed in this process before anything compiled."""
    return _compile_works


def pays_off(spec: tuple, numel: int) -> bool:
    """Whether auto should run spec compiled now; otherwise records `numel` elements of eager work.

    True once spec is compiled, once its eager work has reached COMPILE_AFTER_NUMEL, or inside
    `warm_up()`; never after compiling spec failed.
    """
    if spec in _COMPILED:
        return _COMPILED[spec] is not None
    if _warm:
        return True
    done = _eager_work.get(spec, 0) + numel
    _eager_work[spec] = done
    return done >= COMPILE_AFTER_NUMEL


@contextlib.contextmanager
def warm_up() -> Iterator[None]:
    """Inside the block, auto compiles each spec the first time it sees it (the budget is skipped).

    with axialrope.kernels.compiling.warm_up():
        model(example_batch)        # compiles the kernels this model's shapes need, now
    """
    global _warm
    previous, _warm = _warm, True
    try:
        yield
    finally:
        _warm = previous


def compiled(spec: tuple) -> Callable | None:
    """The compiled function `run` keeps for spec; None before its first run and after a failure."""
    return _COMPILED.get(spec)


def reset() -> None:
    """Forgets every compiled function, all eager work counted and any earlier failure (as a fresh process)."""
    global _compile_works
    _COMPILED.clear()
    _eager_work.clear()
    _compile_works = True


def run(spec: tuple, formula: Callable, *args: object) -> tuple[torch.Tensor, ...] | None:
    """formula(*args) compiled for spec, run without grad on detached tensors; None if compiling failed.

    The first call of each spec compiles (seconds); later calls of any size reuse the kernel.
    Autograd state never splits the cache (the caller owns the gradients). On a failure this warns
    once per spec and returns None, and the caller falls back to its eager kernel.
    """
    global _compile_works
    if spec not in _COMPILED:
        # its own recompile count: dynamo keeps one per code object otherwise, and the specs of
        # one formula would share its limit (8) and fall back to eager past it
        _COMPILED[spec] = torch.compile(formula, dynamic=True, fullgraph=True, backend=BACKEND, isolate_recompiles=True)
    fn = _COMPILED[spec]
    if fn is None:
        return None
    # one detached view per distinct tensor: a table passed for q and for k stays one input of the
    # graph, and inductor fuses their loops into one (it fuses loops that share a read)
    detached = {id(a): a.detach() for a in args if isinstance(a, torch.Tensor)}
    args = tuple(detached[id(a)] if isinstance(a, torch.Tensor) else a for a in args)
    try:
        with torch.no_grad():
            return fn(*args)
    except Exception as error:  # noqa: BLE001 - any inductor failure means: use the eager kernel
        _COMPILED[spec] = None
        _compile_works = _compile_works and any(f is not None for f in _COMPILED.values())
        warnings.warn(
            f"axialrope: torch.compile of {formula.__name__} failed for {spec}, using the eager kernel ({error})",
            stacklevel=2,
        )
        return None


__all__ = ["BACKEND", "COMPILE_AFTER_NUMEL", "compile_available", "compiled", "pays_off", "reset", "run", "warm_up"]

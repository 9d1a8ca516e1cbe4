"""Rotation kernels behind `apply_rotary`: one formula, three ways to run it.

    rotate_composite   the formula in differentiable torch ops; what torch.compile traces
    rotate_into        eager: writes into a given output (or x itself), no temporary of x's
                       size for float32/float64; complex multiply for interleaved pairs
    rotate_compiled    rotate_composite compiled by inductor: one fused loop
    rotate_compiled_   the same in place, piece by piece through a bounded buffer

(and, on CUDA, the Triton kernel in `triton_rope`). All of them rotate pair (a, b) to
(a cos - b sin, b cos + a sin) in float32 (float64 stays float64) and return x's dtype;
`inverse=True` rotates by the opposite angle, which is the backward of the rotation.
"""

from __future__ import annotations

import types
import warnings

import torch
from einops import rearrange

# The pair axis goes back where the channels lie (no transpose), which keeps inductor's
# fused loop a plain pass over x for both layouts.
_JOIN_PAIRS = {
    "half": "... two pair -> ... (two pair)",
    "interleaved": "... pair two -> ... (pair two)",
}
_PAIR_AXIS = {"half": -2, "interleaved": -1}


def _pair_views(t: torch.Tensor, layout: str) -> tuple[torch.Tensor, torch.Tensor]:
    """(..., 2 * pairs) -> the two members of every pair, as views (..., pairs)."""
    if layout == "half":  # '... (two pair) -> ... two pair', as slices (einops costs ~20 us a call)
        pairs = t.shape[-1] // 2
        return t[..., :pairs], t[..., pairs:]
    return t[..., 0::2], t[..., 1::2]  # '... (pair two) -> ... pair two'


def compute_dtype(x: torch.Tensor, cos: torch.Tensor) -> torch.dtype:
    """float32 for half-precision and float32 inputs; float64 if x or the table is float64."""
    return torch.promote_types(torch.promote_types(x.dtype, cos.dtype), torch.float32)


def rotate_composite(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, layout: str) -> torch.Tensor:
    """The rotation as plain differentiable ops (also what inductor fuses).

    x (..., dim); cos, sin (..., pairs) broadcasting against x without its last dim.
    Returns (..., dim) in x's dtype; channels past 2 * pairs pass through.
    """
    rotary_dim = 2 * cos.shape[-1]
    first, second = _pair_views(x[..., :rotary_dim].to(compute_dtype(x, cos)), layout)
    # rounded to x's dtype before joining, so inductor writes the output in its own loop
    new_first, new_second = (first * cos - second * sin).to(x.dtype), (second * cos + first * sin).to(x.dtype)
    out = rearrange(torch.stack((new_first, new_second), dim=_PAIR_AXIS[layout]), _JOIN_PAIRS[layout])
    if rotary_dim == x.shape[-1]:
        return out
    return torch.cat((out, x[..., rotary_dim:]), dim=-1)


# -- eager ------------------------------------------------------------------------------------


def _as_complex(t: torch.Tensor) -> torch.Tensor | None:
    """An interleaved (..., 2 * pairs) float view as complex (..., pairs), or None if strides forbid it."""
    if t.stride(-1) != 1 or t.storage_offset() % 2 or any(s % 2 for s in t.stride()[:-1]):
        return None
    return torch.view_as_complex(t.unflatten(-1, (-1, 2)))


def _rotate_pairs(src, dst, cos, sin, layout: str, sign: float, scratch: bool) -> None:
    """dst = rotation of src (both (..., 2 * pairs), compute dtype); dst may be src itself.

    Interleaved pairs are complex numbers, so one complex multiply rotates them in a single
    pass. Otherwise four passes over half-width views, no temporary except, in place, a copy
    of the first members (the second needs them unrotated). Every route runs the same
    arithmetic, so float32 and rounded half-precision inputs agree bit for bit.
    """
    if layout == "interleaved":
        src_c, dst_c = _as_complex(src), _as_complex(dst)
        if src_c is not None and dst_c is not None:
            torch.mul(src_c, torch.complex(cos, sin if sign > 0 else -sin), out=dst_c)
            return
    a, b = _pair_views(src, layout)
    out_a, out_b = _pair_views(dst, layout)
    if scratch:  # in place: out_a overwrites a, which out_b still needs
        a = a.clone()
    torch.mul(a, cos, out=out_a).addcmul_(b, sin, value=-sign)
    torch.mul(b, cos, out=out_b).addcmul_(a, sin, value=sign)


# Where a scratch buffer is needed (in place, half precision) x is rotated in pieces of
# about this many elements (16 MiB of float32), so the scratch stays bounded and is reused,
# while each piece is still large enough that one op on it amortizes its launch.
_CHUNK_NUMEL = 1 << 22


def _chunks(src, dst, cos, sin) -> list[tuple[torch.Tensor, ...]]:
    """(src, dst, cos, sin) cut along src's longest leading dim into pieces of ~_CHUNK_NUMEL elements."""
    if src.numel() <= _CHUNK_NUMEL or src.ndim < 2:
        return [(src, dst, cos, sin)]
    dim = max(range(src.ndim - 1), key=src.shape.__getitem__)
    step = max(1, _CHUNK_NUMEL * src.shape[dim] // src.numel())
    table_dim = dim - src.ndim  # tables broadcast from the right: count from there
    cut_table = cos.ndim >= -table_dim and cos.shape[table_dim] > 1
    pieces = []
    for start in range(0, src.shape[dim], step):
        length = min(step, src.shape[dim] - start)
        tables = (cos.narrow(table_dim, start, length), sin.narrow(table_dim, start, length)) if cut_table else (cos, sin)
        pieces.append((src.narrow(dim, start, length), dst.narrow(dim, start, length), *tables))
    return pieces


def rotate_into(
    x: torch.Tensor,
    cos: torch.Tensor,
    sin: torch.Tensor,
    layout: str,
    out: torch.Tensor,
    inverse: bool = False,
) -> torch.Tensor:
    """Writes the rotation of x into out (shaped like x; `out is x` rotates in place) and returns out.

    cos, sin must broadcast to x without its last dim. float32 and float64 x are rotated
    straight into out; in place and for half-precision x, piece by piece through a small
    float32 scratch buffer.
    """
    rotary_dim = 2 * cos.shape[-1]
    dtype = compute_dtype(x, cos)
    cos, sin = cos.to(dtype), sin.to(dtype)
    sign = -1.0 if inverse else 1.0
    src, dst = x[..., :rotary_dim], out[..., :rotary_dim]
    if out is not x and rotary_dim < x.shape[-1]:
        out[..., rotary_dim:].copy_(x[..., rotary_dim:])
    same_dtype = x.dtype == dtype and out.dtype == dtype
    if same_dtype and (out is not x or (layout == "interleaved" and _as_complex(src) is not None)):
        _rotate_pairs(src, dst, cos, sin, layout, sign, scratch=False)  # no scratch needed
        return out
    for piece, piece_out, piece_cos, piece_sin in _chunks(src, dst, cos, sin):
        if same_dtype:  # in place
            _rotate_pairs(piece, piece_out, piece_cos, piece_sin, layout, sign, scratch=True)
        else:  # half precision: rotate a float32 copy, round once on the way out
            work = piece.to(dtype)
            _rotate_pairs(work, work, piece_cos, piece_sin, layout, sign, scratch=True)
            piece_out.copy_(work)
    return out


# -- torch.compile ------------------------------------------------------------------------------


def _composite_half(x, cos, sin):
    return rotate_composite(x, cos, sin, "half")


def _composite_interleaved(x, cos, sin):
    return rotate_composite(x, cos, sin, "interleaved")


# spec -> compiled function, or None where compiling that spec failed
_COMPILED: dict[tuple, object] = {}
_compile_works = True  # False after a failure with nothing compiled before it (e.g. no C++ compiler)


def compile_available() -> bool:
    """False once compiling has failed in this process before anything compiled."""
    return _compile_works


def _spec(x: torch.Tensor, cos: torch.Tensor, layout: str) -> tuple:
    """What dynamo guards on besides sizes; each spec gets its own compiled function."""
    return (layout, x.dtype, cos.dtype, x.device.type, x.ndim, cos.ndim, 2 * cos.shape[-1] == x.shape[-1])


def _compile(spec: tuple):
    fn = _composite_half if spec[0] == "half" else _composite_interleaved
    # a code object of its own per spec: dynamo keeps one cache, and one recompile limit
    # (8), per code object, and the specs of one process could otherwise exhaust it
    name = f"{fn.__name__}_{len(_COMPILED)}"
    code = fn.__code__.replace(co_name=name, co_qualname=name)
    return torch.compile(types.FunctionType(code, fn.__globals__, name), dynamic=True, fullgraph=True)


def rotate_compiled(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, layout: str, inverse: bool = False):
    """rotate_composite compiled by inductor with dynamic shapes; None if that failed.

    The first call of each spec (layout, dtypes, ranks, partial rotary) compiles, which takes
    seconds; later calls of any size reuse the kernel. Inputs are detached and run without
    grad, so autograd state never splits the cache (the caller owns the gradients). On a
    failure this warns and returns None, and the caller falls back to the eager kernel.
    """
    global _compile_works
    spec = _spec(x, cos, layout)
    if spec not in _COMPILED:
        _COMPILED[spec] = _compile(spec)
    fn = _COMPILED[spec]
    if fn is None:
        return None
    try:
        with torch.no_grad():
            return fn(x.detach(), cos.detach(), (-sin if inverse else sin).detach())
    except Exception as error:  # noqa: BLE001 - any inductor failure means: use the eager kernel
        _COMPILED[spec] = None
        _compile_works = _compile_works and any(f is not None for f in _COMPILED.values())
        warnings.warn(f"axialrope: torch.compile of the rotation failed for {spec}, using the eager kernel ({error})")
        return None


def rotate_compiled_(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, layout: str, inverse: bool = False):
    """In place through the compiled kernel: piece by piece into a piece-sized buffer, copied back.

    Two passes over x, against five for the eager in-place half layout; a piece that the
    compiled kernel cannot take is rotated by the eager kernel instead. Returns x.
    """
    for piece, _, piece_cos, piece_sin in _chunks(x, x, cos, sin):
        rotated = rotate_compiled(piece, piece_cos, piece_sin, layout, inverse)
        if rotated is None:
            rotate_into(piece, piece_cos, piece_sin, layout, piece, inverse)
        else:
            piece.copy_(rotated)
    return x

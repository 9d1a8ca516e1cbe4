"""Rotation kernels behind `apply_rotary`: one formula, several ways to run it.

    rotate_composite   the formula in differentiable torch ops; what torch.compile traces
    rotate_few_ops     the eager kernel's arithmetic in two or three torch ops per tensor, for
                       tiny inputs (one decoded token) where dispatch costs more than arithmetic
    rotate_into        eager: writes into a given output (or x itself), no temporary of x's
                       size for float32/float64; complex multiply for interleaved pairs
    rotate_compiled    rotate_composite compiled by inductor (see `compiling`): one fused loop,
                       q and k in one call sharing their reads of the table
    rotate_compiled_   the same in place, piece by piece through a bounded buffer

(and, on CUDA, the Triton kernel in `triton_rope`). All of them rotate pair (a, b) to
(a cos - b sin, b cos + a sin) in float32 (float64 stays float64) and return x's dtype;
`inverse=True` rotates by the opposite angle, which is the backward of the rotation.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from itertools import pairwise

import torch
from einops import rearrange

from . import compiling

_JOIN_PAIRS = {
    "half": "... two pair -> ... (two pair)",
    "interleaved": "... pair two -> ... (pair two)",
}
_PAIR_AXIS = {"half": -2, "interleaved": -1}


def pair_views(t: torch.Tensor, layout: str) -> tuple[torch.Tensor, torch.Tensor]:
    """(..., 2 * pairs) -> the two members of every pair, as views (..., pairs)."""
    if layout == "half":  # '... (two pair) -> ... two pair', as slices: einops' parsing per call is the cost here
        pairs = t.shape[-1] // 2
        return t[..., :pairs], t[..., pairs:]
    return t[..., 0::2], t[..., 1::2]  # '... (pair two) -> ... pair two'


def compute_dtype(x: torch.Tensor, cos: torch.Tensor) -> torch.dtype:
    """float32 for half-precision and float32 inputs; float64 if x or the table is float64."""
    return torch.promote_types(torch.promote_types(x.dtype, cos.dtype), torch.float32)


def split_pairs(t: torch.Tensor, pairs: int, layout: str) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
    """(..., dim) -> (first, second, rest): the members of the first `pairs` pairs as views
    (..., pairs) each, and the channels past them (..., dim - 2 * pairs), or None if there are none."""
    first, second = pair_views(t[..., : 2 * pairs], layout)
    # tested as an equality: under dynamic shapes that teaches torch.compile dim == 2 * pairs, and
    # inductor then indexes both members from one size (an inequality left two, and slower code)
    return first, second, (None if 2 * pairs == t.shape[-1] else t[..., 2 * pairs :])


def join_pairs(
    layout: str, first: torch.Tensor, second: torch.Tensor, rest: torch.Tensor | None = None
) -> torch.Tensor:
    """split_pairs' inverse: (..., pairs) twice and the rest (or None) -> (..., dim), a new tensor."""
    # the pair axis goes back where the channels lie (no transpose): a plain pass for inductor
    joined = rearrange(torch.stack((first, second), dim=_PAIR_AXIS[layout]), _JOIN_PAIRS[layout])
    return joined if rest is None else torch.cat((joined, rest), dim=-1)


def rotate_composite(
    x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, layout: str, out_dtype: torch.dtype | None = None
) -> torch.Tensor:
    """The rotation as plain differentiable ops (also what inductor fuses).

    x (..., dim); cos, sin (..., pairs) broadcasting against x without its last dim.
    Returns (..., dim) in out_dtype (default x's dtype); channels past 2 * pairs pass through.
    """
    out_dtype = x.dtype if out_dtype is None else out_dtype
    dtype = compute_dtype(x, cos)
    first, second, rest = split_pairs(x, cos.shape[-1], layout)
    first, second = first.to(dtype), second.to(dtype)
    # rounded to the output dtype before joining, so inductor writes the output in its own loop
    new_first, new_second = (first * cos - second * sin).to(out_dtype), (second * cos + first * sin).to(out_dtype)
    return join_pairs(layout, new_first, new_second, None if rest is None else rest.to(out_dtype))


# -- few ops, for tiny inputs -------------------------------------------------------------------

_SIGNS: dict[tuple, torch.Tensor] = {}  # (dtype, device, inverse) -> signs of the partner's term


def _signs(dtype: torch.dtype, device: torch.device, inverse: bool) -> torch.Tensor:
    """(-1, +1), shaped (2, 1) to run along the member axis of half pairs '(two pair)'."""
    key = (dtype, device, inverse)
    signs = _SIGNS.get(key)
    if signs is None:
        signs = _SIGNS[key] = torch.tensor([1.0, -1.0] if inverse else [-1.0, 1.0], dtype=dtype, device=device)[:, None]
    return signs


def _join_sizes(xs, cos: torch.Tensor) -> tuple[int, ...] | None:
    """The sizes along dim -3 (heads) if xs can be rotated as one tensor joined along it (same
    dtype and requires_grad, the same sizes elsewhere, a table that does not vary along it), else None."""
    if len(xs) < 2:
        return None
    x = xs[0]
    if x.ndim < 3 or (cos.ndim >= 3 and cos.shape[-3] != 1):
        return None
    if all(
        other.dtype == x.dtype
        and other.requires_grad == x.requires_grad
        and other.ndim == x.ndim
        and other.shape[:-3] == x.shape[:-3]
        and other.shape[-2:] == x.shape[-2:]
        for other in xs[1:]
    ):
        return tuple(other.shape[-3] for other in xs)
    return None


def _plan_one(x: torch.Tensor, cos: torch.Tensor, layout: str, inverse: bool):
    """(table(cos, sin) -> table, rotate(x, table) -> rotated x) for tensors like x and cos."""
    dtype = compute_dtype(x, cos)
    convert_table, pairs = cos.dtype != dtype, cos.shape[-1]
    cut, rounded = 2 * pairs != x.shape[-1], x.dtype != dtype

    if layout == "half":
        signs = _signs(dtype, cos.device, inverse)

        def table(cos, sin):
            if convert_table:
                cos, sin = cos.to(dtype), sin.to(dtype)
            return cos.unsqueeze(-2), sin.unsqueeze(-2) * signs  # (..., 1, pairs), (..., 2, pairs)

        def rotate(x, table):
            cos, signed_sin = table
            members = (x[..., : 2 * pairs] if cut else x).unflatten(-1, (2, pairs))
            out = torch.addcmul(members * cos, members.flip(-2), signed_sin).flatten(-2)
            out = out.to(x.dtype) if rounded else out
            return torch.cat((out, x[..., 2 * pairs :]), dim=-1) if cut else out

        return table, rotate

    def table(cos, sin):
        if convert_table:
            cos, sin = cos.to(dtype), sin.to(dtype)
        return torch.complex(cos, -sin if inverse else sin), cos, sin  # (..., pairs)

    def rotate(x, table):
        rotation, cos, sin = table
        complex_x = _as_complex((x[..., : 2 * pairs] if cut else x).to(dtype))
        if complex_x is None:  # strides that forbid a complex view: the eager kernel
            return rotate_into(x, cos, sin, layout, torch.empty_like(x), inverse)
        out = torch.view_as_real(complex_x * rotation).flatten(-2)
        out = out.to(x.dtype) if rounded else out
        return torch.cat((out, x[..., 2 * pairs :]), dim=-1) if cut else out

    return table, rotate


# a planned rotation: run(xs, cos, sin) -> the rotated xs
Rotation = Callable[[Sequence[torch.Tensor], torch.Tensor, torch.Tensor], tuple[torch.Tensor, ...]]


def plan_few_ops(xs: Sequence[torch.Tensor], cos: torch.Tensor, layout: str, inverse: bool = False) -> Rotation:
    """`run(xs, cos, sin) -> rotated xs` for tensors shaped, typed and placed like these xs and cos.

    Everything that depends only on shapes, dtypes and devices is settled here, so a caller that
    keeps the plan (the decode fast path) pays for the torch ops alone:

    half pairs    `x * cos + partner(x) * (-sin, +sin)`, the partner of member a being b and of b
                  being a (a flip along the member axis): a cos - b sin and b cos + a sin, the
                  same products and sums as `rotate_into`;
    interleaved   one complex multiply, as `rotate_into`;

    so both give the eager kernel's result bit for bit, in plain differentiable ops. The table is
    prepared once for all of xs, and q and k of one token are joined along the heads (dim -3)
    into one tensor, so the rotation's ops run once (the outputs are then views of one buffer).
    """
    sizes = _join_sizes(xs, cos)
    if sizes is not None:
        starts = [sum(sizes[:i]) for i in range(len(sizes))]
        table, rotate = _plan_one(xs[0], cos, layout, inverse)

        def run_joined(xs, cos, sin):
            joined = rotate(torch.cat(xs, dim=-3), table(cos, sin))
            return tuple(joined.narrow(-3, start, size) for start, size in zip(starts, sizes, strict=True))

        return run_joined
    plans = [_plan_one(x, cos, layout, inverse) for x in xs]
    table = plans[0][0]  # the table depends on the compute dtype, the same for all of xs

    def run(xs, cos, sin):
        prepared = table(cos, sin)
        return tuple(rotate(x, prepared) for (_, rotate), x in zip(plans, xs, strict=True))

    return run if len({compute_dtype(x, cos) for x in xs}) == 1 else _separately(plans)


def _separately(plans):
    def run(xs, cos, sin):
        return tuple(rotate(x, table(cos, sin)) for (table, rotate), x in zip(plans, xs, strict=True))

    return run


def rotate_few_ops(
    xs: Sequence[torch.Tensor], cos: torch.Tensor, sin: torch.Tensor, layout: str, inverse: bool = False
) -> tuple[torch.Tensor, ...]:
    """Rotates each x of xs (..., dim) by cos, sin (..., pairs) in a few plain torch ops (see
    `plan_few_ops`), for tiny inputs where each op's dispatch costs more than its arithmetic."""
    return plan_few_ops(xs, cos, layout, inverse)(xs, cos, sin)


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
    a, b = pair_views(src, layout)
    out_a, out_b = pair_views(dst, layout)
    if scratch:  # in place: out_a overwrites a, which out_b still needs
        a = a.clone()
    torch.mul(a, cos, out=out_a).addcmul_(b, sin, value=-sign)
    torch.mul(b, cos, out=out_b).addcmul_(a, sin, value=sign)


# Where a scratch buffer is needed (in place, half precision) x is rotated in pieces of
# about this many elements (16 MiB of float32), so the scratch stays bounded and is reused,
# while each piece is still large enough that one op on it amortizes its launch.
CHUNK_NUMEL = 1 << 22


def _chunks(src, dst, cos, sin) -> list[tuple[torch.Tensor, ...]]:
    """(src, dst, cos, sin) cut along src's longest leading dim into pieces of ~CHUNK_NUMEL elements."""
    if src.numel() <= CHUNK_NUMEL or src.ndim < 2:
        return [(src, dst, cos, sin)]
    dim = max(range(src.ndim - 1), key=src.shape.__getitem__)
    step = max(1, CHUNK_NUMEL * src.shape[dim] // src.numel())
    table_dim = dim - src.ndim  # tables broadcast from the right: count from there
    cut_table = cos.ndim >= -table_dim and cos.shape[table_dim] > 1
    pieces = []
    for start in range(0, src.shape[dim], step):
        length = min(step, src.shape[dim] - start)
        tables = (
            (cos.narrow(table_dim, start, length), sin.narrow(table_dim, start, length)) if cut_table else (cos, sin)
        )
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


def _rotations(layout: str, *args):
    """args = (x0, cos0, sin0, x1, cos1, sin1, ...) -> the rotation of each x by its own table."""
    return tuple(rotate_composite(args[i], args[i + 1], args[i + 2], layout) for i in range(0, len(args), 3))


def memory_order(x: torch.Tensor, keep: int = 1) -> tuple[int, ...] | None:
    """The permutation that puts x's dims before its last `keep` in memory order (largest stride
    first), the last `keep` staying last; None if they are in it already or x's channels are not
    contiguous. Size-1 dims do not count (any stride is theirs)."""
    lead = x.ndim - keep
    strides = x.stride()
    dims = [d for d in range(lead) if x.shape[d] != 1]
    if x.stride(-1) != 1 or all(strides[a] >= strides[b] for a, b in pairwise(dims)):
        return None
    ordered = sorted(dims, key=lambda d: -strides[d])
    return (*(d for d in range(lead) if x.shape[d] == 1), *ordered, *range(lead, x.ndim))


def _spec(xs, cos: torch.Tensor, layout: str, orders) -> tuple:
    """What dynamo guards on besides sizes; each spec gets its own compiled function."""
    per_x = tuple(
        (x.dtype, x.ndim, 2 * cos.shape[-1] == x.shape[-1], order is not None)
        for x, order in zip(xs, orders, strict=True)
    )
    return ("rotate", layout, cos.dtype, cos.ndim, xs[0].device.type, per_x)


def compiled_spec(xs: Sequence[torch.Tensor], cos: torch.Tensor, layout: str) -> tuple:
    """The spec `rotate_compiled` runs xs under (its compile budget is kept per spec)."""
    return _spec(xs, cos, layout, [memory_order(x) for x in xs])


def rotate_compiled(
    xs: Sequence[torch.Tensor], cos: torch.Tensor, sin: torch.Tensor, layout: str, inverse: bool = False
) -> tuple[torch.Tensor, ...] | None:
    """rotate_composite of every x in xs in one compiled call; a tuple, or None if compiling failed.

    Each x is rotated in its own memory order: a permuted x (q seen as (batch, heads, seq, dim)
    in a (batch, seq, heads, dim) projection) is read and written in that order, so the output has
    x's layout, and every table row serves all heads while it is in cache. Tables must broadcast to
    each x without enlarging it.
    """
    sin = -sin if inverse else sin
    orders = [memory_order(x) for x in xs]
    tables = TablesInOrder(cos, sin)
    args = []
    for x, order in zip(xs, orders, strict=True):
        args += [x if order is None else x.permute(order), *tables(x.ndim, order)]
    outs = compiling.run(_spec(xs, cos, layout, orders), _rotations, layout, *args)
    if outs is None:
        return None
    return tuple(
        out if order is None else out.permute(inverse_permutation(order))
        for out, order in zip(outs, orders, strict=True)
    )


class TablesInOrder:
    """cos and sin as views that broadcast against an x of `ndim` dims permuted by `order`: the
    same view objects for every x of the same rank and order, so that q and k share one input of
    a compiled call (see `compiling.run`)."""

    def __init__(self, cos: torch.Tensor, sin: torch.Tensor):
        self.cos, self.sin, self._views = cos, sin, {}

    def __call__(self, ndim: int, order: tuple[int, ...] | None) -> tuple[torch.Tensor, torch.Tensor]:
        if order is None:
            return self.cos, self.sin
        key = (ndim, order)
        if key not in self._views:
            lead = (1,) * (ndim - self.cos.ndim)  # size-1 dims in front, then x's permutation
            self._views[key] = tuple(t.view(*lead, *t.shape).permute(order) for t in (self.cos, self.sin))
        return self._views[key]


def inverse_permutation(order: tuple[int, ...]) -> tuple[int, ...]:
    inverse = [0] * len(order)
    for i, d in enumerate(order):
        inverse[d] = i
    return tuple(inverse)


def rotate_compiled_(
    x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, layout: str, inverse: bool = False
) -> torch.Tensor:
    """In place through the compiled kernel: piece by piece into a piece-sized buffer, copied back.

    Two passes over x, against five for the eager in-place half layout; a piece that the
    compiled kernel cannot take is rotated by the eager kernel instead. Returns x.
    """
    for piece, _, piece_cos, piece_sin in _chunks(x, x, cos, sin):
        rotated = rotate_compiled((piece,), piece_cos, piece_sin, layout, inverse)
        if rotated is None:
            rotate_into(piece, piece_cos, piece_sin, layout, piece, inverse)
        else:
            piece.copy_(rotated[0])
    return x

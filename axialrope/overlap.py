"""Whether tensors share memory: the checks an in-place rotation makes before it writes.

An element of a strided tensor lives at `storage_offset + sum(i_d * stride_d)` (in elements). Two
elements share memory exactly when these addresses are equal, so

    has_internal_overlap(x)     some address is reached by two different indices of x
    shares_memory(a, b)         some address is reached by an index of a and an index of b

are questions about integer combinations of the strides, answered exactly here (a bounded search
over the dimensions, largest stride first; the common layouts are settled without searching).
torch itself refuses an in-place op only where it can tell cheaply (an expanded view) and lets
other overlapping views through; rotating such a view would read values it has already written.
Tensors of different dtypes or on different storages never count as sharing (a view of one
storage as two dtypes is not something a rotation is given).
"""

from __future__ import annotations

import torch

MAX_SEARCH = 100_000  # nodes of the search before the answer is taken as "may overlap"


def _terms(x: torch.Tensor) -> list[tuple[int, int]]:
    """(stride, size) of every dimension of more than one element."""
    return [(stride, size) for stride, size in zip(x.stride(), x.shape, strict=True) if size > 1]


def _solvable(target: int, digits: list[tuple[int, int, int]], need_nonzero: bool) -> bool:
    """Whether target = sum(c_k * stride_k) for integers lo_k <= c_k <= hi_k (digits: (stride, lo, hi), strides
    positive), with some c_k != 0 when `need_nonzero`. True also when the search grows past MAX_SEARCH."""
    digits = sorted(digits, reverse=True)  # largest stride first: each step leaves few choices
    low = [0] * (len(digits) + 1)  # the smallest and largest sums the digits from k on can make
    high = [0] * (len(digits) + 1)
    for k in range(len(digits) - 1, -1, -1):
        stride, lo, hi = digits[k]
        low[k], high[k] = low[k + 1] + stride * lo, high[k + 1] + stride * hi
    visited = 0

    def search(k: int, rest: int, nonzero: bool) -> bool:
        nonlocal visited
        visited += 1
        if visited > MAX_SEARCH:
            return True
        if k == len(digits):
            return rest == 0 and (nonzero or not need_nonzero)
        if not low[k] <= rest <= high[k]:
            return False
        stride, lo, hi = digits[k]
        first = max(lo, -((high[k + 1] - rest) // stride))  # ceil((rest - high[k + 1]) / stride)
        last = min(hi, (rest - low[k + 1]) // stride)
        return any(search(k + 1, rest - c * stride, nonzero or c != 0) for c in range(first, last + 1))

    return search(0, target, False)


def has_internal_overlap(x: torch.Tensor) -> bool:
    """Whether two different indices of `x` address the same element of its storage (an expanded view, or an
    `as_strided` view whose rows overlap)."""
    terms = sorted(_terms(x))
    if any(stride == 0 for stride, _ in terms):
        return True
    span = 0  # the farthest address the smaller strides reach: a stride beyond it cannot meet them
    for stride, size in terms:
        if stride <= span:
            break
        span += stride * (size - 1)
    else:
        return False
    if len({stride for stride, _ in terms}) < len(terms):  # two dimensions of one stride: one step each meets
        return True
    # two indices i, j meet where sum((i_k - j_k) * stride_k) = 0, each i_k - j_k in -(size - 1) .. size - 1
    return _solvable(0, [(stride, 1 - size, size - 1) for stride, size in terms], need_nonzero=True)


def shares_memory(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Whether an element of `a` and an element of `b` are the same memory (q and k as views of one buffer
    that overlap, not the common fused buffer whose q and k interleave without touching)."""
    if a.numel() == 0 or b.numel() == 0 or a.device != b.device or a.dtype != b.dtype:
        return False
    if a.device.type == "meta" or a.untyped_storage().data_ptr() != b.untyped_storage().data_ptr():
        return False
    spans = []
    for x in (a, b):
        offset = x.storage_offset()
        spans.append((offset, offset + sum(stride * (size - 1) for stride, size in _terms(x))))
    if spans[0][1] < spans[1][0] or spans[1][1] < spans[0][0]:
        return False
    # an address of a minus one of b: sum(i * stride_a) - sum(j * stride_b) = offset_b - offset_a
    merged: dict[int, list[int]] = {}
    for x, sign in ((a, 1), (b, -1)):
        for stride, size in _terms(x):
            if stride == 0:
                continue
            bounds = merged.setdefault(stride, [0, 0])
            bounds[0 if sign < 0 else 1] += sign * (size - 1)
    target = b.storage_offset() - a.storage_offset()
    return _solvable(target, [(stride, lo, hi) for stride, (lo, hi) in merged.items()], need_nonzero=False)


__all__ = ["has_internal_overlap", "shares_memory"]

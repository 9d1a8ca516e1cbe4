"""The rotation as one Triton kernel, for CUDA: reads x once, writes the output once.

Selected by `apply_rotary` only for CUDA tensors and only when Triton imports; this
module imports without Triton (then `available()` is False). Any strides work: x, the
output and the tables are addressed through their own strides, so broadcast tables
(stride 0) are never expanded and permuted q/k need no copy. Each program rotates a
block of rows (a row is one x[..., :]) across all pairs; channels past the table are
copied through unless rotating in place.

Under TRITON_INTERPRET=1 the same launcher runs on CPU tensors (the test suite uses
that to check the kernel's indexing without a GPU).
"""

from __future__ import annotations

import torch

try:
    import triton
    import triton.language as tl
except ImportError:  # Triton is optional: the eager and compiled kernels cover every device
    triton = None

MAX_LEADING_DIMS = 4  # x may have at most this many dims before the channel dim


def available() -> bool:
    return triton is not None


if triton is not None:

    @triton.jit
    def pair_channels(pair, pairs, INTERLEAVED: tl.constexpr):
        """The channels (a, b) of pair j: (2j, 2j + 1) interleaved, (j, j + pairs) half."""
        if INTERLEAVED:
            return 2 * pair, 2 * pair + 1
        else:
            return pair, pair + pairs

    @triton.jit
    def rotate_pair(a, b, cos, sin):
        """(a, b) -> (a cos - b sin, b cos + a sin); the one rotation every Triton kernel here runs."""
        return a * cos - b * sin, b * cos + a * sin

    @triton.jit
    def _rotary_kernel(
        x_ptr,
        out_ptr,
        cos_ptr,
        sin_ptr,
        n_rows,
        size1,
        size2,
        size3,  # leading sizes of x (dim 0 is implied by n_rows)
        xs0,
        xs1,
        xs2,
        xs3,
        xs_chan,  # x strides, leading dims then channels
        os0,
        os1,
        os2,
        os3,
        os_chan,  # output strides
        ts0,
        ts1,
        ts2,
        ts3,
        ts_pair,  # table strides (0 along broadcast dims)
        pairs,
        dim,
        sign,
        INTERLEAVED: tl.constexpr,
        COPY_REST: tl.constexpr,
        FLOAT64: tl.constexpr,
        BLOCK_ROWS: tl.constexpr,
        BLOCK_PAIRS: tl.constexpr,
    ):
        rows = tl.program_id(0).to(tl.int64) * BLOCK_ROWS + tl.arange(0, BLOCK_ROWS)
        row_ok = rows < n_rows
        # row index -> (i0, i1, i2, i3), then each tensor's own offset
        i3 = rows % size3
        rest = rows // size3
        i2 = rest % size2
        rest = rest // size2
        i1 = rest % size1
        i0 = rest // size1
        x_row = i0 * xs0 + i1 * xs1 + i2 * xs2 + i3 * xs3
        out_row = i0 * os0 + i1 * os1 + i2 * os2 + i3 * os3
        table_row = i0 * ts0 + i1 * ts1 + i2 * ts2 + i3 * ts3

        pair = tl.arange(0, BLOCK_PAIRS)
        mask = row_ok[:, None] & (pair < pairs)[None, :]
        chan_a, chan_b = pair_channels(pair, pairs, INTERLEAVED)
        compute = tl.float64 if FLOAT64 else tl.float32
        a = tl.load(x_ptr + x_row[:, None] + chan_a[None, :] * xs_chan, mask=mask).to(compute)
        b = tl.load(x_ptr + x_row[:, None] + chan_b[None, :] * xs_chan, mask=mask).to(compute)
        table = table_row[:, None] + pair[None, :] * ts_pair
        cos = tl.load(cos_ptr + table, mask=mask).to(compute)
        sin = tl.load(sin_ptr + table, mask=mask).to(compute) * sign
        out_ty = out_ptr.dtype.element_ty
        new_a, new_b = rotate_pair(a, b, cos, sin)
        tl.store(out_ptr + out_row[:, None] + chan_a[None, :] * os_chan, new_a.to(out_ty), mask=mask)
        tl.store(out_ptr + out_row[:, None] + chan_b[None, :] * os_chan, new_b.to(out_ty), mask=mask)

        if COPY_REST:  # partial rotary: channels 2 * pairs .. dim pass through
            for start in range(2 * pairs, dim, BLOCK_PAIRS):
                chan = start + pair
                rest_mask = row_ok[:, None] & (chan < dim)[None, :]
                kept = tl.load(x_ptr + x_row[:, None] + chan[None, :] * xs_chan, mask=rest_mask)
                tl.store(out_ptr + out_row[:, None] + chan[None, :] * os_chan, kept, mask=rest_mask)


def pad_leading(strides_or_sizes: tuple[int, ...], fill: int) -> list[int]:
    """Pads the leading dims on the left to MAX_LEADING_DIMS (size 1 / stride 0 in front)."""
    return [fill] * (MAX_LEADING_DIMS - len(strides_or_sizes)) + list(strides_or_sizes)


def supports(x: torch.Tensor, row_dims: int = 1) -> bool:
    """Whether the kernels handle x's rank: up to MAX_LEADING_DIMS dims before the `row_dims`
    that make one row (the channels; heads and channels for a norm across heads)."""
    return x.ndim - row_dims <= MAX_LEADING_DIMS


def rotate(
    x: torch.Tensor,
    cos: torch.Tensor,
    sin: torch.Tensor,
    layout: str,
    out: torch.Tensor,
    inverse: bool = False,
) -> torch.Tensor:
    """Writes the rotation of x (..., dim) into out (shaped like x; may be x itself); returns out.

    cos, sin (..., pairs) must broadcast to x without its last dim; they are read in place
    through stride-0 views. The math runs in float32 (float64 for float64 inputs).
    """
    if triton is None:
        raise RuntimeError("triton is not installed")
    pairs, dim = cos.shape[-1], x.shape[-1]
    leading = x.shape[:-1]
    n_rows = leading.numel()
    if n_rows == 0 or pairs == 0:
        return out.copy_(x) if out is not x else out
    # stride-0 views of the tables over x's leading dims: broadcasting without a copy
    cos = cos.expand(*leading, pairs)
    sin = sin.expand(*leading, pairs)
    if cos.stride() != sin.stride():
        cos, sin = cos.contiguous(), sin.contiguous()
    sizes = pad_leading(tuple(leading), 1)
    x_strides = pad_leading(x.stride()[:-1], 0)
    out_strides = pad_leading(out.stride()[:-1], 0)
    table_strides = pad_leading(cos.stride()[:-1], 0)
    block_pairs = triton.next_power_of_2(pairs)
    block_rows = max(1, min(64, 4096 // block_pairs))
    float64 = torch.promote_types(x.dtype, cos.dtype) == torch.float64
    grid = (triton.cdiv(n_rows, block_rows),)
    _rotary_kernel[grid](
        x,
        out,
        cos,
        sin,
        n_rows,
        sizes[1],
        sizes[2],
        sizes[3],
        *x_strides,
        x.stride(-1),
        *out_strides,
        out.stride(-1),
        *table_strides,
        cos.stride(-1),
        pairs,
        dim,
        -1.0 if inverse else 1.0,
        INTERLEAVED=layout == "interleaved",
        COPY_REST=out is not x and 2 * pairs < dim,
        FLOAT64=float64,
        BLOCK_ROWS=block_rows,
        BLOCK_PAIRS=block_pairs,
    )
    return out

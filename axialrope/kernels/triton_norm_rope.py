"""RMSNorm then rotation as Triton kernels, for CUDA: one read of x and one write of y forward,
one read of dy and x and one write of dx backward.

Selected by `rms_norm_rotary_qk` where `apply_rotary` would pick its own Triton kernel (CUDA
tensors, Triton installed); this module imports without Triton. The formulas are those of
`fused_eager` (its docstring has them); the pair indexing and the rotation are
`triton_rope`'s helpers, shared with the plain rotation kernel.

Each program takes a block of rows; a row is what one RMSNorm spans, one head (heads = 1) or,
across heads, all heads of a token. A block is (rows, heads, pairs), so the sum of squares of
a row is a reduction over the block's last two axes. x, the outputs and the tables are read
through their own strides (broadcast tables at stride 0, permuted q/k without a copy); the
weight is contiguous, one value per channel of a row. The weight gradient is summed per
program into a (programs, row channels) buffer that the launcher reduces.

Under TRITON_INTERPRET=1 the launchers run on CPU tensors (the test suite checks the
indexing that way without a GPU).
"""

from __future__ import annotations

import torch
from torch import Tensor

from . import triton_rope
from .triton_rope import pad_leading

triton = triton_rope.triton
if triton is not None:
    import triton.language as tl

    from .triton_rope import pair_channels, rotate_pair

    @triton.jit
    def _row_offsets(rows, size1, size2, size3, s0, s1, s2, s3):
        """Flat row index -> offset of the row, for leading sizes (., size1, size2, size3) and strides s."""
        i3 = rows % size3
        rest = rows // size3
        i2 = rest % size2
        rest = rest // size2
        i1 = rest % size1
        i0 = rest // size1
        return i0 * s0 + i1 * s1 + i2 * s2 + i3 * s3

    @triton.jit
    def _norm_rotary_fwd_kernel(
        x_ptr,
        out_ptr,
        w_ptr,
        cos_ptr,
        sin_ptr,
        rstd_ptr,
        n_rows,
        size1,
        size2,
        size3,
        xs0,
        xs1,
        xs2,
        xs3,
        xs_head,
        xs_chan,
        os0,
        os1,
        os2,
        os3,
        os_head,
        os_chan,
        ts0,
        ts1,
        ts2,
        ts3,
        ts_head,
        ts_pair,
        heads,
        pairs,
        dim,
        eps,
        INTERLEAVED: tl.constexpr,
        HAS_WEIGHT: tl.constexpr,
        HAS_REST: tl.constexpr,
        STORE_RSTD: tl.constexpr,
        FLOAT64: tl.constexpr,
        BLOCK_ROWS: tl.constexpr,
        BLOCK_HEADS: tl.constexpr,
        BLOCK_PAIRS: tl.constexpr,
        BLOCK_REST: tl.constexpr,
    ):
        compute = tl.float64 if FLOAT64 else tl.float32
        rows = tl.program_id(0).to(tl.int64) * BLOCK_ROWS + tl.arange(0, BLOCK_ROWS)
        row_ok = rows < n_rows
        head = tl.arange(0, BLOCK_HEADS)
        head_ok = (head < heads)[None, :, None]
        pair = tl.arange(0, BLOCK_PAIRS)
        pair_ok = (pair < pairs)[None, None, :]
        row_head_ok = row_ok[:, None, None] & head_ok
        mask = row_head_ok & pair_ok  # (rows, heads, pairs)
        x_base = (
            _row_offsets(rows, size1, size2, size3, xs0, xs1, xs2, xs3)[:, None, None] + (head * xs_head)[None, :, None]
        )
        o_base = (
            _row_offsets(rows, size1, size2, size3, os0, os1, os2, os3)[:, None, None] + (head * os_head)[None, :, None]
        )
        t_base = (
            _row_offsets(rows, size1, size2, size3, ts0, ts1, ts2, ts3)[:, None, None] + (head * ts_head)[None, :, None]
        )
        chan_a, chan_b = pair_channels(pair, pairs, INTERLEAVED)
        chan_a = chan_a[None, None, :]
        chan_b = chan_b[None, None, :]

        a = tl.load(x_ptr + x_base + chan_a * xs_chan, mask=mask, other=0.0).to(compute)
        b = tl.load(x_ptr + x_base + chan_b * xs_chan, mask=mask, other=0.0).to(compute)
        sum_sq = tl.sum(tl.sum(a * a + b * b, axis=2), axis=1)
        if HAS_REST:  # partial rotary: channels 2 * pairs .. dim are normalised, not rotated
            chan_r = (2 * pairs + tl.arange(0, BLOCK_REST))[None, None, :]
            rest_mask = row_head_ok & (chan_r < dim)
            r = tl.load(x_ptr + x_base + chan_r * xs_chan, mask=rest_mask, other=0.0).to(compute)
            sum_sq += tl.sum(tl.sum(r * r, axis=2), axis=1)
        rstd = 1.0 / tl.sqrt(sum_sq / (heads * dim) + eps)
        if STORE_RSTD:
            tl.store(rstd_ptr + rows, rstd.to(rstd_ptr.dtype.element_ty), mask=row_ok)
        scale = rstd[:, None, None]
        a = a * scale
        b = b * scale
        if HAS_WEIGHT:
            w_base = (head * dim)[None, :, None]
            a = a * tl.load(w_ptr + w_base + chan_a, mask=head_ok & pair_ok, other=0.0).to(compute)
            b = b * tl.load(w_ptr + w_base + chan_b, mask=head_ok & pair_ok, other=0.0).to(compute)
        table = t_base + pair[None, None, :] * ts_pair
        cos = tl.load(cos_ptr + table, mask=mask, other=0.0).to(compute)
        sin = tl.load(sin_ptr + table, mask=mask, other=0.0).to(compute)
        new_a, new_b = rotate_pair(a, b, cos, sin)
        out_ty = out_ptr.dtype.element_ty
        tl.store(out_ptr + o_base + chan_a * os_chan, new_a.to(out_ty), mask=mask)
        tl.store(out_ptr + o_base + chan_b * os_chan, new_b.to(out_ty), mask=mask)
        if HAS_REST:
            r = r * scale
            if HAS_WEIGHT:
                r = r * tl.load(
                    w_ptr + (head * dim)[None, :, None] + chan_r, mask=head_ok & (chan_r < dim), other=0.0
                ).to(compute)
            tl.store(out_ptr + o_base + chan_r * os_chan, r.to(out_ty), mask=rest_mask)

    @triton.jit
    def _norm_rotary_bwd_kernel(
        g_ptr,
        x_ptr,
        dx_ptr,
        w_ptr,
        cos_ptr,
        sin_ptr,
        rstd_ptr,
        dw_ptr,
        n_rows,
        size1,
        size2,
        size3,
        gs0,
        gs1,
        gs2,
        gs3,
        gs_head,
        gs_chan,
        xs0,
        xs1,
        xs2,
        xs3,
        xs_head,
        xs_chan,
        ds0,
        ds1,
        ds2,
        ds3,
        ds_head,
        ds_chan,
        ts0,
        ts1,
        ts2,
        ts3,
        ts_head,
        ts_pair,
        heads,
        pairs,
        dim,
        INTERLEAVED: tl.constexpr,
        HAS_WEIGHT: tl.constexpr,
        HAS_REST: tl.constexpr,
        FLOAT64: tl.constexpr,
        BLOCK_ROWS: tl.constexpr,
        BLOCK_HEADS: tl.constexpr,
        BLOCK_PAIRS: tl.constexpr,
        BLOCK_REST: tl.constexpr,
    ):
        compute = tl.float64 if FLOAT64 else tl.float32
        program = tl.program_id(0).to(tl.int64)
        rows = program * BLOCK_ROWS + tl.arange(0, BLOCK_ROWS)
        row_ok = rows < n_rows
        head = tl.arange(0, BLOCK_HEADS)
        head_ok = (head < heads)[None, :, None]
        pair = tl.arange(0, BLOCK_PAIRS)
        pair_ok = (pair < pairs)[None, None, :]
        row_head_ok = row_ok[:, None, None] & head_ok
        mask = row_head_ok & pair_ok
        g_base = (
            _row_offsets(rows, size1, size2, size3, gs0, gs1, gs2, gs3)[:, None, None] + (head * gs_head)[None, :, None]
        )
        x_base = (
            _row_offsets(rows, size1, size2, size3, xs0, xs1, xs2, xs3)[:, None, None] + (head * xs_head)[None, :, None]
        )
        d_base = (
            _row_offsets(rows, size1, size2, size3, ds0, ds1, ds2, ds3)[:, None, None] + (head * ds_head)[None, :, None]
        )
        t_base = (
            _row_offsets(rows, size1, size2, size3, ts0, ts1, ts2, ts3)[:, None, None] + (head * ts_head)[None, :, None]
        )
        pair_a, pair_b = pair_channels(pair, pairs, INTERLEAVED)  # (pairs,): for the weight gradient
        chan_a = pair_a[None, None, :]
        chan_b = pair_b[None, None, :]

        table = t_base + pair[None, None, :] * ts_pair
        cos = tl.load(cos_ptr + table, mask=mask, other=0.0).to(compute)
        sin = tl.load(sin_ptr + table, mask=mask, other=0.0).to(compute)
        ga = tl.load(g_ptr + g_base + chan_a * gs_chan, mask=mask, other=0.0).to(compute)
        gb = tl.load(g_ptr + g_base + chan_b * gs_chan, mask=mask, other=0.0).to(compute)
        ga, gb = rotate_pair(ga, gb, cos, -sin)  # R(-angle) dy
        rstd = tl.load(rstd_ptr + rows, mask=row_ok, other=0.0).to(compute)
        scale = rstd[:, None, None]
        xa = tl.load(x_ptr + x_base + chan_a * xs_chan, mask=mask, other=0.0).to(compute) * scale  # xhat
        xb = tl.load(x_ptr + x_base + chan_b * xs_chan, mask=mask, other=0.0).to(compute) * scale
        gwa = ga
        gwb = gb
        if HAS_WEIGHT:
            w_base = (head * dim)[None, :, None]
            gwa = ga * tl.load(w_ptr + w_base + chan_a, mask=head_ok & pair_ok, other=0.0).to(compute)
            gwb = gb * tl.load(w_ptr + w_base + chan_b, mask=head_ok & pair_ok, other=0.0).to(compute)
        dot = tl.sum(tl.sum(gwa * xa + gwb * xb, axis=2), axis=1)
        if HAS_REST:
            rest = 2 * pairs + tl.arange(0, BLOCK_REST)
            chan_r = rest[None, None, :]
            rest_mask = row_head_ok & (chan_r < dim)
            gr = tl.load(g_ptr + g_base + chan_r * gs_chan, mask=rest_mask, other=0.0).to(compute)
            xr = tl.load(x_ptr + x_base + chan_r * xs_chan, mask=rest_mask, other=0.0).to(compute) * scale
            gwr = gr
            if HAS_WEIGHT:
                gwr = gr * tl.load(
                    w_ptr + (head * dim)[None, :, None] + chan_r, mask=head_ok & (chan_r < dim), other=0.0
                ).to(compute)
            dot += tl.sum(tl.sum(gwr * xr, axis=2), axis=1)
        mean = (dot / (heads * dim))[:, None, None]
        dx_ty = dx_ptr.dtype.element_ty
        tl.store(dx_ptr + d_base + chan_a * ds_chan, ((gwa - xa * mean) * scale).to(dx_ty), mask=mask)
        tl.store(dx_ptr + d_base + chan_b * ds_chan, ((gwb - xb * mean) * scale).to(dx_ty), mask=mask)
        if HAS_REST:
            tl.store(dx_ptr + d_base + chan_r * ds_chan, ((gwr - xr * mean) * scale).to(dx_ty), mask=rest_mask)
        if HAS_WEIGHT:  # this program's share of dw = sum over rows of g * xhat
            dw_base = dw_ptr + program * heads * dim + (head * dim)[:, None]
            head_ok2 = (head < heads)[:, None]
            tl.store(dw_base + pair_a[None, :], tl.sum(ga * xa, axis=0), mask=head_ok2 & (pair < pairs)[None, :])
            tl.store(dw_base + pair_b[None, :], tl.sum(gb * xb, axis=0), mask=head_ok2 & (pair < pairs)[None, :])
            if HAS_REST:
                tl.store(dw_base + rest[None, :], tl.sum(gr * xr, axis=0), mask=head_ok2 & (rest < dim)[None, :])


def available() -> bool:
    return triton is not None


def _rows(t: torch.Tensor, across_heads: bool) -> tuple[list[int], list[int], int]:
    """(leading sizes, leading strides, heads stride) of t seen as rows, padded to MAX_LEADING_DIMS."""
    keep = 2 if across_heads else 1
    sizes = pad_leading(tuple(t.shape[:-keep]), 1)
    strides = pad_leading(t.stride()[:-keep], 0)
    return sizes, strides, t.stride(-2) if across_heads else 0


def _tables(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, across_heads: bool):
    """cos, sin as stride-0 views over x's leading dims, and their row strides."""
    shape = (*x.shape[:-1], cos.shape[-1])
    cos, sin = cos.expand(shape), sin.expand(shape)
    if cos.stride() != sin.stride():
        cos, sin = cos.contiguous(), sin.contiguous()
    _, strides, head = _rows(cos, across_heads)
    return cos, sin, strides, head


def _blocks(x: torch.Tensor, pairs: int, across_heads: bool, budget: int) -> dict:
    heads = x.shape[-2] if across_heads else 1
    rest = x.shape[-1] - 2 * pairs
    block_heads, block_pairs = triton.next_power_of_2(heads), triton.next_power_of_2(max(pairs, 1))
    block_rest = triton.next_power_of_2(max(rest, 1))
    block_rows = max(1, min(64, budget // (block_heads * max(block_pairs, block_rest))))
    return dict(
        BLOCK_ROWS=block_rows,
        BLOCK_HEADS=block_heads,
        BLOCK_PAIRS=block_pairs,
        BLOCK_REST=block_rest,
        HAS_REST=rest > 0,
        num_warps=4 if block_heads * block_pairs * block_rows <= 2048 else 8,
    )


def norm_rotate(
    x: Tensor,
    cos: Tensor,
    sin: Tensor,
    weight: Tensor | None,
    eps: float,
    layout: str,
    across_heads: bool = False,
    need_rstd: bool = True,
) -> tuple[Tensor, Tensor | None]:
    """(y, rstd) as `fused_eager.norm_rotate_composite` gives them; rstd None unless need_rstd.

    x (..., head_dim), or (..., heads, head_dim) across heads; cos, sin (..., pairs) broadcast
    against x without its last dim; weight None or one value per channel of a row.
    """
    if triton is None:
        raise RuntimeError("triton is not installed")
    pairs, dim = cos.shape[-1], x.shape[-1]
    heads = x.shape[-2] if across_heads else 1
    out = torch.empty_like(x)
    compute = torch.promote_types(torch.promote_types(x.dtype, cos.dtype), torch.float32)
    row_shape = (*x.shape[: -2 if across_heads else -1], *((1, 1) if across_heads else (1,)))
    rstd = torch.empty(row_shape, dtype=compute, device=x.device)
    n_rows = rstd.numel()
    if n_rows == 0:
        return out, (rstd if need_rstd else None)
    sizes, x_strides, x_head = _rows(x, across_heads)
    _, o_strides, o_head = _rows(out, across_heads)
    cos, sin, t_strides, t_head = _tables(x, cos, sin, across_heads)
    w = x if weight is None else weight.contiguous().view(-1)
    blocks = _blocks(x, pairs, across_heads, budget=4096)
    grid = (triton.cdiv(n_rows, blocks["BLOCK_ROWS"]),)
    _norm_rotary_fwd_kernel[grid](
        x,
        out,
        w,
        cos,
        sin,
        rstd,
        n_rows,
        sizes[1],
        sizes[2],
        sizes[3],
        *x_strides,
        x_head,
        x.stride(-1),
        *o_strides,
        o_head,
        out.stride(-1),
        *t_strides,
        t_head,
        cos.stride(-1),
        heads,
        pairs,
        dim,
        float(eps),
        INTERLEAVED=layout == "interleaved",
        HAS_WEIGHT=weight is not None,
        STORE_RSTD=need_rstd,
        FLOAT64=compute == torch.float64,
        **blocks,
    )
    return out, (rstd if need_rstd else None)


def norm_rotate_backward(
    grad: Tensor,
    x: Tensor,
    rstd: Tensor,
    cos: Tensor,
    sin: Tensor,
    weight: Tensor | None,
    layout: str,
    across_heads: bool = False,
) -> tuple[Tensor, Tensor | None]:
    """(dx, dw) as `fused_eager.norm_rotate_backward_composite` gives them (dw None without weight)."""
    if triton is None:
        raise RuntimeError("triton is not installed")
    pairs, dim = cos.shape[-1], x.shape[-1]
    heads = x.shape[-2] if across_heads else 1
    dx = torch.empty_like(x)
    n_rows = rstd.numel()
    blocks = _blocks(x, pairs, across_heads, budget=2048)
    programs = triton.cdiv(n_rows, blocks["BLOCK_ROWS"]) if n_rows else 0
    partial = torch.empty((programs, heads * dim), dtype=rstd.dtype, device=x.device) if weight is not None else None
    if programs:
        sizes, g_strides, g_head = _rows(grad, across_heads)
        _, x_strides, x_head = _rows(x, across_heads)
        _, d_strides, d_head = _rows(dx, across_heads)
        cos, sin, t_strides, t_head = _tables(x, cos, sin, across_heads)
        w = x if weight is None else weight.contiguous().view(-1)
        _norm_rotary_bwd_kernel[(programs,)](
            grad,
            x,
            dx,
            w,
            cos,
            sin,
            rstd.contiguous(),
            x if partial is None else partial,
            n_rows,
            sizes[1],
            sizes[2],
            sizes[3],
            *g_strides,
            g_head,
            grad.stride(-1),
            *x_strides,
            x_head,
            x.stride(-1),
            *d_strides,
            d_head,
            dx.stride(-1),
            *t_strides,
            t_head,
            cos.stride(-1),
            heads,
            pairs,
            dim,
            INTERLEAVED=layout == "interleaved",
            HAS_WEIGHT=weight is not None,
            FLOAT64=rstd.dtype == torch.float64,
            **blocks,
        )
    if weight is None:
        return dx, None
    dw = partial.sum(0) if programs else torch.zeros(heads * dim, dtype=rstd.dtype, device=x.device)
    return dx, dw.view(weight.shape).to(weight.dtype)


__all__ = ["available", "norm_rotate", "norm_rotate_backward"]

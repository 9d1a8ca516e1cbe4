"""Token coordinates: the positions that RoPE rotates by.

Positions are coordinates, not indices: a float tensor (seq, n_axes) whose rows are
(t, y, x) for video, (y, x) for images, (p,) for text. Grids flatten row-major, the
order of einops' '(t h w)', so row k of `grid_coords(T, H, W)` belongs to token k of
`rearrange(video, 'b c t h w -> b (t h w) c')`.
"""

from __future__ import annotations

from collections.abc import Sequence
from numbers import Real

import torch
from einops import rearrange

from .validation import is_int, is_real


def per_axis_values(value: float | Sequence[float] | None, n_axes: int, name: str, default: float) -> list[float]:
    """None -> [default] * n_axes; a number -> that number per axis; a sequence -> checked, as floats."""
    if value is None:
        return [default] * n_axes
    values = [value] * n_axes if isinstance(value, Real) else list(value)
    if len(values) != n_axes:
        raise ValueError(f"{name} must be a number or have one entry per axis ({n_axes}), got {len(values)}")
    for v in values:
        if not is_real(v):
            raise TypeError(f"{name} entries must be real numbers, got {type(v).__name__}")
    return [float(v) for v in values]


def grid_coords(
    *sizes: int,
    offset: float | Sequence[float] | None = None,
    scale: float | Sequence[float] | None = None,
    device: torch.device | str | None = None,
    dtype: torch.dtype = torch.float64,
) -> torch.Tensor:
    """Coordinates of every cell of a 1D, (y, x) or (t, y, x) grid, flattened row-major.

    Coordinate of cell index i on axis a: offset[a] + scale[a] * i.

    Args:
        sizes: grid size per axis, e.g. grid_coords(16, 32, 32) for t, y, x.
        offset: shift per axis (a number applies to all axes); default 0.
        scale: spacing per axis; default 1. scale=0.5 maps a 64-cell axis onto the
            positions 0 .. 31.5 of a model trained on 32 cells (position interpolation).

    Returns:
        (prod(sizes), len(sizes)) tensor.
    """
    if not sizes:
        raise ValueError("grid_coords needs at least one axis size")
    for size in sizes:
        if not is_int(size) or size <= 0:
            raise ValueError(f"grid sizes must be positive integers, got {sizes}")
    offsets = per_axis_values(offset, len(sizes), "offset", 0.0)
    scales = per_axis_values(scale, len(sizes), "scale", 1.0)
    axes = [o + s * torch.arange(n, dtype=dtype, device=device) for n, o, s in zip(sizes, offsets, scales, strict=True)]
    mesh = torch.stack(torch.meshgrid(*axes, indexing="ij"), dim=-1)  # (*sizes, n_axes)
    return rearrange(mesh, "... axes -> (...) axes")


def text_and_grid_coords(num_text_tokens: int, grid: torch.Tensor, text: str = "before") -> torch.Tensor:
    """Joins a text sequence and a grid into one coordinate sequence, text first.

    Args:
        num_text_tokens: number of text tokens n placed before the grid tokens.
        grid: (seq, n_axes) grid coordinates, e.g. from `grid_coords`.
        text: "before" puts text token i at first-axis coordinate g0 - n + i, where g0 is
            the grid's smallest first-axis coordinate, other axes 0 (a 1D sequence that
            ends where the grid starts); "zeros" gives every text token coordinate 0 on all
            axes (Flux's text ids), so text-text pairs carry no position at all.

    Returns:
        (n + seq, n_axes) coordinates in the grid's dtype and device.
    """
    if not is_int(num_text_tokens) or num_text_tokens < 0:
        raise ValueError(f"num_text_tokens must be a non-negative integer, got {num_text_tokens!r}")
    if not isinstance(grid, torch.Tensor) or grid.ndim != 2:
        raise ValueError(f"grid must be a (seq, n_axes) tensor, got {getattr(grid, 'shape', type(grid).__name__)}")
    text_coords = grid.new_zeros(num_text_tokens, grid.shape[-1])
    if text == "before":
        start = grid[:, 0].min() - num_text_tokens
        text_coords[:, 0] = start + torch.arange(num_text_tokens, dtype=grid.dtype, device=grid.device)
    elif text != "zeros":
        raise ValueError(f"text must be 'before' or 'zeros', got {text!r}")
    return torch.cat((text_coords, grid), dim=0)

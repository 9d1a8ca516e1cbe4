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


# -- position bundles (SPA, spatial position alignment; HRDiT) ---------------------------------------------------


def bundle_index(index: torch.Tensor, first: int, size: int) -> torch.Tensor:
    """The bundle each token index falls in, on one axis.

    The first `first` indices form bundle 0, every later run of `size` indices the next bundle:
    index i -> 0 if i < first, else ceil((i + 1 - first) / size). Sliding `first` over 1 .. size moves
    where the bundle boundaries fall; `first = size` bundles 0 .. size - 1, size .. 2 size - 1, ...

    Args:
        index: integer token indices (any shape), >= 0.
        first: size of the first bundle, 1 <= first <= size.
        size: tokens per bundle after the first, >= 1.

    Returns:
        int64 bundle numbers, index's shape.
    """
    if not is_int(size) or size < 1:
        raise ValueError(f"size (tokens per bundle) must be a positive integer, got {size!r}")
    if not is_int(first) or not 1 <= first <= size:
        raise ValueError(f"first (the first bundle's size) must be an integer in 1 .. {size}, got {first!r}")
    index = index.long()
    later = torch.div(index - first, size, rounding_mode="floor") + 1  # ceil((i + 1 - first) / size)
    return torch.where(index < first, torch.zeros_like(index), later)


def bundle_slides(n_axes: int, size: int) -> list[tuple[int, ...]]:
    """The first-bundle sizes of SPA's variants over `n_axes` bundled axes, one tuple per variant.

    Variant 0 bundles every axis from its start (first = size on each); then, axis by axis, the
    first bundle of that axis alone shrinks to 1 .. size - 1 (the others at size). That is
    1 + n_axes * (size - 1) variants, 2 size - 1 for an image's (y, x); one variant for size 1.
    """
    if not is_int(n_axes) or n_axes < 1:
        raise ValueError(f"n_axes must be a positive integer, got {n_axes!r}")
    if not is_int(size) or size < 1:
        raise ValueError(f"size (tokens per bundle) must be a positive integer, got {size!r}")
    slides = [(size,) * n_axes]
    for axis in range(n_axes):
        for first in range(1, size):
            slides.append(tuple(first if a == axis else size for a in range(n_axes)))
    return slides


def bundle_positions(positions: torch.Tensor, origin: float, spacing: float, first: int, size: int) -> torch.Tensor:
    """Positions of one axis moved onto their bundles' positions: origin + spacing * bundle_index(i).

    Args:
        positions: (...) coordinates of tokens on one axis, origin + spacing * i for integer i >= 0
            (rounded to the nearest i: the grids' own coordinates).
        origin: the coordinate of the axis's first token; spacing: between neighbouring tokens (> 0).
        first, size: as `bundle_index`.

    Returns:
        (...) coordinates, positions' dtype.
    """
    if not is_real(spacing) or not spacing > 0:
        raise ValueError(f"spacing must be a positive number, got {spacing!r}")
    index = torch.round((positions.to(torch.float64) - origin) / spacing)
    if bool((index < 0).any()):
        raise ValueError("positions below the axis's origin cannot be bundled (the origin is the first token's)")
    bundled = origin + spacing * bundle_index(index, first, size).to(torch.float64)
    return bundled.to(positions.dtype)


def bundled_grid_coords(
    sizes: Sequence[int],
    bundled_axes: Sequence[int],
    first: Sequence[int],
    size: int,
    offset: float | Sequence[float] | None = None,
    scale: float | Sequence[float] | None = None,
    dtype: torch.dtype = torch.float64,
) -> torch.Tensor:
    """`grid_coords(*sizes, offset=, scale=)` with the axes `bundled_axes` bundled, `first[j]` the first
    bundle's size on bundled_axes[j] (one variant of `bundle_slides`); other axes keep their coordinates.

    Returns:
        (prod(sizes), len(sizes)) coordinates, row-major.
    """
    coords = grid_coords(*sizes, offset=offset, scale=scale, dtype=dtype)
    if len(first) != len(bundled_axes):
        raise ValueError(f"first must have one size per bundled axis ({len(bundled_axes)}), got {tuple(first)}")
    offsets = per_axis_values(offset, len(sizes), "offset", 0.0)
    scales = per_axis_values(scale, len(sizes), "scale", 1.0)
    for axis, first_size in zip(bundled_axes, first, strict=True):
        if not is_int(axis) or not 0 <= axis < len(sizes):
            raise ValueError(f"bundled axis {axis!r} is not an axis of a {len(sizes)}-axis grid")
        if scales[axis] <= 0:
            raise ValueError(f"a bundled axis needs a positive scale, got {scales[axis]} on axis {axis}")
        coords[:, axis] = bundle_positions(coords[:, axis], offsets[axis], scales[axis], first_size, size)
    return coords

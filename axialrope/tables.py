"""Rotary tables: coordinates in, half-width (cos, sin) out.

`axial_cos_sin` and `axis_cos_sin` build the tables, plain functions. `AxialRotaryEmbedding`
splits the rotary dimension into one block per axis, axes_dims = (d_t, d_y, d_x); axis a's
pairs rotate by coordinate a times that axis's own 1D frequencies (own theta, own scaling).
`RotaryEmbedding` is the one-axis case for text. The modules hold the per-axis settings and
cache the builders' tables. Tables come out float32 with each axis's attention factor folded in.

Angles are formed in float64: float32 has an ulp of 0.125 at position 2^20, which
would be a wrong angle, not a rounding.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Hashable, Sequence
from numbers import Real

import torch
from torch import nn

from .coords import grid_coords, per_axis_values
from .frequencies import check_rotary_dim, check_theta, rope_frequencies
from .scaling import RopeScaling, ScalingLike, as_rope_scaling
from .table_cache import CacheInfo, TableCache, tensor_key

Table = tuple[torch.Tensor, torch.Tensor]


def check_coords(coords: torch.Tensor, n_axes: int) -> None:
    """TypeError or ValueError unless coords is a real tensor (..., seq, n_axes)."""
    if not isinstance(coords, torch.Tensor):
        raise TypeError(f"coords must be a torch.Tensor, got {type(coords).__name__}")
    if coords.is_complex() or coords.dtype == torch.bool:
        raise TypeError(f"coords must be real (float or int), got dtype {coords.dtype}")
    if coords.ndim < 2 or coords.shape[-1] != n_axes:
        raise ValueError(f"coords must have shape (..., seq, n_axes) with n_axes={n_axes}, got {tuple(coords.shape)}")


def axial_cos_sin(
    coords: torch.Tensor,
    axes_dims: Sequence[int],
    thetas: Sequence[float],
    scalings: Sequence[ScalingLike],
    seq_lens: Sequence[int | None] | None = None,
    gain: float = 1.0,
) -> Table:
    """The axial table of coords (..., seq, n_axes): cos, sin (..., seq, sum(axes_dims) // 2), float32,
    on coords' device.

    Axis a's d_a // 2 pairs (blocks in the order of axes_dims) rotate by coords[..., a] times
    `rope_frequencies(axes_dims[a], thetas[a], scalings[a], seq_lens[a])`. Angles are formed in float64
    and each axis's attention factor (one number, or one per pair: sega's magnitudes) multiplies its block
    there; `gain` multiplies the float32 table
    (the square root of a logit scale: q.k logits between tokens that both carry it grow by gain^2).

    seq_lens: per-axis current length for "dynamic" scaling; None reads it from the coordinates
    (max + 1), which syncs with the device.
    """
    n_axes = len(axes_dims)
    check_coords(coords, n_axes)
    if len(thetas) != n_axes or len(scalings) != n_axes:
        raise ValueError(
            f"need one theta and one scaling per axis ({n_axes} axes), got {len(thetas)} and {len(scalings)}"
        )
    _check_table_memory(coords.numel() // n_axes, sum(axes_dims) // 2, n_axes, coords.device, "coords")
    if not torch.compiler.is_compiling() and coords.is_floating_point() and not torch.isfinite(coords).all():
        raise ValueError("coords (positions) must be finite; found NaN or inf")
    scalings = [as_rope_scaling(s, theta=t) for s, t in zip(scalings, thetas, strict=True)]
    if seq_lens is None and any(s is not None and s.rope_type == "dynamic" for s in scalings):
        # dynamic NTK depends on the current length: read it from the coordinates
        longest = coords.detach().reshape(-1, n_axes).amax(dim=0) + 1
        seq_lens = [int(n) for n in longest.tolist()]
    seq_lens = (None,) * n_axes if seq_lens is None else seq_lens
    per_axis = [rope_frequencies(*args) for args in zip(axes_dims, thetas, scalings, seq_lens, strict=True)]
    # MPS has no float64: build there on the CPU, then move
    device = torch.device("cpu") if coords.device.type == "mps" else coords.device
    inv_freq = torch.cat([f for f, _ in per_axis]).to(device)  # (pairs,)
    # an attention factor is one number per axis, or one per pair (sega's magnitudes)
    factors = torch.cat(
        [
            a if isinstance(a, torch.Tensor) else torch.full((d // 2,), a, dtype=torch.float64)
            for d, (_, a) in zip(axes_dims, per_axis, strict=True)
        ]
    ).to(device)
    pair_axis = torch.repeat_interleave(torch.arange(n_axes), torch.tensor(axes_dims) // 2).to(device)
    # (..., seq, n_axes) -> (..., seq, pairs): each pair reads its own axis's coordinate
    angles = coords.to(device=device, dtype=torch.float64).index_select(-1, pair_axis) * inv_freq
    cos = (angles.cos() * factors).float().to(coords.device)
    sin = (angles.sin() * factors).float().to(coords.device)
    return (cos * gain, sin * gain) if gain != 1.0 else (cos, sin)


def axis_cos_sin(
    positions: torch.Tensor, dim: int, theta: float, scaling: ScalingLike = None, gain: float = 1.0
) -> Table:
    """The one-axis table of positions (n,): cos, sin (n, dim // 2), float32 on positions' device (see
    `axial_cos_sin`, whose one-axis case it is)."""
    if not isinstance(positions, torch.Tensor):
        raise TypeError(f"positions must be a torch.Tensor, got {type(positions).__name__}")
    if positions.ndim != 1:
        raise ValueError(f"positions must have shape (n,), got {tuple(positions.shape)}")
    return axial_cos_sin(positions[:, None], (dim,), (theta,), (scaling,), gain=gain)


class AxialRotaryEmbedding(nn.Module):
    """N-D axial RoPE tables.

    Args:
        axes_dims: rotary channels per axis, each even, e.g. (16, 24, 24) for (t, y, x)
            with head_dim 64. Their sum is the rotary dimension; channels of a head
            beyond it pass through unrotated.
        theta: one base for all axes, or one per axis.
        scaling: one scaling (None, a transformers-format dict, a `RopeScaling`) for all
            axes, or a list with one per axis.
        head_dim: if given, checked to hold the rotary dimension.
        cache_size: number of tables kept (least recently used dropped first; 0 keeps none).

    forward(coords) with coords (..., seq, n_axes) returns cos, sin of shape
    (..., seq, sum(axes_dims) // 2) (`axial_cos_sin`), axis blocks in the order of axes_dims.
    Tables are cached per coords tensor (`table_cache.tensor_key`: identity and version, or the
    values of an inference tensor) and per grid in `for_grid`; every key also holds theta,
    scaling and device. `cache_info()` counts them. Callers must not modify tables in place.
    """

    def __init__(
        self,
        axes_dims: Sequence[int],
        theta: float | Sequence[float] = 10000.0,
        scaling: ScalingLike | Sequence[ScalingLike] = None,
        head_dim: int | None = None,
        cache_size: int = 16,
    ):
        super().__init__()
        if isinstance(axes_dims, (int, str)) or not isinstance(axes_dims, Sequence) or len(axes_dims) == 0:
            raise TypeError(f"axes_dims must be a non-empty sequence of ints, got {axes_dims!r}")
        self.axes_dims = tuple(check_rotary_dim(d, f"axes_dims[{i}]") for i, d in enumerate(axes_dims))
        if head_dim is not None and self.rotary_dim > check_rotary_dim(head_dim, "head_dim"):
            raise ValueError(
                f"axes_dims {self.axes_dims} sum to {self.rotary_dim} channels, more than head_dim={head_dim}"
            )
        self._cache = TableCache(cache_size)
        self.set_frequencies(theta, scaling)

    @property
    def n_axes(self) -> int:
        return len(self.axes_dims)

    @property
    def rotary_dim(self) -> int:
        return sum(self.axes_dims)

    @property
    def cache_size(self) -> int:
        """Tables kept (least recently used dropped first; 0 keeps none)."""
        return self._cache.maxsize

    @cache_size.setter
    def cache_size(self, size: int) -> None:
        self._cache.maxsize = size

    def cache_info(self) -> CacheInfo:
        """(hits, misses, maxsize, currsize) of the table cache, as `functools.lru_cache` counts them."""
        return self._cache.info()

    def check_frequencies(
        self, theta: float | Sequence[float] = 10000.0, scaling: ScalingLike | Sequence[ScalingLike] = None
    ) -> tuple[tuple[float, ...], tuple[RopeScaling | None, ...]]:
        """The per-axis (thetas, scalings) that `set_frequencies(theta, scaling)` would set; raises
        (changing nothing) for anything `set_frequencies` would refuse."""
        n = self.n_axes
        thetas = [theta] * n if isinstance(theta, Real) else theta
        if isinstance(thetas, (str, bytes)) or not isinstance(thetas, Sequence) or len(thetas) != n:
            raise ValueError(f"theta must be a number or a sequence of {n} numbers (one per axis), got {theta!r}")
        scalings = scaling if isinstance(scaling, (list, tuple)) else [scaling] * n
        if len(scalings) != n:
            raise ValueError(f"scaling must be one config or a list of {n} (one per axis), got {len(scalings)}")
        thetas = tuple(check_theta(t, f"theta[{i}]") for i, t in enumerate(thetas))
        scalings = tuple(as_rope_scaling(s, theta=t) for s, t in zip(scalings, thetas, strict=True))
        for dim, t, s in zip(self.axes_dims, thetas, scalings, strict=True):
            rope_frequencies(dim, t, s)  # fail now, not at the first forward (e.g. ntk with dim 2)
        return thetas, scalings

    def set_frequencies(
        self, theta: float | Sequence[float] = 10000.0, scaling: ScalingLike | Sequence[ScalingLike] = None
    ) -> None:
        """Replaces the per-axis theta and scaling (weights are untouched; caches key on both).

        Atomic: everything is checked first, so a call that raises leaves the old settings.
        """
        thetas, scalings = self.check_frequencies(theta, scaling)
        self.thetas, self.scalings = thetas, scalings  # one statement: both or neither

    def axis_frequencies(self, seq_lens: Sequence[int | None] | None = None) -> list[tuple[torch.Tensor, float]]:
        """Per axis: (inv_freq float64 (d_a // 2,), attention_factor: a float or (d_a // 2,) float64) from
        `rope_frequencies`."""
        seq_lens = seq_lens or (None,) * self.n_axes
        return [
            rope_frequencies(*args) for args in zip(self.axes_dims, self.thetas, self.scalings, seq_lens, strict=True)
        ]

    def forward(self, coords: torch.Tensor, seq_lens: Sequence[int | None] | None = None) -> Table:
        """coords (..., seq, n_axes) -> cos, sin (..., seq, rotary_dim // 2), float32.

        seq_lens: per-axis current length for "dynamic" scaling; when None it is read
        from the coordinates (max + 1), which syncs with the device.
        """
        check_coords(coords, self.n_axes)
        return self._cached(("coords",), lambda: self._compute(coords, seq_lens), seq_lens, anchor=coords)

    def for_grid(
        self,
        *sizes: int,
        offset: float | Sequence[float] | None = None,
        scale: float | Sequence[float] | None = None,
        device: torch.device | str | None = None,
    ) -> Table:
        """The table of `grid_coords(*sizes, offset=offset, scale=scale)`: (prod(sizes), rotary_dim // 2).

        Cached by value, so a model that asks for the same grid in every block and every
        step builds the table once.
        """
        if len(sizes) != self.n_axes:
            raise ValueError(f"expected {self.n_axes} grid sizes (one per axis), got {len(sizes)}: {sizes}")
        offsets = tuple(per_axis_values(offset, self.n_axes, "offset", 0.0))
        scales = tuple(per_axis_values(scale, self.n_axes, "scale", 1.0))
        device = torch.device(device or "cpu")
        _check_table_memory(math.prod(sizes), self.rotary_dim // 2, self.n_axes, device, f"for_grid{tuple(sizes)}")
        build = lambda: self._compute(grid_coords(*sizes, offset=offsets, scale=scales, device=device), None)  # noqa: E731
        return self._cached(("grid", sizes, offsets, scales, device), build, None)

    def extra_repr(self) -> str:
        return f"axes_dims={self.axes_dims}, thetas={self.thetas}, scalings={self.scalings}"

    # -- internals -------------------------------------------------------------------------

    def _cached(self, head: tuple, compute: Callable[[], Table], seq_lens, anchor: torch.Tensor | None = None) -> Table:
        """compute()'s table, cached under `head`, the `anchor` tensor's key and the frequencies'
        settings; the anchor stays alive with the entry (its id cannot be reused meanwhile)."""
        # torch.compile traces straight through: the cache is Python state it must not see
        if torch.compiler.is_compiling():
            return compute()
        if anchor is not None:
            head = (*head, tensor_key(anchor), anchor.device)
        seq_lens = None if seq_lens is None else tuple(seq_lens)
        key: Hashable = (*head, self.axes_dims, self.thetas, self.scalings, seq_lens)
        return self._cache.get(key, compute, anchors=() if anchor is None else (anchor,))

    def _compute(self, coords: torch.Tensor, seq_lens) -> Table:
        return axial_cos_sin(coords, self.axes_dims, self.thetas, self.scalings, seq_lens)


def _device_memory(device: torch.device) -> int | None:
    """The bytes of memory `device` has in all (the machine's RAM for the CPU), or None where it cannot tell."""
    try:
        if device.type == "cuda":
            return torch.cuda.get_device_properties(device).total_memory
        if device.type == "cpu":
            return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError, RuntimeError):
        pass
    return None


def table_bytes(positions: int, pairs: int, n_axes: int) -> int:
    """Bytes a table of `positions` rows of `pairs` takes while it is built: the float64 coordinates and angles
    (and their cosine and sine), then cos and sin in float32."""
    return positions * (8 * n_axes + pairs * (8 * 3 + 4 * 2))


def _count(count: int) -> str:
    """A count as a short number ("1e+12"), also one too large for a float."""
    return f"{count:.3g}" if count.bit_length() < 1000 else f"2^{count.bit_length() - 1}"


def _gib(count: int) -> str:
    """A byte count in GiB, also one too large for a float."""
    return f"{count / 2**30:.4g} GiB" if count.bit_length() < 1000 else f"{_count(count)} bytes"


def _check_table_memory(positions: int, pairs: int, n_axes: int, device: torch.device, argument: str) -> None:
    """ValueError naming `argument` if building the table needs more memory than `device` has in all; checked
    before any of it is allocated (a table is prod(sizes) rows: the allocator would fail deep inside torch)."""
    total = None if torch.compiler.is_compiling() else _device_memory(device)
    needed = table_bytes(positions, pairs, n_axes)
    if total is not None and needed > total:
        raise ValueError(
            f"{argument}: a table of {_count(positions)} positions x {pairs} pairs needs about {_gib(needed)} to "
            f"build, more than the {_gib(total)} {device} has"
        )


class RotaryEmbedding(AxialRotaryEmbedding):
    """1D RoPE tables for text: the one-axis case of `AxialRotaryEmbedding`.

    Args:
        dim: rotary dimension (even).
        theta: the base.
        scaling: None, a transformers-format dict or a `RopeScaling`.

    forward(positions) with positions (..., seq), integer or float, any offset, returns
    cos, sin of shape (..., seq, dim // 2), float32, attention factor folded in.
    """

    def __init__(self, dim: int, theta: float = 10000.0, scaling: ScalingLike = None, cache_size: int = 16):
        super().__init__((check_rotary_dim(dim),), theta=theta, scaling=scaling, cache_size=cache_size)

    def forward(self, positions: torch.Tensor, seq_len: int | None = None) -> Table:
        """positions (..., seq) -> cos, sin (..., seq, dim // 2).

        seq_len: current length for "dynamic" scaling (None: max position + 1).
        """
        if not isinstance(positions, torch.Tensor):
            raise TypeError(f"positions must be a torch.Tensor, got {type(positions).__name__}")
        if positions.ndim < 1:
            raise ValueError("positions must have shape (..., seq), got a scalar")
        coords = positions.unsqueeze(-1)
        check_coords(coords, self.n_axes)
        seq_lens = None if seq_len is None else (seq_len,)
        return self._cached(("positions",), lambda: self._compute(coords, seq_lens), seq_lens, anchor=positions)

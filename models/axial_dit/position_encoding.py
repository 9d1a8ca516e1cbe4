"""Position settings of a DiT: the swappable RoPE config, the per-axis channel split, sin-cos.

`RopeConfig` holds everything about RoPE that sampling may change without touching
weights: per-axis theta and scaling, the attention entropy factor on the logits, and
the offset and spacing of the token grid. It is frozen and hashable; a user swaps it
(`model.rope_config = replace(model.rope_config, scaling=...)`) instead of editing it, and
an extrapolation method hands each forward its own (`extrapolation.py`), so every table
cache can key on its values.

`sincos_pos_embed` is the absolute baseline: per-axis 1D sin-cos embeddings, with the
grid squeezed onto the trained grid the way diffusers' `PatchEmbed` interpolates.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch
from diffusers.models.embeddings import get_1d_sincos_pos_embed_from_grid
from torch import nn

from axialrope import AxialRotaryEmbedding, grid_coords
from axialrope.coords import bundle_slides, per_axis_values
from axialrope.scaling import RopeScaling, as_rope_scaling
from axialrope.validation import is_int, is_real


def _number_or_tuple(value, name: str):
    """A real number stays a float; a sequence becomes a tuple of floats (one per axis)."""
    if value is None:
        return None
    if is_real(value):
        return float(value)
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence) or len(value) == 0:
        raise TypeError(f"{name} must be a number or a sequence of numbers (one per axis), got {value!r}")
    for v in value:
        if not is_real(v):
            raise TypeError(f"{name} entries must be real numbers, got {v!r}")
    return tuple(float(v) for v in value)


@dataclass(frozen=True)
class RopeConfig:
    """The RoPE settings a pipeline may swap between sampling steps.

    Attributes:
        theta: one base for all axes, or one per axis (axis order (t, y, x) or (y, x)).
        scaling: None, a `RopeScaling` or a transformers-format dict for all axes, or a
            tuple with one of those per axis (dicts are converted to `RopeScaling`).
        attention_scale: multiplies every attention logit (entropy scaling,
            sqrt(log N_eval / log N_train)); 1.0 is plain attention.
        offset: coordinate of the first grid cell, a finite number or one per axis (default 0).
        scale: spacing of grid cells, a finite non-zero number or one per axis (default 1; 0.5
            packs a grid twice the trained size onto the trained positions).
        bundle_size, bundled_axes: SPA's position bundles: with bundle_size N > 1 the grid's positions on
            `bundled_axes` are bundled N to a bundle, one table per slide of the bundles
            (`GridRope.variant_tables`), and attention averages its outputs over them; 1: as they are.

    Hashable, so it can be part of a cache key; per-axis counts are checked by the model.
    """

    theta: float | tuple[float, ...] = 10000.0
    scaling: RopeScaling | tuple[RopeScaling | None, ...] | None = None
    attention_scale: float = 1.0
    offset: float | tuple[float, ...] | None = None
    scale: float | tuple[float, ...] | None = None
    bundle_size: int = 1
    bundled_axes: tuple[int, ...] = ()

    def __post_init__(self):
        object.__setattr__(self, "theta", _number_or_tuple(self.theta, "theta"))
        if self.theta is None:
            raise TypeError("theta must be a number or one number per axis, got None")
        if isinstance(self.scaling, (list, tuple)):
            scaling = tuple(as_rope_scaling(s) for s in self.scaling)
        else:
            scaling = as_rope_scaling(self.scaling)
        object.__setattr__(self, "scaling", scaling)
        attention_scale = self.attention_scale
        if not is_real(attention_scale):
            raise TypeError(f"attention_scale must be a real number, got {attention_scale!r}")
        if not (math.isfinite(attention_scale) and attention_scale > 0):
            raise ValueError(f"attention_scale must be a finite number > 0, got {attention_scale}")
        object.__setattr__(self, "attention_scale", float(attention_scale))
        object.__setattr__(self, "offset", _number_or_tuple(self.offset, "offset"))
        object.__setattr__(self, "scale", _number_or_tuple(self.scale, "scale"))
        for name in ("offset", "scale"):
            values = getattr(self, name)
            values = () if values is None else values if isinstance(values, tuple) else (values,)
            if not all(math.isfinite(v) for v in values):
                raise ValueError(f"{name} must be finite (one number, or one per axis), got {getattr(self, name)!r}")
        if self.scale is not None and 0.0 in (self.scale if isinstance(self.scale, tuple) else (self.scale,)):
            raise ValueError(
                f"scale must be non-zero (the spacing of grid cells: 0 puts every cell on one position), "
                f"got {self.scale!r}"
            )
        if not is_int(self.bundle_size) or self.bundle_size < 1:
            raise ValueError(f"bundle_size must be a positive integer (1: no bundles), got {self.bundle_size!r}")
        axes = self.bundled_axes
        if (
            isinstance(axes, (str, bytes))
            or not isinstance(axes, Sequence)
            or any(not is_int(a) or a < 0 for a in axes)
        ):
            raise ValueError(f"bundled_axes must be a sequence of axis indices, got {axes!r}")
        object.__setattr__(self, "bundled_axes", tuple(int(a) for a in axes))
        if self.bundle_size > 1 and not self.bundled_axes:
            raise ValueError(
                f"bundle_size {self.bundle_size} needs bundled_axes (the axes whose positions are bundled)"
            )


class GridRope(nn.Module):
    """Axial RoPE tables for token grids under a swappable `RopeConfig`.

    Args:
        axes_dims: rotary channels per axis of a head, e.g. (16, 24, 24) for (t, y, x).
        config: the initial `RopeConfig`.
        head_dim: if given, checked to hold sum(axes_dims).

    Assigning `grid_rope.config = new_config` re-derives the per-axis frequencies (a few
    dozen float64 numbers) and leaves weights alone; the tables of `table` are cached by
    `AxialRotaryEmbedding.for_grid`, whose key holds theta, scaling, offset, spacing and device.
    `table(..., config=...)` uses another config for one call without assigning it.
    """

    _CALL_EMBEDDINGS = 8  # frequency sets kept for configs passed to `table` (a timestep-dependent method: one a step)

    def __init__(self, axes_dims: Sequence[int], config: RopeConfig | None = None, head_dim: int | None = None):
        super().__init__()
        config = RopeConfig() if config is None else config
        self.embedding = AxialRotaryEmbedding(axes_dims, theta=config.theta, scaling=config.scaling, head_dim=head_dim)
        self._config = None
        self.config = config
        self._call_embeddings: dict = {}  # (theta, scaling) -> AxialRotaryEmbedding, for `table(config=...)`

    @property
    def n_axes(self) -> int:
        return self.embedding.n_axes

    @property
    def config(self) -> RopeConfig:
        return self._config

    @config.setter
    def config(self, config: RopeConfig) -> None:
        # atomic: every check runs before anything changes (set_frequencies is atomic itself),
        # so a refused config leaves the tables and `config` as they were
        if not isinstance(config, RopeConfig):
            raise TypeError(f"rope config must be a RopeConfig, got {type(config).__name__}")
        per_axis_values(config.offset, self.n_axes, "offset", 0.0)  # raises unless one per axis
        per_axis_values(config.scale, self.n_axes, "scale", 1.0)
        self.embedding.set_frequencies(config.theta, config.scaling)  # validates the per-axis counts
        self._config = config

    def table(
        self,
        grid: Sequence[int],
        num_text_tokens: int = 0,
        device: torch.device | str | None = None,
        config: RopeConfig | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """(cos, sin), each (num_text_tokens + prod(grid), rotary_dim // 2) float32, under `config`
        (default: the module's own; another one is checked as assigning it would be, and leaves `config` be).

        Grid cell i on axis a sits at offset[a] + scale[a] * i. Text tokens come first and
        form a 1D run along the first axis that ends where the grid starts: the coordinates
        of `axialrope.text_and_grid_coords(n, grid, text="before")` for the grid at offset 0,
        all moved by the offset, so that shifting the grid shifts the text with it. The
        text part is a second (n, 1, ...) grid, so both parts are cached by value.
        """
        config = self.config if config is None else config
        embedding = self._embedding_for(config)
        cos, sin = embedding.for_grid(*grid, offset=config.offset, scale=config.scale, device=device)
        if num_text_tokens == 0:
            return cos, sin
        offsets = per_axis_values(config.offset, self.n_axes, "offset", 0.0)
        first_scale = per_axis_values(config.scale, self.n_axes, "scale", 1.0)[0]
        first_axis_min = offsets[0] + min(0.0, first_scale * (grid[0] - 1))
        text_offset = (first_axis_min - num_text_tokens, *offsets[1:])
        ones = (1,) * (self.n_axes - 1)
        text_cos, text_sin = embedding.for_grid(num_text_tokens, *ones, offset=text_offset, device=device)
        return torch.cat((text_cos, cos)), torch.cat((text_sin, sin))

    def variant_tables(
        self,
        grid: Sequence[int],
        num_text_tokens: int = 0,
        device: torch.device | str | None = None,
        config: RopeConfig | None = None,
    ) -> list[tuple[torch.Tensor, torch.Tensor]]:
        """SPA's tables: one (cos, sin) as `table` gives per slide of `config`'s position bundles
        (`axialrope.coords.bundle_slides`), the text tokens' rows as `table` has them (text keeps its own
        positions); [table(...)] where config.bundle_size is 1."""
        config = self.config if config is None else config
        base = self.table(grid, num_text_tokens, device, config)
        if config.bundle_size == 1:
            return [base]
        if any(a >= self.n_axes for a in config.bundled_axes):
            raise ValueError(f"bundled_axes {config.bundled_axes} are not all axes of this {self.n_axes}-axis rope")
        embedding = self._embedding_for(config)
        tables = []
        for first in bundle_slides(len(config.bundled_axes), config.bundle_size):
            cos, sin = embedding.for_bundled_grid(
                *grid,
                bundled_axes=config.bundled_axes,
                first=first,
                size=config.bundle_size,
                offset=config.offset,
                scale=config.scale,
                device=device,
            )
            if num_text_tokens:
                cos, sin = torch.cat((base[0][:num_text_tokens], cos)), torch.cat((base[1][:num_text_tokens], sin))
            tables.append((cos, sin))
        return tables

    def _embedding_for(self, config: RopeConfig) -> AxialRotaryEmbedding:
        """The frequencies of `config`: the module's own where theta and scaling are its config's, else a
        set of their own, built as assigning `config` would set them (so the same tables, to the bit), and
        kept for the next call with the same theta and scaling. Nothing of the module's own changes."""
        own = self._config
        if config is own:
            return self.embedding
        if not isinstance(config, RopeConfig):
            raise TypeError(f"rope config must be a RopeConfig, got {type(config).__name__}")
        if config.theta == own.theta and config.scaling == own.scaling:
            return self.embedding
        key = (config.theta, config.scaling)
        embedding = self._call_embeddings.get(key)
        if embedding is None:  # checks theta and scaling per axis as `set_frequencies` does
            embedding = AxialRotaryEmbedding(self.embedding.axes_dims, theta=config.theta, scaling=config.scaling)
            if len(self._call_embeddings) >= self._CALL_EMBEDDINGS:
                self._call_embeddings = {}
            self._call_embeddings[key] = embedding
        return embedding

    def extra_repr(self) -> str:
        return f"config={self.config}"


def split_axes(dim: int, n_axes: int) -> tuple[int, ...]:
    """Splits `dim` channels into even per-axis blocks that sum to `dim`.

    Images (y, x): two near-equal halves. Video (t, y, x): each spatial axis gets about
    3/8 and time the rest (about 1/4), the split of Lumina-Next / CogVideoX style 3D RoPE.
    One split serves the rotary channels of a head and the sin-cos channels of the width,
    so both encodings give each axis the same share.

    >>> split_axes(64, 3), split_axes(72, 3), split_axes(64, 2)
    ((16, 24, 24), (20, 26, 26), (32, 32))
    """
    if not is_int(dim) or dim <= 0 or dim % 2:
        raise ValueError(f"dim must be a positive even integer to split into axes, got {dim!r}")
    if n_axes == 1:
        return (dim,)
    if n_axes == 2:
        y = 2 * (dim // 4)
        return (y, dim - y)
    if n_axes == 3:
        spatial = 2 * ((3 * dim) // 16)
        if spatial == 0 or dim - 2 * spatial == 0:
            raise ValueError(f"dim={dim} is too small to give each of 3 axes a rotated pair")
        return (dim - 2 * spatial, spatial, spatial)
    raise ValueError(f"n_axes must be 1, 2 or 3, got {n_axes}")


def sincos_pos_embed(
    grid: Sequence[int],
    base_grid: Sequence[int],
    axes_dims: Sequence[int],
    interpolation_scale: float = 1.0,
    device: torch.device | str | None = None,
) -> torch.Tensor:
    """Absolute sin-cos embedding of a (y, x) or (t, y, x) token grid, (prod(grid), sum(axes_dims)) float32.

    Axis a's coordinate of cell i is i * (base_grid[a] / grid[a]) / interpolation_scale,
    so any grid spans the trained range [0, base_grid[a]) (diffusers' `PatchEmbed` rule,
    applied per axis). Axis a fills its own block of axes_dims[a] channels with diffusers'
    1D embedding [sin, cos]. Rows follow the row-major order of `grid_coords`.

    Cached by value; callers must not modify the result in place.
    """
    if len(grid) != len(base_grid) or len(grid) != len(axes_dims):
        raise ValueError(
            f"grid {tuple(grid)}, base_grid {tuple(base_grid)} and axes_dims {tuple(axes_dims)} "
            "must have one entry per axis"
        )
    args = (tuple(grid), tuple(base_grid), tuple(axes_dims), float(interpolation_scale), torch.device(device or "cpu"))
    # the cache is Python state that torch.compile must not trace into
    if torch.compiler.is_compiling():
        return _sincos_table.__wrapped__(*args)
    return _sincos_table(*args)


@functools.lru_cache(maxsize=16)
def _sincos_table(grid, base_grid, axes_dims, interpolation_scale, device) -> torch.Tensor:
    spacing = [b / n / interpolation_scale for n, b in zip(grid, base_grid, strict=True)]
    coords = grid_coords(*grid, scale=spacing, device=device)  # (seq, n_axes), float64
    blocks = [get_1d_sincos_pos_embed_from_grid(d, coords[:, a], output_type="pt") for a, d in enumerate(axes_dims)]
    return torch.cat(blocks, dim=-1).float()  # (seq, sum(axes_dims))


__all__ = ["GridRope", "RopeConfig", "sincos_pos_embed", "split_axes"]

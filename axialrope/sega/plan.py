"""SEGA's part of `Extrapolation.plan`: its options checked, and its per-axis scalings for one grid and one spectrum.

With s_a = max(1, L_a / L_a_train) on each spatial axis (both axes of an (h, w) grid; the two besides
`temporal_axis` of a (t, h, w) grid, whose time axis stays as trained) and s = max over them:
every spatial axis gets NTK's base theta * s^(d/(d-2)) once s > 1 (one scale for both, as the authors'
code has it), and its pairs the magnitudes of `axialrope.sega.spectrum` with m_ref from the axis's own s_a (an axis
not beyond its trained length keeps a gain of 1).
"""

from __future__ import annotations

import math

from ..scaling import RopeScaling
from ..validation import is_real
from .spectrum import SEGA_REFERENCES, SegaSpectrum, reference_magnitude


def check_sega_options(extrapolation) -> None:
    """ValueError (TypeError for a wrong type) naming the option unless SEGA's options of `extrapolation` are
    valid; normalises sega_spread to a tuple of two floats."""
    for name in ("sega_alpha", "sega_beta", "sega_floor", "sega_spread_exponent"):
        value = getattr(extrapolation, name)
        if not is_real(value) or not math.isfinite(value) or value < 0:
            raise ValueError(f"{name} must be a finite non-negative number, got {value!r}")
    if not extrapolation.sega_spread_exponent > 0:
        raise ValueError(f"sega_spread_exponent must be > 0, got {extrapolation.sega_spread_exponent!r}")
    spread = extrapolation.sega_spread
    values = tuple(spread) if isinstance(spread, (tuple, list)) else None
    if values is None or len(values) != 2 or any(not is_real(v) or not math.isfinite(v) for v in values):
        raise ValueError(f"sega_spread must be two finite numbers (low, high), got {spread!r}")
    if not 0 <= values[0] <= values[1]:
        raise ValueError(f"sega_spread must have 0 <= low <= high, got {spread!r}")
    object.__setattr__(extrapolation, "sega_spread", tuple(float(v) for v in values))
    if extrapolation.sega_reference not in SEGA_REFERENCES:
        raise ValueError(f"sega_reference must be one of {SEGA_REFERENCES}, got {extrapolation.sega_reference!r}")
    kappa = extrapolation.sega_kappa
    if kappa is not None and (not is_real(kappa) or not math.isfinite(kappa) or kappa < 0):
        raise ValueError(f"sega_kappa must be a finite non-negative number or None, got {kappa!r}")


def spatial_axes(n_axes: int, temporal_axis: int) -> tuple[int, ...]:
    """The axes SEGA acts on: both of an (h, w) grid, the two besides `temporal_axis` of a (t, h, w) one."""
    if n_axes == 2:
        return (0, 1)
    if n_axes == 3 and 0 <= temporal_axis < 3:
        return tuple(a for a in range(3) if a != temporal_axis)
    raise ValueError(
        f"sega needs an (h, w) grid or a (t, h, w) grid with temporal_axis in range, got {n_axes} axes and "
        f"temporal_axis={temporal_axis}"
    )


def sega_scalings(
    extrapolation, factors: list[float], spectrum: SegaSpectrum | None
) -> tuple[list[RopeScaling | None], list[float]]:
    """(one `RopeScaling` or None per axis, the per-axis factors: s_a on the spatial axes, 1 elsewhere) for the
    per-axis ratios `factors` (s_a) and the latent's `spectrum` (None: m_ref for every pair)."""
    axes = spatial_axes(len(factors), extrapolation.temporal_axis)
    if spectrum is not None and not isinstance(spectrum, SegaSpectrum):
        raise TypeError(f"spectrum must be an axialrope.sega.SegaSpectrum or None, got {type(spectrum).__name__}")
    if spectrum is not None and len(spectrum.profiles) != len(axes):
        raise ValueError(f"spectrum has {len(spectrum.profiles)} profiles for the grid's {len(axes)} spatial axes")
    scalings: list[RopeScaling | None] = [None] * len(factors)
    kept = [factors[a] if a in axes else 1.0 for a in range(len(factors))]
    scale = max(factors[a] for a in axes)
    if scale <= 1:
        return scalings, kept
    for k, a in enumerate(axes):
        scalings[a] = RopeScaling(
            "sega",
            factor=scale,
            sega_profile=None if spectrum is None else spectrum.profiles[k],
            sega_reference=reference_magnitude(factors[a], extrapolation.sega_reference, extrapolation.sega_kappa),
            sega_spread=0.0 if spectrum is None else spectrum.spread,
            sega_alpha=extrapolation.sega_alpha,
            sega_beta=extrapolation.sega_beta,
            sega_floor=extrapolation.sega_floor,
        )
    return scalings, kept


__all__ = ["check_sega_options", "sega_scalings", "spatial_axes"]

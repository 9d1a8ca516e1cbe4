"""Bands: which extrapolation method `auto` uses for a requested token grid, by its scale and aspect.

A band is {"up_to_scale": float | None, "method": str, "entropy_scaling": bool}, optionally with
"measured": str (a note on how the choice was measured), "aspect": float (h / w of the size it was
calibrated at; absent: any aspect) and "options": {name: value} (`Extrapolation` fields, e.g.
{"beta_fast": 16.0}; absent or {}: the method's defaults). A list of bands is what a pipeline
records as its `default_extrapolation` (model_index.json) and what a calibration.json records
(`calibration_file.py`); `select_extrapolation` is the one rule that picks from it, for the
project's own pipeline and for `apply_extrapolation(..., "auto", calibration=...)` alike:

- scale: the largest ratio over the axes of the requested to the trained grid (`extrapolation_scale`);
  at or below 1 the grid is the trained encoding ("none");
- aspect: h / w of the requested grid (its last two axes); if any band has an aspect, the candidates
  are the bands whose aspect is nearest, by |log(band aspect / requested aspect)|, and the bands
  without an aspect (which match any aspect);
- the first candidate, by up_to_scale (None last), whose up_to_scale >= scale; the last candidate
  if the scale is beyond all of them.

Within each aspect (the bands without one being a group of their own) the bands are sorted by
up_to_scale, which increases, and only the last may be None ("and beyond").

    bands = check_default_extrapolation([{"up_to_scale": 2.0, "method": "pi", "entropy_scaling": True},
                                         {"up_to_scale": None, "method": "dype-yarn", "entropy_scaling": False}])
    select_extrapolation(bands, (8, 8), (16, 16))   # Extrapolation("pi", entropy_scaling=True): scale 2
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from axialrope import Extrapolation
from axialrope.validation import is_real

BAND_KEYS = ("up_to_scale", "method", "entropy_scaling")  # every band has these
# measured: free text, how the band's choice was measured; aspect: h / w it was calibrated at; options:
# Extrapolation fields of the method
OPTIONAL_BAND_KEYS = ("measured", "aspect", "options")
NO_ASPECT = "any"  # the group of the bands without an aspect


def check_default_extrapolation(bands, video: bool | None = None) -> list[dict] | None:
    """`bands`, a `default_extrapolation`, checked; returned as a fresh list of fresh dicts (None stays None).

    A list of bands (module docstring): each {"up_to_scale": float, "method": str, "entropy_scaling": bool},
    optionally with "measured" (a note, kept), "aspect" (h / w, positive) and "options" (Extrapolation
    fields). Within each aspect up_to_scale is positive and increasing, and only the aspect's last band
    may have None: "and beyond". `video=False` (an image model) also refuses riflex, a method for video only.
    TypeError when `bands` is not a list; ValueError naming the band for anything else.
    """
    if bands is None:
        return None
    if not isinstance(bands, (list, tuple)):
        raise TypeError(
            f"default_extrapolation must be a list of bands "
            f"({{'up_to_scale': ..., 'method': ..., 'entropy_scaling': ...}}) or None, "
            f"got {type(bands).__name__}"
        )
    groups = [_aspect_group(band) for band in bands]
    checked, previous = [], {}
    for index, band in enumerate(bands):
        group = groups[index]
        last = group not in groups[index + 1 :]  # the last band of its aspect
        checked.append(_check_band(band, index, last, previous.get(group, 0.0), video))
        previous[group] = checked[-1]["up_to_scale"]
    return checked


def _aspect_group(band) -> object:
    """The aspect a band belongs to (`NO_ASPECT` without one; a malformed band is its own check's)."""
    aspect = band.get("aspect") if isinstance(band, dict) else None
    return NO_ASPECT if aspect is None else aspect


def _check_band(band, index: int, last: bool, previous: float, video: bool | None) -> dict:
    """One band of a `default_extrapolation`, checked (up_to_scale above `previous`, the band before it
    of the same aspect; `last`: no later band has its aspect); a copy."""

    def bad(problem: str) -> ValueError:
        return ValueError(f"default_extrapolation band {index} {band!r}: {problem}")

    if not isinstance(band, dict):
        raise bad(f"a band must be a dict with keys {', '.join(BAND_KEYS)}")
    missing = [key for key in BAND_KEYS if key not in band]
    unknown = [key for key in band if key not in BAND_KEYS + OPTIONAL_BAND_KEYS]
    if missing or unknown:
        problem = f"missing {', '.join(missing)}" if missing else f"unknown key(s) {', '.join(map(repr, unknown))}"
        raise bad(f"{problem}; a band has keys {', '.join(BAND_KEYS)} (and optionally {', '.join(OPTIONAL_BAND_KEYS)})")
    aspect = band.get("aspect")
    if aspect is not None and (not is_real(aspect) or not math.isfinite(aspect) or aspect <= 0):
        raise bad(f"aspect must be a positive number (h / w of the calibrated size), got {aspect!r}")
    of_aspect = "" if aspect is None else " of its aspect"
    scale = band["up_to_scale"]
    if scale is None:
        if not last:  # a band after an open one could never be chosen
            raise bad(f'up_to_scale null ("and beyond") is only allowed on the last band{of_aspect}')
    elif not is_real(scale) or not math.isfinite(scale) or scale <= 0:
        raise bad(f"up_to_scale must be a positive number (or null on the last band{of_aspect}), got {scale!r}")
    elif scale <= previous:
        raise bad(f"up_to_scale must increase from band to band{of_aspect}, got {scale!r} after {previous!r}")
    method, entropy_scaling = band["method"], band["entropy_scaling"]
    if not isinstance(method, str):
        raise bad(f"method must be a method name, got {method!r}")
    if not isinstance(entropy_scaling, bool):
        raise bad(f"entropy_scaling must be true or false, got {entropy_scaling!r}")
    if "measured" in band and not isinstance(band["measured"], str):
        raise bad(f"measured must be a string (a note), got {band['measured']!r}")
    options = band.get("options")
    if options is not None:
        if not isinstance(options, Mapping) or not all(isinstance(key, str) for key in options):
            raise bad(f"options must be a dict of Extrapolation fields (e.g. {{'beta_fast': 16.0}}), got {options!r}")
        if "method" in options or "entropy_scaling" in options:
            raise bad("options must not repeat method or entropy_scaling, the band's own keys")
    try:
        band_extrapolation(band)  # the method names and options axialrope knows
    except (ValueError, TypeError) as error:
        raise bad(str(error)) from None
    if video is False and method == "riflex":
        raise bad("riflex extrapolates video length; this is an image model")
    checked = {**band, "up_to_scale": None if scale is None else float(scale)}
    if aspect is not None:
        checked["aspect"] = float(aspect)
    if options is not None:
        checked["options"] = dict(options)
    return checked


def band_extrapolation(band: Mapping) -> Extrapolation:
    """The `Extrapolation` a band names: its method, entropy_scaling and options."""
    return Extrapolation.from_name(
        band["method"], **{**(band.get("options") or {}), "entropy_scaling": band["entropy_scaling"]}
    )


def extrapolation_scale(train_grid: Sequence[int], grid: Sequence[int]) -> float:
    """How far `grid` goes beyond `train_grid` (token grids): the largest ratio over the axes."""
    return max(n / t for t, n in zip(train_grid, grid, strict=True))


def grid_aspect(grid: Sequence[int]) -> float | None:
    """h / w of a token grid (h, w) or (t, h, w): its last two axes (None for a grid of one axis)."""
    return grid[-2] / grid[-1] if len(grid) >= 2 else None


def choose_band(bands: Sequence[dict], scale: float, aspect: float | None = None) -> dict:
    """The band of checked `bands` (non-empty) for `scale` and `aspect` (h / w; None: the bands' aspects
    are not looked at), by the rule of the module docstring; the band itself (not a copy)."""
    candidates = list(bands)
    aspects = [band["aspect"] for band in bands if band.get("aspect") is not None]
    if aspect is not None and aspects:
        nearest = min(aspects, key=lambda a: abs(math.log(a / aspect)))  # the first of equally near ones
        candidates = [band for band in bands if band.get("aspect") in (None, nearest)]
    # by up_to_scale, None last; stable, so bands of one aspect keep their order
    candidates.sort(key=lambda band: math.inf if band["up_to_scale"] is None else band["up_to_scale"])
    for band in candidates:
        if band["up_to_scale"] is None or scale <= band["up_to_scale"]:
            return band
    return candidates[-1]


def band_for_scale(bands: Sequence[dict], scale: float) -> dict:
    """The band of checked `bands` that covers `scale`, whatever its aspect (`choose_band` without one):
    the first with up_to_scale >= scale (None: no limit), the last band if `scale` is beyond every one."""
    return choose_band(bands, scale)


def select_extrapolation(bands: Sequence[dict], trained_grid: Sequence[int], grid: Sequence[int]) -> Extrapolation:
    """The `Extrapolation` that `auto` uses for the token `grid` of a model trained at `trained_grid` (both
    (h, w) or (t, h, w)): "none" at or inside the trained scale, else the band `choose_band` picks by the
    grid's scale and aspect, as `band_extrapolation`."""
    scale = extrapolation_scale(trained_grid, grid)
    if scale <= 1:
        return Extrapolation("none")
    return band_extrapolation(choose_band(bands, scale, grid_aspect(grid)))


__all__ = [
    "BAND_KEYS",
    "OPTIONAL_BAND_KEYS",
    "band_extrapolation",
    "band_for_scale",
    "check_default_extrapolation",
    "choose_band",
    "extrapolation_scale",
    "grid_aspect",
    "select_extrapolation",
]

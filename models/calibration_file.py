"""A calibration.json read back: the bands `auto` picks from, and the trained grid they are relative to.

`axialrope calibrate` writes OUT/calibration.json; its top level has

    "kind": "axialrope-calibration", "version": 1,
    "reference": "self" | "real",
    "trained_grid": [h, w] or [t, h, w],        token grid the bands are relative to
    "default_extrapolation": [band, ...],       `extrapolation_bands.py`'s format
    "family": "flux", ...                       optional: the diffusers family it was measured on

and whatever else its producer records (cells, settings, prompts), which is not read here.

    calibration = read_calibration("out/calibration.json")     # or the parsed dict
    calibration.trained_grid, calibration.bands
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from axialrope.validation import is_int

from .extrapolation_bands import check_default_extrapolation

CALIBRATION_KIND = "axialrope-calibration"
CALIBRATION_VERSIONS = (1,)


@dataclass(frozen=True)
class Calibration:
    """What `auto` reads of a calibration.

    Attributes:
        source: the file's path, or "the calibration dict" where a dict was given (for messages).
        trained_grid: the token grid (h, w) or (t, h, w) the bands are relative to.
        bands: the checked bands (`extrapolation_bands.check_default_extrapolation`), at least one.
        family: the diffusers family's name it was measured on, or None where it records none.
    """

    source: str
    trained_grid: tuple[int, ...]
    bands: tuple[dict, ...]
    family: str | None = None


def read_calibration(calibration, video: bool | None = None) -> Calibration:
    """A calibration.json (a path) or its parsed content (a dict), checked.

    `video=False` refuses riflex bands (an image model). ValueError naming the file for a missing or
    unreadable file, bad JSON, a file that is not a calibration (its "kind"), an unknown version, a bad
    trained_grid, or bad or no bands; TypeError for an argument that is neither a path nor a dict.
    """
    if isinstance(calibration, Mapping):
        source, content = "the calibration dict", calibration
    elif isinstance(calibration, (str, Path)):
        source = str(calibration)
        try:
            text = Path(calibration).read_text()
        except FileNotFoundError:
            raise ValueError(
                f"calibration {source!r}: no such file (axialrope calibrate writes OUT/calibration.json)"
            ) from None
        except OSError as error:
            raise ValueError(f"calibration {source!r}: cannot be read: {error.strerror or error}") from error
        try:
            content = json.loads(text)
        except ValueError as error:
            raise ValueError(f"calibration {source!r}: not valid JSON ({error})") from None
        source = repr(source)
    else:
        raise TypeError(
            "calibration must be the path of a calibration.json or its content (a dict), "
            f"got {type(calibration).__name__}"
        )

    def bad(problem: str) -> ValueError:
        return ValueError(f"calibration {source}: {problem}")

    if not isinstance(content, Mapping) or content.get("kind") != CALIBRATION_KIND:
        kind = content.get("kind") if isinstance(content, Mapping) else type(content).__name__
        raise bad(f'not a calibration: its "kind" is {kind!r}, a calibration\'s is {CALIBRATION_KIND!r}')
    if content.get("version") not in CALIBRATION_VERSIONS:
        raise bad(f"version {content.get('version')!r} is not one this axialrope reads ({CALIBRATION_VERSIONS})")
    grid = content.get("trained_grid")
    if (
        not isinstance(grid, (list, tuple))
        or len(grid) not in (2, 3)
        or any(isinstance(n, bool) or not is_int(n) or n <= 0 for n in grid)
    ):
        raise bad(f"trained_grid must be [h, w] or [t, h, w] token counts, got {grid!r}")
    family = content.get("family")
    if family is not None and not isinstance(family, str):
        raise bad(f"family must be a family's name, got {family!r}")
    try:
        bands = check_default_extrapolation(content.get("default_extrapolation"), video)
    except (ValueError, TypeError) as error:
        raise bad(str(error)) from None
    if not bands:
        raise bad("its default_extrapolation holds no band")
    return Calibration(source, tuple(int(n) for n in grid), tuple(bands), family)


__all__ = ["CALIBRATION_KIND", "Calibration", "read_calibration"]

"""A pipeline's `default_extrapolation`: which method `extrapolation="auto"` samples each scale with.

The bands are a list sorted by scale, each {"up_to_scale": float, "method": str,
"entropy_scaling": bool}, optionally with "measured": str (how the choice was measured);
the last band's up_to_scale may be None ("and beyond"). The scale of a requested grid is
its largest ratio, over the axes, to the trained token grid. A pipeline keeps the bands in
its model_index.json, where benchmarks/extrapolation.py records them for the bundled
models and a user may edit them.

    bands = check_default_extrapolation([{"up_to_scale": 2.0, "method": "pi", "entropy_scaling": True},
                                         {"up_to_scale": None, "method": "dype-yarn", "entropy_scaling": False}])
    band_for_scale(bands, extrapolation_scale((8, 8), (16, 16)))   # the first band: scale 2
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

from axialrope import Extrapolation
from axialrope.validation import is_real

from ..paths import check_output_folder, fsync_path

# What `extrapolation="auto"` uses for a pipeline that records no `default_extrapolation` (None or []):
# the "fallback" bands that benchmarks/extrapolation.py writes to benchmarks/results/extrapolation_defaults.json,
# the method with the smallest worst-case ratio to each kind's best over the three kinds of data it measures
# (shapes, textures, photographs; docs/extrapolation.md, "The default: auto");
# tests/pipelines/dit/test_default_extrapolation.py checks that the two agree.
FALLBACK_EXTRAPOLATION = [
    {"up_to_scale": 1.75, "method": "kappa-yarn", "entropy_scaling": True},
    {"up_to_scale": 2.5, "method": "kappa-pi", "entropy_scaling": True},
    {"up_to_scale": None, "method": "dype-yarn", "entropy_scaling": False},
]
BAND_KEYS = ("up_to_scale", "method", "entropy_scaling")  # every band has these
OPTIONAL_BAND_KEYS = ("measured",)  # free text: how the band's choice was measured


def check_default_extrapolation(bands, video: bool | None = None) -> list[dict] | None:
    """`bands`, a `default_extrapolation`, checked; returned as a fresh list of fresh dicts (None stays None).

    A list of bands sorted by scale, each {"up_to_scale": float, "method": str, "entropy_scaling": bool},
    optionally with "measured": str (a note, kept). up_to_scale is positive and increasing; the last band's
    may be None: "and beyond". `video=False` (an image model) also refuses riflex, a method for video only.
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
    checked, previous = [], 0.0
    for index, band in enumerate(bands):
        checked.append(_check_band(band, index, index == len(bands) - 1, previous, video))
        previous = checked[-1]["up_to_scale"]
    return checked


def _check_band(band, index: int, last: bool, previous: float, video: bool | None) -> dict:
    """One band of a `default_extrapolation`, checked (up_to_scale above `previous`); a copy."""

    def bad(problem: str) -> ValueError:
        return ValueError(f"default_extrapolation band {index} {band!r}: {problem}")

    if not isinstance(band, dict):
        raise bad(f"a band must be a dict with keys {', '.join(BAND_KEYS)}")
    missing = [key for key in BAND_KEYS if key not in band]
    unknown = [key for key in band if key not in BAND_KEYS + OPTIONAL_BAND_KEYS]
    if missing or unknown:
        problem = f"missing {', '.join(missing)}" if missing else f"unknown key(s) {', '.join(map(repr, unknown))}"
        raise bad(f"{problem}; a band has keys {', '.join(BAND_KEYS)} (and optionally {', '.join(OPTIONAL_BAND_KEYS)})")
    scale = band["up_to_scale"]
    if scale is None:
        if not last:  # a band after an open one could never be chosen
            raise bad('up_to_scale null ("and beyond") is only allowed on the last band')
    elif not is_real(scale) or not math.isfinite(scale) or scale <= 0:
        raise bad(f"up_to_scale must be a positive number (or null on the last band), got {scale!r}")
    elif scale <= previous:
        raise bad(f"up_to_scale must increase from band to band, got {scale!r} after {previous!r}")
    method, entropy_scaling = band["method"], band["entropy_scaling"]
    if not isinstance(method, str):
        raise bad(f"method must be a method name, got {method!r}")
    if not isinstance(entropy_scaling, bool):
        raise bad(f"entropy_scaling must be true or false, got {entropy_scaling!r}")
    if "measured" in band and not isinstance(band["measured"], str):
        raise bad(f"measured must be a string (a note), got {band['measured']!r}")
    try:
        Extrapolation(method, entropy_scaling=entropy_scaling)  # the method names axialrope knows
    except ValueError as error:
        raise bad(str(error)) from None
    if video is False and method == "riflex":
        raise bad("riflex extrapolates video length; this is an image model")
    return {**band, "up_to_scale": None if scale is None else float(scale)}


def write_default_extrapolation(folder: str | Path, bands: list[dict] | None) -> Path:
    """Record `bands` (checked) as the `default_extrapolation` in a pipeline folder's model_index.json, atomically;
    the rest of the file is kept. Returns the file's path."""
    return write_default_extrapolations([folder], bands)[0]


def carried_default_extrapolation(folder: str | Path, report: Callable[[str], None] = print) -> list[dict] | None:
    """The `default_extrapolation` a run's pipeline-config/ (`folder`) records, for the pipeline-config a resume
    writes afresh: a calibration of the run stays its default across resumes, and a line says so (None: none
    recorded, nothing said)."""
    try:
        bands = json.loads((Path(folder) / "model_index.json").read_text()).get("default_extrapolation")
        bands = check_default_extrapolation(bands)
    except (OSError, ValueError, TypeError, AttributeError):
        return None
    if bands:
        report(
            f"resume: keeps the run's default_extrapolation ({len(bands)} band{'s' if len(bands) != 1 else ''} "
            "from its calibration; the weights trained from now on were not measured: run axialrope calibrate "
            "again, or train with --calibrate-scales, to measure them)"
        )
    return bands


def check_defaults_writable(folders: Sequence[str | Path], argument: str) -> None:
    """ValueError naming `argument` and the folder unless every folder's model_index.json can be rewritten (a file
    can be made beside it and it can be replaced): checked before a calibration's work, so that it never
    records its default in one folder and fails in the next."""
    for folder in folders:
        path = Path(folder) / "model_index.json"
        check_output_folder(folder, argument)  # a probe file: permissions, read-only file systems
        if path.exists() and not os.access(path, os.W_OK):
            raise ValueError(f"{argument}: {str(path)!r} is not writable, so the default could not be recorded there")


def write_default_extrapolations(folders: Sequence[str | Path], bands: list[dict] | None) -> list[Path]:
    """Record `bands` in the model_index.json of every folder (a run's pipeline/ and pipeline-config/): all of them
    or none. Each new file is written beside its old one first; then they replace the old ones, and a failure
    among the replacements puts back the ones already replaced. Returns the files' paths."""
    checked = check_default_extrapolation(bands)
    staged: list[tuple[Path, Path, bytes]] = []  # (temporary, final, its old bytes)
    try:
        for folder in folders:
            path = Path(folder) / "model_index.json"
            old = path.read_bytes()
            index = json.loads(old)
            index["default_extrapolation"] = checked
            descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=".model_index.json.", suffix=".tmp")
            staged.append((Path(temporary), path, old))
            with os.fdopen(descriptor, "w") as file:
                file.write(json.dumps(index, indent=2) + "\n")
                file.flush()
                os.fsync(file.fileno())
            os.chmod(temporary, 0o644)
        replaced: list[tuple[Path, bytes]] = []
        try:
            for temporary, path, old in staged:
                os.replace(temporary, path)
                replaced.append((path, old))
            for _, path, _ in staged:
                fsync_path(path.parent)
        except BaseException:
            for path, old in replaced:  # the folders agree again: each holds its old default
                path.write_bytes(old)
            raise
    finally:
        for temporary, _, _ in staged:
            temporary.unlink(missing_ok=True)
    return [path for _, path, _ in staged]


def extrapolation_scale(train_grid: Sequence[int], grid: Sequence[int]) -> float:
    """How far `grid` goes beyond `train_grid` (token grids): the largest ratio over the axes."""
    return max(n / t for t, n in zip(train_grid, grid, strict=True))


def band_for_scale(bands: Sequence[dict], scale: float) -> dict:
    """The band of checked `bands` that covers `scale`: the first with up_to_scale >= scale (None: no
    limit), the last band if `scale` is beyond every one of them."""
    for band in bands:
        if band["up_to_scale"] is None or scale <= band["up_to_scale"]:
            return band
    return bands[-1]

"""A pipeline's `default_extrapolation`: which method `extrapolation="auto"` samples each scale with.

The bands (a list sorted by scale, each {"up_to_scale": float, "method": str, "entropy_scaling": bool},
optionally with "measured", "aspect" and "options") and the one rule that picks a band for a requested
grid live in the models layer, `axialrope.models.extrapolation_bands`, which `apply_extrapolation`
shares; their names stay importable from here. A pipeline keeps the bands in its model_index.json,
where benchmarks/extrapolation.py and `axialrope calibrate` record them and a user may edit them;
this module reads and writes them there, and holds the fallback bands of a pipeline that records none.

    bands = check_default_extrapolation([{"up_to_scale": 2.0, "method": "pi", "entropy_scaling": True},
                                         {"up_to_scale": None, "method": "dype-yarn", "entropy_scaling": False}])
    band_for_scale(bands, extrapolation_scale((8, 8), (16, 16)))   # the first band: scale 2
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

from axialrope.models.extrapolation_bands import (  # the band format and its one selection rule live in models
    BAND_KEYS,
    OPTIONAL_BAND_KEYS,
    band_for_scale,
    check_default_extrapolation,
    extrapolation_scale,
    select_extrapolation,
)

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


__all__ = [
    "BAND_KEYS",
    "FALLBACK_EXTRAPOLATION",
    "OPTIONAL_BAND_KEYS",
    "band_for_scale",
    "carried_default_extrapolation",
    "check_default_extrapolation",
    "check_defaults_writable",
    "extrapolation_scale",
    "select_extrapolation",
    "write_default_extrapolation",
    "write_default_extrapolations",
]

"""Output paths checked before any work: a folder that can be made, a file that can be written.

    check_output_folder(config.output_dir, "output_dir")   # training: before any data is read
    check_output_file(args.out, "--out")                  # sampling: before the model is loaded

Each raises a ValueError naming the argument when the path is a file where a folder is
needed (or the reverse), lies under a regular file, or would be made in a folder this user
cannot write; nothing is created by the checks.
"""

from __future__ import annotations

import os
from pathlib import Path


def _nearest_existing(path: Path) -> Path:
    """`path` itself if it exists, else its nearest existing ancestor."""
    for candidate in (path, *path.parents):
        if candidate.exists():
            return candidate
    return Path(".")


def _check_makeable(folder: Path, argument: str, shown: Path) -> None:
    """ValueError unless `folder` is a folder, or one can be made there."""
    existing = _nearest_existing(folder)
    if not existing.is_dir():
        where = "is a file, not a folder" if existing == folder else f"cannot be made: {str(existing)!r} is a file"
        raise ValueError(f"{argument} {str(shown)!r}: {str(folder)!r} {where}")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise ValueError(f"{argument} {str(shown)!r}: the folder {str(existing)!r} is not writable")


def check_output_folder(path: str | Path, argument: str) -> Path:
    """`path` as a Path if it is a writable folder or can be made one; ValueError naming `argument` if not."""
    path = Path(path)
    _check_makeable(path, argument, path)
    return path


def check_output_file(path: str | Path, argument: str) -> Path:
    """`path` as a Path if a file can be written there; ValueError naming `argument` if not."""
    path = Path(path)
    if path.is_dir():
        raise ValueError(f"{argument} {str(path)!r} is a folder; name a file inside it")
    if path.exists() and not os.access(path, os.W_OK):
        raise ValueError(f"{argument} {str(path)!r} exists and is not writable")
    _check_makeable(path.parent, argument, path)
    return path


__all__ = ["check_output_file", "check_output_folder"]

"""Finished cells of a long calibration on disk, so that the same command continues where a killed one stopped.

    store = CellStore(out / "cells", report=print)
    store.open(settings)                  # cells of other settings are removed, saying which setting changed
    if not store.done(key): store.write(key, {"value": ...}, tensors={"samples": x})

Each cell is `<key>.json` (written last, atomically: its presence means the cell is whole) beside its tensors
`<key>.<name>.pt`. `settings.json` records what the cells were made with; a change of any of them starts afresh.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import torch

from ...paths import remove_tree, write_atomically, write_text_atomically


def _change(key: str, before, after) -> str:
    """ "steps 1 -> 2" for short values, the key alone for long ones (prompts, lists of methods)."""
    before, after = json.dumps(before), json.dumps(after)
    return f"{key} {before} -> {after}" if len(before) + len(after) <= 40 else key


class CellStore:
    """The cells of one calibration in `folder` (see the module docstring)."""

    def __init__(self, folder: str | Path, report: Callable[[str], None] = print):
        self.folder, self.report = Path(folder), report

    @property
    def settings_path(self) -> Path:
        return self.folder / "settings.json"

    def open(self, settings: dict) -> int:
        """Keeps the cells made with `settings` (JSON values) and removes any others, reporting which setting
        changed in one line; returns how many finished cells are kept."""
        settings = json.loads(json.dumps(settings))  # tuples as lists: compared as they are read back
        previous = None
        if self.settings_path.is_file():
            try:
                previous = json.loads(self.settings_path.read_text())
            except (OSError, ValueError):
                previous = {}
        if previous is not None and previous != settings:
            changed = [key for key in sorted(set(settings) | set(previous)) if settings.get(key) != previous.get(key)]
            shown = ", ".join(_change(key, previous.get(key), settings.get(key)) for key in changed[:4])
            shown = (shown + (", ..." if len(changed) > 4 else "")) or "the record"
            self.report(
                f"calibrate: settings changed since the cells in {self.folder} were made ({shown}); starting afresh"
            )
        if previous != settings and self.folder.exists():  # cells of other (or unrecorded) settings: none is kept
            remove_tree(self.folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        if previous != settings:
            write_text_atomically(self.settings_path, json.dumps(settings, indent=1) + "\n")
            return 0
        return len(list(self.folder.glob("*.cell.json")))

    def _path(self, key: str, name: str | None = None) -> Path:
        return self.folder / (f"{key}.cell.json" if name is None else f"{key}.{name}.pt")

    def done(self, key: str) -> bool:
        return self._path(key).is_file()

    def write(self, key: str, record: dict, tensors: dict[str, torch.Tensor] | None = None) -> None:
        """The cell's tensors, then its record: a cell is finished once its record is on disk."""
        for name, tensor in (tensors or {}).items():
            write_atomically(self._path(key, name), lambda path, t=tensor: torch.save(t.contiguous(), path))
        write_text_atomically(self._path(key), json.dumps(record) + "\n")

    def read(self, key: str) -> dict:
        return json.loads(self._path(key).read_text())

    def tensor(self, key: str, name: str) -> torch.Tensor:
        return torch.load(self._path(key, name), weights_only=True)


__all__ = ["CellStore"]

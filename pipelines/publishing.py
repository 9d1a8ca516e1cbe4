"""A command's outputs published as one set: all of the new ones in place, or all of the old ones, never a mix.

    with OutputSet(out.parent, out.stem) as outputs:     # a second writer of the set is refused here
        ...                                              # the work
        members = [out.stem + ".gif", out.stem + ".png", out.stem + ".mp4", out.stem + "_frames"]
        paths = outputs.publish(members, lambda staging: save_videos(frames, staging / out.name))

A video's samples are a GIF, a PNG, an MP4 and a folder of frames; a calibration's results are a report and a
picture per size. Several names cannot be renamed into place at once, so a set is published under a lock with
a journal:

1. `write(staging)` writes the new files into `.<key>.axialrope-new/` beside them (a failure leaves the old set);
2. the journal `.<key>.axialrope-publish.json` records the new names and the old ones (every name the set's
   `members` patterns match: a file of the old set that the new one lacks, an MP4 say, goes too);
3. the old files move into `.<key>.axialrope-old/`, the new ones into place;
4. removing the journal is the commit; then the old files and the folders go.

An error or an interrupt (Ctrl-C, SIGTERM) before the commit moves everything back at once. A process killed
outright (SIGKILL, a power cut) leaves the journal, and the next command on the set (entering `OutputSet`, under
the lock) moves everything back the same way before doing anything else: the old set whole, no temporary left.
The lock (`locks.FileLock` on `.<key>.axialrope-lock`) is held from `__enter__` to `__exit__`, so a second
command writing the same set at the same time is refused, naming the first.
"""

from __future__ import annotations

import fnmatch
import hashlib
import json
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from .locks import FileLock
from .paths import fsync_path, remove_tree, write_text_atomically


class OutputSetInUse(ValueError):
    """Another process is writing the same set of outputs."""


class OutputSet:
    """The outputs of one command beside each other in `folder`, published together (see the module docstring).

    Args:
        folder: where the set's files are.
        key: names the set's lock, journal and temporary folders (`.<key>.axialrope-*`).
        argument: how a refusal names the outputs ("--out").
        report: receives a line when a killed command's set is put back.
    """

    def __init__(self, folder: str | Path, key: str, argument: str = "--out", report: Callable[[str], None] = print):
        self.folder, self.key = Path(folder), key
        self.argument, self.report = argument, report
        base = _short(key)
        self.staging = self.folder / f".{base}.axialrope-new"
        self.backup = self.folder / f".{base}.axialrope-old"
        self.journal = self.folder / f".{base}.axialrope-publish.json"
        self.lock = FileLock(
            self.folder / f".{base}.axialrope-lock",
            refuse=self._refuse,
            report=lambda line: None,  # a stale lock says nothing the recovery does not
        )

    def _refuse(self, holder: str) -> OutputSetInUse:
        return OutputSetInUse(
            f"{self.argument} {str(self.folder / self.key)!r}: another axialrope command is writing these outputs "
            f"({holder}); wait for it to end, or choose another {self.argument}"
        )

    def __enter__(self) -> OutputSet:
        self.lock.__enter__()
        try:
            self.recover()
        except BaseException:
            self.lock.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc_info) -> None:
        self.lock.__exit__(*exc_info)

    def current(self, members: Sequence[str]) -> list[str]:
        """The names in the folder that the glob patterns `members` match."""
        if not self.folder.is_dir():
            return []
        return sorted(p.name for p in self.folder.iterdir() if _matches(p.name, members))

    def recover(self) -> bool:
        """Put back the old set if a publish was cut short (its journal is there), and remove the temporaries of
        the set; whether there was anything to put back. Needs the lock."""
        restored = False
        if self.journal.is_file():
            try:
                record = json.loads(self.journal.read_text())
                new, old = list(record["new"]), list(record["old"])
            except (OSError, ValueError, KeyError, TypeError):
                new, old = [], []  # unreadable: the journal was being written, so nothing had moved yet
            self._move_back(new, old)
            restored = bool(new or old)
            if restored:
                self.report(
                    f"{self.argument}: a command writing {str(self.folder / self.key)!r} was stopped while it "
                    f"published; its files were taken back and the set before it is whole again"
                )
        self.journal.unlink(missing_ok=True)
        remove_tree(self.staging)
        remove_tree(self.backup)
        return restored

    def _move_back(self, new: list[str], old: list[str]) -> None:
        """Undo a publish from any point of it, and again if cut short itself: a new file no longer in staging was
        moved into place (the old ones all left before the first new one came), so it goes back to staging; an
        old file in the backup goes back into place."""
        self.staging.mkdir(exist_ok=True)
        for name in new:
            placed, staged = self.folder / name, self.staging / name
            if not _exists(staged) and _exists(placed):
                os.replace(placed, staged)
        for name in old:
            if _exists(self.backup / name):
                os.replace(self.backup / name, self.folder / name)
        fsync_path(self.folder)

    def publish(self, members: Sequence[str], write: Callable[[Path], Any]) -> Any:
        """`write(staging)` writes the new set into a staging folder; then it replaces the old set, every name the
        glob patterns `members` match ("clip.gif", "calibration-*.png"), at once (see the module docstring).
        Returns what `write` returned, its paths moved to `folder`. Needs the lock."""
        if not self.lock.held:
            raise RuntimeError("OutputSet.publish needs the set's lock: use it inside `with OutputSet(...)`")
        remove_tree(self.staging)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.staging.mkdir()
        try:
            result = write(self.staging)
            new = sorted(p.name for p in self.staging.iterdir())
            strays = [name for name in new if not _matches(name, members)]
            if strays:  # a file outside the set's patterns would never be replaced by the next publish
                raise ValueError(f"OutputSet {self.key!r}: {strays} match none of its members {list(members)}")
            for name in new:
                for item in sorted((self.staging / name).rglob("*"), reverse=True):
                    fsync_path(item)
                fsync_path(self.staging / name)
        except BaseException:
            remove_tree(self.staging)
            raise
        old = self.current(members)
        write_text_atomically(self.journal, json.dumps({"new": new, "old": old}))
        try:
            self.backup.mkdir(exist_ok=True)
            for name in old:
                os.replace(self.folder / name, self.backup / name)
            for name in new:
                os.replace(self.staging / name, self.folder / name)
            fsync_path(self.folder)
        except BaseException:
            self._move_back(new, old)
            self.journal.unlink(missing_ok=True)
            remove_tree(self.staging)
            remove_tree(self.backup)
            raise
        self.journal.unlink()  # the commit: from here on the new set stands
        fsync_path(self.folder)
        remove_tree(self.backup)
        remove_tree(self.staging)
        return _moved(result, self.staging, self.folder)


def _short(key: str) -> str:
    """`key`, or for one too long to name a file with the suffixes added its start and a digest of it."""
    if len(os.fsencode(key)) <= 200:
        return key
    digest = hashlib.sha256(os.fsencode(key)).hexdigest()[:16]
    return key[:50] + "~" + digest  # 50 characters are at most 200 bytes


def _matches(name: str, members: Sequence[str]) -> bool:
    return any(fnmatch.fnmatchcase(name, pattern) for pattern in members)


def _exists(path: Path) -> bool:
    return path.exists() or path.is_symlink()


def _moved(value, source: Path, target: Path):
    """`value` with every path under `source` made the same path under `target` (in dicts, lists and tuples)."""
    if isinstance(value, Path) and (value == source or source in value.parents):
        return target / value.relative_to(source)
    if isinstance(value, dict):
        return {key: _moved(v, source, target) for key, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_moved(v, source, target) for v in value)
    return value


__all__ = ["OutputSet", "OutputSetInUse"]

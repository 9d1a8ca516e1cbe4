"""A training run's folder: one run at a time, and never two runs mixed in it.

    check_run_start(config)            # a folder holding a run: --resume latest or --overwrite-output-dir
    with RunLock(config.output_dir):   # for the run's life; a second run on the folder is refused
        clear_run(folder)              # --overwrite-output-dir: the old run's files go, nothing else

The lock is `fcntl.flock` on `<output_dir>/.axialrope-train.lock`, which names its holder; the kernel
drops it when the process ends however it ends, so the file of a killed run is stale and is taken
over (and said). Where flock is missing, the file is made exclusively and a holder that no longer
runs is stale. Nothing here deletes through a link.
"""

from __future__ import annotations

import datetime
import os
import socket
from collections.abc import Callable
from pathlib import Path

from ..paths import remove_tree
from .checkpoints import list_checkpoints

# what a run writes into its folder (see loop.py); a folder holding any of these holds a run
RUN_FILES = (
    "config.yaml",
    "loss.jsonl",
    "loss.png",
    "samples.png",
    "checkpoints",
    "model",
    "model_ema",
    "pipeline",
    "pipeline-config",
    "logs",
    "validation",
)
FINISHED_FILES = ("model", "model_ema", "pipeline", "samples.png", "loss.png")  # written at a run's end
LOCK_FILE = ".axialrope-train.lock"


class RunFolderError(ValueError):
    """The output folder holds another run, is in use by one, or a resume would mix two runs in it."""


def run_files(folder: str | Path) -> list[str]:
    """The names of RUN_FILES present in `folder` (links included)."""
    folder = Path(folder)
    return [name for name in RUN_FILES if (folder / name).exists() or (folder / name).is_symlink()]


def check_run_start(config) -> None:
    """RunFolderError unless `config` may start in its output_dir: a fresh start needs a folder without a
    run (or --overwrite-output-dir); --resume latest without a checkpoint starts from step 0 only where the
    run never finished (nothing of its end would be lost); a named checkpoint must be the newest of the
    folder's run, since resuming an older one would mix two histories of the run."""
    folder, found = Path(config.output_dir), run_files(config.output_dir)
    if config.resume is None and not config.overwrite_output_dir and found:
        raise RunFolderError(
            f"output_dir {str(folder)!r} holds a training run ({', '.join(found)}): continue it with --resume "
            "latest, or start over with --overwrite-output-dir (which deletes these files), or choose another "
            "--output-dir"
        )
    ours = list_checkpoints(folder / "checkpoints")
    finished = [name for name in found if name in FINISHED_FILES]
    if config.resume == "latest" and not ours and finished:
        raise RunFolderError(
            f"resume latest: output_dir {str(folder)!r} holds a finished run ({', '.join(finished)}) but no checkpoint "
            "to continue it from; start over with --overwrite-output-dir (which deletes it), or choose another "
            "--output-dir"
        )
    if config.resume in (None, "latest") or not found:
        return
    named = Path(config.resume)
    if not ours:
        raise RunFolderError(
            f"output_dir {str(folder)!r} holds a run ({', '.join(found)}) that checkpoint "
            f"{config.resume!r} is not part of: resume into an empty --output-dir"
        )
    if named.resolve() != ours[-1].resolve():
        inside = named.resolve() in [c.resolve() for c in ours]
        where = f"the run's newest checkpoint is {ours[-1].name}" if inside else "it belongs to another run"
        raise RunFolderError(
            f"resume {config.resume!r}: {where}; continuing from another would mix two histories in "
            f"{str(folder)!r}. Resume into an empty --output-dir to branch off, or use --resume latest"
        )


def clear_run(folder: str | Path) -> list[str]:
    """Delete the files of a run in `folder` (RUN_FILES and the temporaries of a crashed run), nothing
    else, and no link's target; returns the names deleted."""
    folder = Path(folder)
    doomed = run_files(folder) + sorted(p.name for p in folder.glob("*.tmp") if p.name.startswith(RUN_FILES))
    for name in doomed:
        remove_tree(folder / name)
    return doomed


def _holder() -> str:
    started = datetime.datetime.now().isoformat(timespec="seconds")
    return f"process {os.getpid()} on {socket.gethostname()}, started {started}"


def _running(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # it exists but is another user's
        return True
    return True


class RunLock:
    """An exclusive lock on a run folder, held from `__enter__` to `__exit__`.

    The folder is made if missing, and removed again on exit if nothing was written into it.
    RunFolderError naming the holder if another process holds the lock; `report` receives one line
    when a stale lock (of a killed run) is taken over.
    """

    def __init__(self, folder: str | Path, report: Callable[[str], None] = print):
        self.folder, self.report = Path(folder), report
        self.path = self.folder / LOCK_FILE
        self._descriptor: int | None = None
        self._made: list[Path] = []  # folders the lock made, removed again if the run leaves them empty

    def __enter__(self) -> RunLock:
        self._made = [p for p in (self.folder, *self.folder.parents) if not p.exists()][::-1]
        self.folder.mkdir(parents=True, exist_ok=True)
        try:
            import fcntl  # POSIX: absent on Windows
        except ImportError:  # no flock (Windows): an exclusive file whose holder must still run
            self._take_exclusive_file()
        else:
            self._take_flock(fcntl)
        return self

    def _refuse(self, holder: str) -> RunFolderError:
        return RunFolderError(
            f"output_dir {str(self.folder)!r} is in use by another training run ({holder.strip()}):"
            " wait for it to end, or choose another --output-dir"
        )

    def _take_flock(self, fcntl) -> None:
        while True:
            descriptor = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                holder = os.read(descriptor, 1000).decode(errors="replace") or "a process"
                os.close(descriptor)
                raise self._refuse(holder) from None
            try:  # the file may have been removed by its last holder between our open and our lock
                same = os.stat(self.path).st_ino == os.fstat(descriptor).st_ino
            except FileNotFoundError:
                same = False
            if same:
                break
            os.close(descriptor)
        stale = os.read(descriptor, 1000).decode(errors="replace").strip()
        if stale:
            self.report(f"output_dir: took over the lock left by a run that no longer runs ({stale})")
        os.ftruncate(descriptor, 0)
        os.lseek(descriptor, 0, os.SEEK_SET)
        os.write(descriptor, _holder().encode())
        self._descriptor = descriptor

    def _take_exclusive_file(self) -> None:
        for _ in range(2):
            try:
                descriptor = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
            except FileExistsError:
                holder = self.path.read_text(errors="replace")
                pid = holder.split()[1] if holder.startswith("process ") else ""
                if pid.isdigit() and _running(int(pid)):
                    raise self._refuse(holder) from None
                self.report(f"output_dir: took over the lock left by a run that no longer runs ({holder.strip()})")
                self.path.unlink(missing_ok=True)
                continue
            os.write(descriptor, _holder().encode())
            self._descriptor = descriptor
            return
        raise self._refuse(self.path.read_text(errors="replace"))

    def __exit__(self, *exc_info) -> None:
        if self._descriptor is None:
            return
        try:
            self.path.unlink(missing_ok=True)  # before the unlock: a waiting process re-checks the file
        finally:
            os.close(self._descriptor)  # releases the flock
            self._descriptor = None
        for folder in reversed(self._made):  # a run refused before writing leaves no folder behind
            try:
                folder.rmdir()
            except OSError:  # not empty: the run wrote into it
                break


__all__ = ["LOCK_FILE", "RUN_FILES", "RunFolderError", "RunLock", "check_run_start", "clear_run", "run_files"]

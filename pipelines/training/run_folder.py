"""A training run's folder: one run at a time, and never two runs mixed in it.

    check_run_start(config)            # a folder holding a run: --resume latest or --overwrite-output-dir
    with RunLock(config.output_dir):   # for the run's life; a second run on the folder is refused
        clear_run(folder)              # --overwrite-output-dir: the old run's files go, nothing else

The lock is a `locks.FileLock` on `<output_dir>/.axialrope-train.lock`, which names its holder; the
file of a killed run is stale and is taken over (and said). Nothing here deletes through a link.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ..locks import FileLock
from ..paths import remove_tree
from .checkpoints import list_checkpoints
from .data_record import DATA_RECORD

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
    DATA_RECORD,
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
    doomed = run_files(folder)
    for name in doomed:
        remove_tree(folder / name)
    return doomed + remove_temporaries(folder)


def remove_temporaries(folder: str | Path) -> list[str]:
    """Delete what a run stopped mid-write leaves in `folder`: its outputs staged beside their final names
    (`model.tmp`, ...) and a checkpoint being saved (`checkpoints/checkpoint-N.tmp`); returns their names."""
    folder = Path(folder)
    doomed = sorted(p.name for p in folder.glob("*.tmp") if p.name.startswith(RUN_FILES))
    doomed += sorted(f"checkpoints/{p.name}" for p in folder.glob("checkpoints/checkpoint-*.tmp"))
    for name in doomed:
        remove_tree(folder / name)
    return doomed


class RunLock(FileLock):
    """An exclusive lock on a run folder (`<folder>/.axialrope-train.lock`), held from `__enter__` to `__exit__`.

    The folder is made if missing, and removed again on exit if nothing was written into it.
    RunFolderError naming the holder if another process holds the lock; `report` receives one line
    when a stale lock (of a killed run) is taken over.
    """

    def __init__(self, folder: str | Path, report: Callable[[str], None] = print):
        self.folder = Path(folder)
        super().__init__(
            self.folder / LOCK_FILE,
            refuse=self._refuse,
            report=report,
            stale="output_dir: took over the lock left by a run that no longer runs",
        )

    def _refuse(self, holder: str) -> RunFolderError:
        return RunFolderError(
            f"output_dir {str(self.folder)!r} is in use by another training run ({holder.strip()}):"
            " wait for it to end, or choose another --output-dir"
        )


__all__ = [
    "LOCK_FILE",
    "RUN_FILES",
    "RunFolderError",
    "RunLock",
    "check_run_start",
    "clear_run",
    "remove_temporaries",
    "run_files",
]

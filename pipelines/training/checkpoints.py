"""Checkpoints on disk: `checkpoints/checkpoint-<step>/`, safetensors and JSON only, durable, verified.

A checkpoint folder holds model.safetensors, optimizer.safetensors, ema.safetensors (with EMA),
random_states_<rank>.safetensors (one per process), scheduler.json and, written last,
trainer_state.json: the step, the loop's counters, the run's config, the size and sha256 of every
other file, and a digest of its own values. Nothing in it is pickle, and files this project does
not write are never opened. A checkpoint is written into `checkpoint-<step>.tmp` and published
(fsynced, renamed: `paths.publish`), so a crash leaves the complete checkpoint or none;
`find_resumable` verifies one and falls back from a damaged latest to the newest good one, saying
which and why. Pruning never deletes through a link. See docs/training.md, "Reliability".
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from axialrope.validation import is_int, is_real

from ..paths import fsync_path, publish, remove_tree, write_atomically, write_text_atomically
from . import train_state
from .train_state import StateFileError

_NAME = re.compile(r"checkpoint-(\d+)")
FORMAT = "axialrope-checkpoint"
VERSION = 2  # 2: trainer_state.json carries the run's config and a digest of its own values
TRAINER_STATE = "trainer_state.json"
STATE_DIGEST = "state_sha256"


class DamagedCheckpointError(ValueError):
    """A checkpoint folder is incomplete, truncated, corrupt or not written by this project."""


class CheckpointWriteError(RuntimeError):
    """A checkpoint could not be written (a full disk, a folder turned read-only); nothing of it is left."""


# -- names -----------------------------------------------------------------------------------


def checkpoint_step(path: str | Path) -> int:
    """The optimizer step a checkpoint folder was saved at (from its name)."""
    match = _NAME.fullmatch(Path(path).name)
    if match is None:
        raise ValueError(f"{str(path)!r} is not a checkpoint folder (expected a name like checkpoint-000500)")
    return int(match.group(1))


def list_checkpoints(root: str | Path) -> list[Path]:
    """Checkpoint folders under `root`, oldest first (temporary folders excluded; not verified)."""
    root = Path(root)
    if not root.is_dir():
        return []
    found = [p for p in root.iterdir() if p.is_dir() and _NAME.fullmatch(p.name)]
    return sorted(found, key=checkpoint_step)


def latest_checkpoint(root: str | Path) -> Path | None:
    """The checkpoint folder with the highest step, or None (not verified: see `find_resumable`)."""
    found = list_checkpoints(root)
    return found[-1] if found else None


def resolve_resume(resume: str | None, root: str | Path) -> Path | None:
    """The checkpoint folder a `resume` setting names: None, 'latest' (None if there is none yet) or a folder."""
    if resume is None:
        return None
    if resume == "latest":
        return latest_checkpoint(root)
    path = Path(resume)
    if not path.is_dir():
        raise FileNotFoundError(f"resume: checkpoint folder {resume!r} does not exist")
    checkpoint_step(path)
    return path


# -- writing ---------------------------------------------------------------------------------


def save_checkpoint(
    accelerator,
    root: str | Path,
    step: int,
    components: dict[str, Any],
    trainer: dict[str, Any],
    total_limit: int | None = None,
) -> Path:
    """Save a checkpoint at `step` durably; call it on every process.

    Args:
        accelerator: the run's `Accelerator` (process index, barriers).
        root: the checkpoints folder.
        step: the optimizer step just completed.
        components: file name -> value for `train_state.write_state`, written by the main
            process (model weights, optimizer, scheduler, EMA).
        trainer: the counters (and config) for trainer_state.json.
        total_limit: keep at most this many checkpoints (the oldest are deleted); None keeps all.

    Every process writes its own `random_states_<rank>.safetensors`. Returns the final folder.
    CheckpointWriteError (nothing of the new checkpoint left) if a write fails, e.g. on a full disk.
    """
    root = Path(root)
    final = root / f"checkpoint-{step:06d}"
    temporary = final.with_name(final.name + ".tmp")
    try:
        if accelerator.is_main_process:
            root.mkdir(parents=True, exist_ok=True)
            for stale in root.glob("checkpoint-*.tmp"):  # left by a crash during a save or a delete
                remove_tree(stale)
            temporary.mkdir()
        accelerator.wait_for_everyone()
        mine = [
            train_state.write_state(
                temporary / f"random_states_{accelerator.process_index}.safetensors", train_state.rng_states()
            )
        ]
        if accelerator.is_main_process:
            mine += [train_state.write_state(temporary / name, value) for name, value in components.items()]
        for path in mine:
            fsync_path(path)
        accelerator.wait_for_everyone()  # every process has written its share
        if accelerator.is_main_process:
            files = {p.name: _describe(p) for p in sorted(temporary.iterdir())}
            state = {
                "format": FORMAT,
                "version": VERSION,
                "step": step,
                "num_processes": accelerator.num_processes,
                **trainer,
                "files": files,
            }
            state[STATE_DIGEST] = _state_digest(state)
            train_state.write_state(temporary / TRAINER_STATE, state)  # last: it vouches for the others
            if final.exists() or final.is_symlink():  # a re-run of the same step after a resume: replace it
                _discard(final)
            publish(temporary, final)
    except OSError as error:
        if accelerator.is_main_process:
            remove_tree(temporary)
        last = latest_checkpoint(root)
        kept = f"the last complete checkpoint is {last.name}" if last else "no checkpoint had been saved yet"
        raise CheckpointWriteError(
            f"could not write checkpoint-{step:06d} in {str(root)!r}: {error.strerror or error} "
            f"({Path(error.filename).name if error.filename else 'a file'}); {kept}. Make room (or fix the folder) "
            "and continue with --resume latest"
        ) from None
    if accelerator.is_main_process and total_limit is not None:
        for old in list_checkpoints(root)[:-total_limit]:
            _discard(old)
    accelerator.wait_for_everyone()
    return final


def _describe(path: Path) -> dict[str, Any]:
    return {"bytes": path.stat().st_size, "sha256": _sha256(path)}


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _state_digest(state: dict[str, Any]) -> str:
    """sha256 of trainer_state.json's values (all but the digest itself), as `write_state` encodes them."""
    values = {k: v for k, v in state.items() if k != STATE_DIGEST}
    return hashlib.sha256(json.dumps(train_state.encode(values, {}), sort_keys=True).encode()).hexdigest()


def _discard(checkpoint: Path) -> None:
    """Delete a checkpoint, first renaming it out of the complete set so a crash mid-delete leaves no broken
    one. A checkpoint that is a link loses only the link: nothing is deleted through it."""
    doomed = checkpoint.with_name(checkpoint.name + ".deleting.tmp")
    checkpoint.rename(doomed)
    fsync_path(doomed.parent)
    remove_tree(doomed)


# -- reading and verifying -------------------------------------------------------------------


@dataclass
class Checkpoint:
    """A verified checkpoint, read into memory.

    folder: where it was read from. step: its optimizer step. trainer: the counters of
    trainer_state.json. components: file name -> value (model, optimizer, scheduler, EMA).
    rng: this process's generator states. ignored: files in the folder that it never opened.
    """

    folder: Path
    step: int
    trainer: dict[str, Any]
    components: dict[str, Any]
    rng: dict[str, Any]
    ignored: list[str]


def read_checkpoint(folder: str | Path, num_processes: int = 1, process_index: int = 0) -> Checkpoint:
    """Verify and read a checkpoint folder; DamagedCheckpointError (with the reason) if it is not usable.

    Verified: trainer_state.json is this format and names the folder's step; every file it lists
    is present with its size and sha256; every file reads back (safetensors and JSON only); the
    random states are well formed; the checkpoint was written by `num_processes` processes.
    """
    folder = Path(folder)
    name = folder.name
    try:
        step = checkpoint_step(folder)
        state = train_state.read_state(folder / TRAINER_STATE)
    except (ValueError, StateFileError) as error:
        raise DamagedCheckpointError(f"{name}: {error}") from None
    if not isinstance(state, dict) or state.get("format") != FORMAT or not isinstance(state.get("files"), dict):
        raise DamagedCheckpointError(
            f"{name}: {TRAINER_STATE} is not an axialrope checkpoint's (format "
            f"{FORMAT!r} version {VERSION}); checkpoints written by older versions "
            "cannot be resumed"
        )
    if state.get("version") == 1:
        raise DamagedCheckpointError(
            f"{name}: written by an earlier axialrope (checkpoint version 1, whose "
            f"{TRAINER_STATE} no digest covers); it cannot be resumed, and its "
            "model.safetensors still holds the weights"
        )
    if state.get("version") != VERSION or state.get("step") != step:
        raise DamagedCheckpointError(
            f"{name}: {TRAINER_STATE} says version {state.get('version')!r}, step "
            f"{state.get('step')!r}; expected version {VERSION}, step {step}"
        )
    if state.get(STATE_DIGEST) != _state_digest(state):
        raise DamagedCheckpointError(
            f"{name}: {TRAINER_STATE} does not match its own digest ({STATE_DIGEST}): "
            "its counters were edited or are corrupt"
        )
    if state.get("num_processes") != num_processes:
        raise DamagedCheckpointError(
            f"{name}: written by {state.get('num_processes')} process(es), this run has "
            f"{num_processes}; resume with the same number of processes"
        )
    files = state["files"]
    for file_name, expected in files.items():
        path = folder / file_name
        if not isinstance(expected, dict) or Path(file_name).name != file_name:
            raise DamagedCheckpointError(f"{name}: {TRAINER_STATE} lists a bad file entry {file_name!r}")
        if not path.is_file():
            raise DamagedCheckpointError(f"{name}: {file_name} is missing")
        size = path.stat().st_size
        if size != expected.get("bytes"):
            raise DamagedCheckpointError(
                f"{name}: {file_name} has {size} bytes, {expected.get('bytes')} were written (truncated or replaced)"
            )
        if _sha256(path) != expected.get("sha256"):
            raise DamagedCheckpointError(f"{name}: {file_name} does not match its sha256 (corrupt or replaced)")
    rng_name = f"random_states_{process_index}.safetensors"
    if rng_name not in files:
        raise DamagedCheckpointError(f"{name}: {rng_name} is missing")
    components = {}
    try:
        for file_name in files:
            if not file_name.startswith("random_states_"):
                components[file_name] = train_state.read_state(folder / file_name)
        rng = train_state.read_state(folder / rng_name)
        train_state.check_rng_states(rng)
    except StateFileError as error:
        raise DamagedCheckpointError(f"{name}: {error}") from None
    trainer = {
        k: v for k, v in state.items() if k not in ("format", "version", "step", "num_processes", "files", STATE_DIGEST)
    }
    problem = _trainer_problem(trainer)
    if problem:
        raise DamagedCheckpointError(f"{name}: {TRAINER_STATE}: {problem}")
    ignored = sorted(p.name for p in folder.iterdir() if p.name not in files and p.name != TRAINER_STATE)
    return Checkpoint(folder, step, trainer, components, rng, ignored)


def _trainer_problem(trainer: dict[str, Any]) -> str | None:
    """What is wrong with the loop's counters in trainer_state.json, or None."""
    data = trainer.get("data")
    counts = {
        "micro_batches": trainer.get("micro_batches"),
        "accelerator_step": trainer.get("accelerator_step"),
        **(
            {f"data.{k}": data.get(k) for k in ("epoch", "batches_into_epoch")}
            if isinstance(data, dict)
            else {"data": None}
        ),
    }
    for key, value in counts.items():
        if not is_int(value) or value < 0:
            return f"{key} must be a non-negative integer, got {value!r}"
    seconds = trainer.get("seconds")
    if not is_real(seconds) or not 0 <= seconds < float("inf"):
        return f"seconds must be a non-negative number, got {seconds!r}"
    if trainer.get("grad_scaler") is not None and not isinstance(trainer["grad_scaler"], dict):
        return "grad_scaler must be a mapping or null"
    if not isinstance(trainer.get("config"), dict):
        return "config must be the run's config, a mapping"
    return None


def find_resumable(
    resume: str | None,
    root: str | Path,
    num_processes: int = 1,
    process_index: int = 0,
    report: Callable[[str], None] = print,
) -> Checkpoint | None:
    """The checkpoint a run resumes from, verified and read; None for a fresh start.

    Args:
        resume: None (fresh), "latest" (the newest good checkpoint under `root`; None if there
            is none yet) or a checkpoint folder (which must be good).
        report: receives one line per damaged checkpoint skipped, and where the run resumes.

    Raises DamagedCheckpointError when an explicit folder is damaged, or when checkpoints exist
    but none is usable (a fresh start would overwrite them).
    """
    if resume is None:
        return None
    if resume == "latest":
        candidates = list_checkpoints(root)[::-1]
        if not candidates:
            return None
    else:
        candidates = [resolve_resume(resume, root)]
    problems = []
    for folder in candidates:
        try:
            checkpoint = read_checkpoint(folder, num_processes, process_index)
        except DamagedCheckpointError as error:
            problems.append(str(error))
            if resume == "latest":
                report(f"resume: skipping damaged checkpoint {error}")
            continue
        if problems:
            report(f"resume: falling back to {checkpoint.folder.name}, the newest good checkpoint")
        if checkpoint.ignored:
            ignored = ", ".join(checkpoint.ignored)
            report(f"resume: ignoring files this project does not write (never opened): {ignored}")
        return checkpoint
    raise DamagedCheckpointError(
        f"resume {resume!r}: no usable checkpoint ({'; '.join(problems)}); move the damaged checkpoints "
        "away, or start the run over with --overwrite-output-dir"
    )


__all__ = [
    "Checkpoint",
    "CheckpointWriteError",
    "DamagedCheckpointError",
    "checkpoint_step",
    "find_resumable",
    "fsync_path",
    "latest_checkpoint",
    "list_checkpoints",
    "publish",
    "read_checkpoint",
    "resolve_resume",
    "save_checkpoint",
    "write_atomically",
    "write_text_atomically",
]

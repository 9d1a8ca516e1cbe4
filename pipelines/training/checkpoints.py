"""Checkpoints on disk: `checkpoints/checkpoint-<step>`, written atomically, pruned, found again.

A checkpoint is what `Accelerator.save_state` writes (model, optimizer, LR schedule, RNG
states of every process, registered objects such as the EMA). It is first written to
`checkpoint-<step>.tmp` and renamed only when every process has finished writing, so a
crash (even SIGKILL) never leaves a half-written folder under a final name: `latest`
only ever sees complete checkpoints, and a stale `.tmp` is removed on the next save.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

_NAME = re.compile(r"checkpoint-(\d+)")


def checkpoint_step(path: str | Path) -> int:
    """The optimizer step a checkpoint folder was saved at (from its name)."""
    match = _NAME.fullmatch(Path(path).name)
    if match is None:
        raise ValueError(f"{str(path)!r} is not a checkpoint folder (expected a name like checkpoint-000500)")
    return int(match.group(1))


def list_checkpoints(root: str | Path) -> list[Path]:
    """Complete checkpoints under `root`, oldest first (temporary folders excluded)."""
    root = Path(root)
    if not root.is_dir():
        return []
    found = [p for p in root.iterdir() if p.is_dir() and _NAME.fullmatch(p.name)]
    return sorted(found, key=checkpoint_step)


def latest_checkpoint(root: str | Path) -> Path | None:
    """The complete checkpoint with the highest step, or None."""
    found = list_checkpoints(root)
    return found[-1] if found else None


def resolve_resume(resume: str | None, root: str | Path) -> Path | None:
    """The checkpoint to resume from: None, 'latest' (None if there is none yet) or an explicit folder."""
    if resume is None:
        return None
    if resume == "latest":
        return latest_checkpoint(root)
    path = Path(resume)
    if not path.is_dir():
        raise FileNotFoundError(f"resume: checkpoint folder {resume!r} does not exist")
    checkpoint_step(path)
    return path


def save_checkpoint(accelerator, root: str | Path, step: int, total_limit: int | None = None) -> Path:
    """Save the accelerator's state at `step` atomically; call it on every process.

    Args:
        accelerator: the run's `Accelerator` (with its prepared objects and registered state).
        root: the checkpoints folder.
        step: the optimizer step just completed.
        total_limit: keep at most this many checkpoints (the oldest are deleted); None keeps all.

    Returns:
        the final checkpoint folder.
    """
    root = Path(root)
    final = root / f"checkpoint-{step:06d}"
    temporary = final.with_name(final.name + ".tmp")
    if accelerator.is_main_process:
        root.mkdir(parents=True, exist_ok=True)
        for stale in root.glob("checkpoint-*.tmp"):  # left by a crash during a save
            shutil.rmtree(stale)
    accelerator.wait_for_everyone()
    accelerator.save_state(str(temporary))
    accelerator.wait_for_everyone()  # every process has written its share (its RNG state)
    if accelerator.is_main_process:
        if final.exists():  # a re-run of the same step after a resume: replace it
            _discard(final)
        temporary.rename(final)  # atomic on one file system
        if total_limit is not None:
            for old in list_checkpoints(root)[:-total_limit]:
                _discard(old)
    accelerator.wait_for_everyone()
    return final


def _discard(checkpoint: Path) -> None:
    """Delete a checkpoint, first renaming it out of the complete set so a crash mid-delete leaves no broken one."""
    doomed = checkpoint.with_name(checkpoint.name + ".deleting.tmp")
    checkpoint.rename(doomed)
    shutil.rmtree(doomed)

"""Experiment trackers of a training run (tensorboard, wandb) through accelerate, as diffusers' examples use them.

    names = trackers_for(config.report_to)                  # ValueError if a named tracker is not installed
    accelerator = Accelerator(**accelerator_kwargs(names, output))
    start_trackers(accelerator, config, output, start_step)  # after the run's first write
    log_scalars(accelerator, step, loss=..., lr=..., grad_norm=...)
    log_images(accelerator, step, {"validation/1x": [image, ...]})

The events go under `<output_dir>/logs/` (tensorboard: `logs/axialrope/`). A resume from step s logs
each later step once: tensorboard purges the events of steps after s that the stopped run had
written (`purge_step`); wandb continues the same run (its id is kept in `logs/wandb-run-id`).
"""

from __future__ import annotations

import secrets
from pathlib import Path

import numpy as np

from ..paths import write_text_atomically

TRACKERS = ("tensorboard", "wandb")
REPORT_TO = (*TRACKERS, "all", "none", "auto")
PROJECT = "axialrope"  # accelerate's project name: tensorboard's subfolder of logs/, wandb's project
LOGS = "logs"
_INSTALL = {"tensorboard": "pip install tensorboard (or axialrope[tracking])", "wandb": "pip install wandb"}


def installed_trackers() -> list[str]:
    """The TRACKERS whose package is installed here: the one place `trackers_for` asks (a test that needs a
    machine without them replaces this function)."""
    from accelerate.utils import is_tensorboard_available, is_wandb_available  # heavy: keeps --help fast

    available = {"tensorboard": is_tensorboard_available, "wandb": is_wandb_available}
    return [name for name in TRACKERS if available[name]()]


def trackers_for(report_to: str) -> list[str]:
    """The trackers `report_to` names: one of TRACKERS, "all" (every one installed), "none", or "auto"
    (tensorboard where installed, else none). ValueError naming report_to for an unknown name or a
    named tracker that is not installed."""
    if report_to not in REPORT_TO:
        raise ValueError(f"report_to must be one of {', '.join(REPORT_TO)}; got {report_to!r}")
    if report_to == "none":
        return []
    installed = installed_trackers()
    if report_to == "auto":
        return ["tensorboard"] if "tensorboard" in installed else []
    if report_to == "all":
        if not installed:
            raise ValueError(
                f"report_to all: none of {', '.join(TRACKERS)} is installed; "
                f"{_INSTALL['tensorboard']}, or give --report-to none"
            )
        return installed
    if report_to not in installed:
        raise ValueError(
            f"report_to {report_to}: the {report_to} package is not installed; "
            f"{_INSTALL[report_to]}, or give --report-to none"
        )
    return [report_to]


def accelerator_kwargs(names: list[str], output: Path) -> dict:
    """`Accelerator` keyword arguments for trackers `names` logging into `output`/logs."""
    if not names:
        return {}
    from accelerate.utils import ProjectConfiguration  # heavy: keeps --help fast

    return {
        "log_with": names,
        "project_config": ProjectConfiguration(project_dir=str(output), logging_dir=str(output / LOGS)),
    }


def _hyperparameters(config) -> dict:
    """The run's config as a tracker stores it: lists and None written out, since tensorboard's hparams
    take only numbers, strings and bools."""
    return {
        name: value if isinstance(value, (bool, int, float, str)) else str(value)
        for name, value in config.run_dict().items()
    }


def _wandb_run_id(output: Path, start_step: int) -> str:
    """The id of the run's wandb run: read back on a resume, so that it goes on in the same wandb run."""
    path = output / LOGS / "wandb-run-id"
    if start_step and path.is_file():
        return path.read_text().strip()
    run_id = secrets.token_hex(8)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomically(path, run_id + "\n")
    return run_id


def tracker_init_kwargs(names: list[str], output: Path, start_step: int) -> dict:
    """accelerate's `init_kwargs` per tracker: what makes a resume from `start_step` log each step once."""
    kwargs: dict[str, dict] = {}
    if "tensorboard" in names:  # drops what a stopped invocation logged past the step this one starts from
        kwargs["tensorboard"] = {"purge_step": start_step + 1}
    if "wandb" in names:
        kwargs["wandb"] = {
            "name": output.name,
            "dir": str(output / LOGS),
            "resume": "allow",
            "id": _wandb_run_id(output, start_step),
        }
    return kwargs


def start_trackers(accelerator, config, output: Path, start_step: int) -> None:
    """`init_trackers` with the run's config (every process calls it; accelerate starts them on the main one)."""
    names = [str(name) for name in accelerator.log_with]
    if not names:
        return
    kwargs = tracker_init_kwargs(names, output, start_step) if accelerator.is_main_process else {}
    accelerator.init_trackers(PROJECT, config=_hyperparameters(config), init_kwargs=kwargs)


def log_scalars(accelerator, step: int, **values: float) -> None:
    """The run's scalars at `step`, under train/ (loss, lr, grad_norm)."""
    if accelerator.trackers:
        accelerator.log({f"train/{name}": float(value) for name, value in values.items()}, step=step)


def log_images(accelerator, step: int, images: dict[str, list[np.ndarray]]) -> None:
    """Lists of (h, w, 3) uint8 images, by tag, into every tracker (main process)."""
    if not accelerator.is_main_process:
        return
    for tracker in accelerator.trackers:
        if tracker.name == "tensorboard":
            for tag, batch in images.items():
                tracker.writer.add_images(tag, np.stack(batch), global_step=step, dataformats="NHWC")
            tracker.writer.flush()
        else:
            tracker.log_images(images, step=step)


def finish_trackers(accelerator) -> None:
    """Close the trackers (their files flushed), e.g. when a run stops on an error."""
    for tracker in accelerator.trackers:
        tracker.finish()
    accelerator.trackers = []

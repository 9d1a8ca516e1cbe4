"""What a checkpoint holds of a training run, and a run restored from one.

    resumed = find_resume_point(config.resume, checkpoints_folder, accelerator)   # verified, or None
    changes = resume_changes(resumed.trainer["config"], config, resumed.folder.name)  # what may change
    trainer = restore(resumed, accelerator, model, optimizer, lr_scheduler, ema)  # then the loop goes on

A checkpoint holds the model's weights, the optimizer, the LR schedule and the EMA (written by
the main process), every process's generators, the loop's counters (`trainer_counters`:
micro-batches, data position, the run's seconds, accelerate's accumulation step, the fp16
gradient scaler) and the run's config. A resume continues that run: it may change only the
RESUMABLE settings, read afresh as the run goes on.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import torch
from accelerate import Accelerator

from .checkpoints import Checkpoint, DamagedCheckpointError, find_resumable
from .config import INVOCATION_FIELDS, TrainConfig
from .train_state import set_rng_states

# what a resume may change: read afresh as the run goes on. Everything else defines the run (its
# model, data and order, its optimizer, schedule and EMA, which the checkpoint carries on)
RESUMABLE = (
    "max_steps",
    "checkpointing_steps",
    "checkpoints_total_limit",
    "log_every",
    "sample_steps",
    "samples_per_class",
    "guidance_scale",
    "num_workers",
    "max_grad_norm",
    "label_dropout",
    "mixed_precision",
    "report_to",
    "validation_steps",
    "validation_scales",
    "validation_num_inference_steps",
    "calibrate_scales",
)


def _comparable(name: str, value: Any) -> Any:
    """A config value as compared across a resume: paths resolved, sizes parsed, numbers as floats."""
    if name in ("data_dir", "init_from") and isinstance(value, str) and os.path.exists(value):
        return os.path.realpath(value)
    if name == "resolution" and isinstance(value, list):
        return [str(value_) for value_ in value]
    if name == "rope_theta" and isinstance(value, list):
        return [float(v) for v in value]
    return value


def resume_changes(recorded: dict[str, Any], config: TrainConfig, checkpoint: str) -> dict[str, tuple[Any, Any]]:
    """The settings `config` changes from the run's `recorded` config, {field: (run's, new)}.

    ValueError naming the field for a change a resume cannot make (anything not RESUMABLE).
    """
    changes = {}
    for name, value in config.run_dict().items():
        if name in INVOCATION_FIELDS or name == "output_dir" or name not in recorded:
            continue
        before = recorded[name]
        if _comparable(name, before) == _comparable(name, value):
            continue
        if name not in RESUMABLE:
            flag = "--" + name.replace("_", "-")
            raise ValueError(
                f"resume: {flag} {value!r} differs from the run's {before!r} ({checkpoint}); a resume continues "
                f"the run as it was, and {name} is part of it. Drop {flag} (or give the run's value), or start a "
                "new run from this checkpoint's weights: --init-from <checkpoint> --output-dir <new folder>"
            )
        changes[name] = (before, value)
    return changes


def describe_changes(changes: dict[str, tuple[Any, Any]]) -> str:
    """One line for the log: what a resume keeps and what it changes."""
    if not changes:
        return "resume: the run's settings are unchanged"
    changed = ", ".join(f"{name} {before!r} -> {after!r}" for name, (before, after) in changes.items())
    return f"resume: keeps the run's settings but {changed}"


def find_resume_point(resume: str | None, root: Path, accelerator: Accelerator) -> Checkpoint | None:
    """The verified checkpoint a run resumes from (see `checkpoints.find_resumable`), the same on every process."""
    resumed = find_resumable(
        resume, root, accelerator.num_processes, accelerator.process_index, report=accelerator.print
    )
    if accelerator.num_processes > 1:  # each process verified on its own: they must have chosen the same one
        chosen = torch.tensor([-1 if resumed is None else resumed.step], device=accelerator.device)
        if (accelerator.gather(chosen) != chosen).any():
            raise DamagedCheckpointError(
                "resume: the processes disagree on the checkpoint to resume from "
                "(one of them cannot read a file the others can)"
            )
    return resumed


def trainer_counters(
    accelerator: Accelerator, micro_batches: int, batches_per_epoch: int, seconds: float, config: TrainConfig
) -> dict[str, Any]:
    """The loop's counters and the run's config for trainer_state.json (checked on reading by
    `checkpoints.read_checkpoint`)."""
    epoch, into_epoch = divmod(micro_batches, batches_per_epoch)
    return {
        "micro_batches": micro_batches,
        "data": {"epoch": epoch, "batches_into_epoch": into_epoch},
        "seconds": seconds,
        "accelerator_step": accelerator.step,
        "grad_scaler": None if accelerator.scaler is None else accelerator.scaler.state_dict(),
        "config": config.run_dict(),
    }


def checkpoint_components(model, optimizer, lr_scheduler, ema) -> dict:
    """What the main process writes into a checkpoint, by file name (see `checkpoints`)."""
    components = {
        "model.safetensors": model.state_dict(),
        "optimizer.safetensors": optimizer.state_dict(),
        "scheduler.json": lr_scheduler.state_dict(),
    }
    if ema is not None:
        components["ema.safetensors"] = ema.state_dict()
    return components


def restore(checkpoint: Checkpoint, accelerator: Accelerator, model, optimizer, lr_scheduler, ema) -> dict:
    """Load a verified checkpoint into the run; returns its trainer counters.

    ValueError (naming the checkpoint) if it does not fit this run's model or optimizer, e.g.
    after a config change; the generators are restored last, after every other check.
    """
    name, parts = checkpoint.folder.name, checkpoint.components
    weights = parts.get("model.safetensors")
    expected = model.state_dict()
    if not isinstance(weights, dict) or {k: tuple(v.shape) for k, v in weights.items()} != {
        k: tuple(v.shape) for k, v in expected.items()
    }:
        raise ValueError(
            f"resume: {name} holds weights of another model than this config builds "
            "(was model_size, resolution, patch or position_encoding changed?)"
        )
    shadow = parts.get("ema.safetensors")
    shadow = shadow.get("shadow_params") if isinstance(shadow, dict) else None
    if ema is not None and (
        not isinstance(shadow, list) or [tuple(t.shape) for t in shadow] != [tuple(p.shape) for p in model.parameters()]
    ):
        raise ValueError(
            f"resume: {name} holds no EMA weights for this model; resume with --ema-decay 0 or "
            "from a checkpoint of a run with EMA"
        )
    try:
        model.load_state_dict(weights)
        optimizer.load_state_dict(parts["optimizer.safetensors"])
        lr_scheduler.load_state_dict(parts["scheduler.json"])
    except (KeyError, ValueError, RuntimeError) as error:
        raise ValueError(f"resume: {name} does not fit this run's optimizer or schedule: {error}") from None
    if ema is not None:
        ema.load_state_dict(parts["ema.safetensors"])
        ema.to(accelerator.device)
    trainer = checkpoint.trainer
    if accelerator.scaler is not None and trainer.get("grad_scaler"):
        accelerator.scaler.load_state_dict(trainer["grad_scaler"])
    accelerator.step = trainer["accelerator_step"]  # gradient accumulation's micro-batch counter
    set_rng_states(checkpoint.rng)
    return trainer


__all__ = [
    "RESUMABLE",
    "checkpoint_components",
    "describe_changes",
    "find_resume_point",
    "restore",
    "resume_changes",
    "trainer_counters",
]

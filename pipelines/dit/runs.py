"""A training run's folder as a model: the run itself, any of its checkpoints, its model folders.

    from axialrope.pipelines import load_run_pipeline
    pipe = load_run_pipeline("outputs/run")                                  # its pipeline/, or newest checkpoint
    pipe = load_run_pipeline("outputs/run/checkpoints/checkpoint-000500")   # that step's EMA weights

A run (pipelines/training/loop.py) writes pipeline-config/ (its pipeline without weights) at its start,
checkpoints/checkpoint-N/ as it goes, and model/, model_ema/ and pipeline/ at its end. The run folder
loads as its pipeline/ (a run that has not finished: its newest checkpoint); a checkpoint, model/ or
model_ema/ as those weights (a checkpoint's EMA ones, raw without EMA) in the run's pipeline-config/.
The layout is in docs/training.md ("The command").
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import diffusers
import torch

from axialrope.models import DiT

from ..training.checkpoints import (
    TRAINER_STATE,
    DamagedCheckpointError,
    checkpoint_step,
    latest_checkpoint,
    publish,
    read_checkpoint,
)
from ..training.train_state import StateFileError, read_state
from .model_files import check_config_fits, check_model_folder, check_pipeline_folder, read_json
from .pipeline import AxialDiTPipeline

PIPELINE = "pipeline"
PIPELINE_CONFIG = "pipeline-config"
CHECKPOINTS = "checkpoints"


def write_pipeline_config(pipe, folder: str | Path) -> Path:
    """Write what `save_pretrained` would, less the weights: model_index.json and the components' configs."""
    folder = Path(folder)
    pipe.save_config(folder)  # model_index.json: class names, objective, the components' classes
    pipe.transformer.save_config(folder / "transformer")
    pipe.scheduler.save_config(folder / "scheduler")
    return folder


def save_pipeline(pipe, folder: str | Path) -> Path:
    """`pipe.save_pretrained(folder)`, replacing a previous one only once the new one is complete (durably)."""
    folder = Path(folder)
    temporary = folder.with_name(folder.name + ".tmp")
    shutil.rmtree(temporary, ignore_errors=True)  # left by a crash during an earlier save
    pipe.save_pretrained(str(temporary))
    return publish(temporary, folder)


def pipeline_from_config(folder: str | Path, transformer, pipeline_class: type = AxialDiTPipeline):
    """The pipeline of a pipeline-config/ folder around `transformer` (a DiT of the config's architecture)."""
    folder = Path(folder)
    index = json.loads((folder / "model_index.json").read_text())
    library, scheduler_name = index["scheduler"]
    if library != "diffusers":  # never import a module because a JSON file names it
        raise ValueError(f"{str(folder)!r}: the scheduler must be a diffusers one, got {library}.{scheduler_name}")
    scheduler_class = getattr(diffusers, scheduler_name)
    scheduler = scheduler_class.from_config(scheduler_class.load_config(str(folder / "scheduler")))
    return pipeline_class(
        transformer, scheduler, index.get("class_names"), index.get("objective"), index.get("default_extrapolation")
    )


def _is_checkpoint(path: Path) -> bool:
    try:
        checkpoint_step(path)
    except ValueError:
        return False
    return path.parent.name == CHECKPOINTS


def _has_config(run: Path) -> bool:
    return (run / PIPELINE_CONFIG / "model_index.json").is_file()


def _looks_like_old_run(path: Path) -> bool:
    """A run folder, or a part of one, written before runs kept their pipeline-config/."""
    candidates = [path, path.parent] + ([path.parent.parent] if _is_checkpoint(path) else [])
    return any(
        (c / "config.yaml").is_file() and ((c / "model_ema").is_dir() or (c / CHECKPOINTS).is_dir()) for c in candidates
    )


def find_in_run(path: str | Path) -> tuple[str, Path, Path | None] | None:
    """What `path` is in a training run, or None if it is not part of one.

    Returns:
        ("pipeline", the run's pipeline/, None), ("checkpoint", a checkpoint folder, the run's
        pipeline-config/) or ("model", a DiT model folder, the run's pipeline-config/). ValueError
        for a run that has no weights yet, or one written before runs kept a pipeline-config/.
    """
    path = Path(path)
    if (path / PIPELINE / "model_index.json").is_file():
        return "pipeline", path / PIPELINE, None
    if _has_config(path):  # a run that has not finished (or was stopped): its newest checkpoint
        newest = latest_checkpoint(path / CHECKPOINTS)
        if newest is None:
            raise ValueError(
                f"{str(path)!r} is a training run with no weights yet: it has neither finished "
                f"(no {PIPELINE}/) nor saved a checkpoint"
            )
        return "checkpoint", newest, path / PIPELINE_CONFIG
    if _is_checkpoint(path) and _has_config(path.parent.parent):
        return "checkpoint", path, path.parent.parent / PIPELINE_CONFIG
    if (path / "config.json").is_file() and _has_config(path.parent):
        return "model", path, path.parent / PIPELINE_CONFIG
    if _looks_like_old_run(path):
        raise ValueError(
            f"{str(path)!r} belongs to a training run written before runs recorded their pipeline "
            f"({PIPELINE_CONFIG}/ is missing): wrap its weights once with "
            "AxialDiTPipeline.from_model(load_dit('<run>/model_ema'), class_names=[...]).save_pretrained(...)"
        )
    return None


def checkpoint_transformer(checkpoint: str | Path, config_folder: str | Path, argument: str = "checkpoint"):
    """The DiT of a checkpoint: the architecture of `config_folder`/transformer, the checkpoint's
    EMA weights (its raw ones if the run had no EMA). The checkpoint is verified first (every file
    present, with its size and digest; safetensors and JSON only), as a resume would, and the config
    against its weights before the model is built (`model_files.check_config_fits`; a ValueError names
    `argument`)."""

    checkpoint, config_folder = Path(checkpoint), Path(config_folder)
    try:  # a checkpoint of a run of several processes holds one RNG file each; read it as such
        processes = read_state(checkpoint / TRAINER_STATE).get("num_processes", 1)
    except (StateFileError, AttributeError):
        processes = 1  # read_checkpoint says what is wrong
    parts = read_checkpoint(checkpoint, num_processes=processes if isinstance(processes, int) else 1).components
    config_file = config_folder / "transformer" / "config.json"
    config = read_json(config_file, argument)
    if not isinstance(config, dict):
        raise ValueError(f"{argument}: {str(config_file)!r} must hold a JSON object")
    weights = parts.get("model.safetensors")
    shapes = {k: tuple(v.shape) for k, v in weights.items()} if isinstance(weights, dict) else {}
    check_config_fits(config, shapes, argument, config_file, str(checkpoint / "model.safetensors"))
    transformer = DiT.from_config({k: v for k, v in config.items() if not k.startswith("_")})
    transformer.load_state_dict(parts["model.safetensors"])  # buffers, and the parameters of a run without EMA
    shadow = parts.get("ema.safetensors")
    if isinstance(shadow, dict) and shadow.get("shadow_params") is not None:
        ema, parameters = shadow["shadow_params"], list(transformer.parameters())
        if len(ema) != len(parameters):
            raise ValueError(
                f"checkpoint {str(checkpoint)!r}: its EMA holds {len(ema)} tensors, the model {len(parameters)}"
            )
        with torch.no_grad():
            for parameter, average in zip(parameters, ema, strict=True):
                parameter.copy_(average)
    return transformer.eval()


def _transformer(kind: str, source: Path, config_folder: Path | None, dtype: torch.dtype | None = None):

    if kind == "checkpoint":
        transformer = checkpoint_transformer(source, config_folder)
        # nn.Module.to, not ModelMixin.to: diffusers' warns of float32-only modules on every dtype cast,
        # even with none listed (the DiT has none)
        return transformer if dtype is None else torch.nn.Module.to(transformer, dtype=dtype)
    folder = source if kind == "model" else source / "transformer"
    check_model_folder(folder, "model")  # whole safetensors that fit config.json, before a model is built
    return DiT.from_pretrained(str(folder), use_safetensors=True, **({} if dtype is None else {"torch_dtype": dtype}))


def check_run_part(path: str | Path, argument: str) -> bool:
    """Whether `path` is part of a training run (see `find_in_run`); if it is, ValueError (naming
    `argument`) unless its weights are whole: a pipeline or model folder's safetensors fit their
    config, a checkpoint passes the checks a resume makes."""
    found = find_in_run(path)
    if found is None:
        return False
    kind, source, config_folder = found
    if kind == "pipeline":
        check_pipeline_folder(source, argument)
    elif kind == "model":
        check_model_folder(source, argument)
    else:
        try:
            checkpoint_transformer(source, config_folder, argument)
        except DamagedCheckpointError as error:
            raise ValueError(f"{argument}: checkpoint {str(source)!r} is damaged: {error}") from None
    return True


def load_run_pipeline(path: str | Path, pipeline_class: type = AxialDiTPipeline, **kwargs):
    """The pipeline of a training run folder, one of its checkpoints or its model/ or model_ema/ folder (see the
    module docstring). kwargs: diffusers' loader's for a finished run; else only dtype / torch_dtype.
    FileNotFoundError if `path` does not exist, ValueError if it is no part of a run."""
    if not Path(path).is_dir():
        raise FileNotFoundError(f"model folder {str(path)!r} does not exist")
    found = find_in_run(path)
    if found is None:
        raise ValueError(
            f"{str(path)!r} is no part of a training run (a run folder, one of its checkpoints, its "
            f"model/ or model_ema/); a pipeline folder loads with "
            f"{pipeline_class.__name__}.from_pretrained"
        )
    kind, source, config_folder = found
    if kind == "pipeline":
        check_pipeline_folder(source, "model")  # as for a checkpoint or model folder: checked before it is built
        return pipeline_class.from_pretrained(source, **kwargs)
    kwargs.pop("use_safetensors", None)  # these folders are read from safetensors only anyway
    dtype, torch_dtype = kwargs.pop("dtype", None), kwargs.pop("torch_dtype", None)
    dtype = dtype if dtype is not None else torch_dtype
    if kwargs:
        raise TypeError(f"loading a {kind} folder takes only dtype (or torch_dtype), got {sorted(kwargs)}")
    return pipeline_from_config(config_folder, _transformer(kind, source, config_folder, dtype), pipeline_class)


def load_run_transformer(path: str | Path):
    """The DiT of a run folder, checkpoint or model folder (the weights its pipeline would hold); None if
    `path` is no part of a run."""
    found = find_in_run(path)
    return None if found is None else _transformer(*found)


__all__ = [
    "PIPELINE",
    "PIPELINE_CONFIG",
    "check_run_part",
    "checkpoint_transformer",
    "find_in_run",
    "load_run_pipeline",
    "load_run_transformer",
    "pipeline_from_config",
    "save_pipeline",
    "write_pipeline_config",
]

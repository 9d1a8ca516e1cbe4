"""The models shipped with the package (pipelines/dit/assets/, diffusers format), by name.

    from axialrope.pipelines.dit.bundled import bundled_model_path
    pipe = AxialDiTPipeline.from_pretrained(bundled_model_path("shapes-rope"))

They were trained by benchmarks/train_bundled.sh (docs/training.md, "Bundled models").
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import torch

from .model_files import check_model_folder, check_pipeline_folder

BUNDLED_MODELS: dict[str, str] = {
    "shapes-rope": "image DiT (mini, patch 4) with axial RoPE, 32x32 procedural shapes, 6 classes",
    "shapes-sincos": "the same with absolute sin-cos positions (the extrapolation baseline)",
    "moving-shapes-rope": "video DiT (mini, patch 1x4x4) with 3D axial RoPE, 8 frames of 32x32 moving shapes, "
    "started from shapes-rope",
    "textures-rope": "image DiT (mini, patch 4) with axial RoPE, 32x32 procedural textures, 4 classes",
    "textures-sincos": "the same with absolute sin-cos positions",
}
DEFAULT_MODEL = "shapes-rope"


def assets_folder() -> Path:
    """The folder holding the bundled pipelines (inside the installed package)."""
    return Path(str(resources.files("axialrope.pipelines.dit") / "assets"))


def bundled_model_path(name: str = DEFAULT_MODEL) -> Path:
    """The folder of bundled model `name` (one of BUNDLED_MODELS)."""
    if name not in BUNDLED_MODELS:
        raise ValueError(f"unknown bundled model {name!r}; choose one of {sorted(BUNDLED_MODELS)}")
    return assets_folder() / name


def resolve_model(model: str | None) -> Path:
    """A model argument: None (the default bundled model), a bundled name, or a folder."""
    if model is None:
        return bundled_model_path(DEFAULT_MODEL)
    if model in BUNDLED_MODELS and not Path(model).exists():
        return bundled_model_path(model)
    return Path(model)


def load_dit(model: str | Path):
    """The DiT of a bundled name, a pipeline folder (its transformer/), a model folder (`save_pretrained`
    of a DiT, e.g. a training run's model_ema/), a training run folder or one of its checkpoints (the
    weights of the run's pipeline: EMA, or raw without EMA; see `runs`)."""
    from axialrope.models import DiT  # heavy: keeps --help fast

    from .runs import load_run_transformer  # heavy: keeps --help fast

    folder = resolve_model(str(model))
    for candidate in (folder / "transformer", folder):
        if (candidate / "config.json").is_file():
            check_model_folder(candidate, "model")  # whole safetensors that fit config.json, or a ValueError
            return DiT.from_pretrained(str(candidate), use_safetensors=True)
    transformer = load_run_transformer(folder) if folder.is_dir() else None
    if transformer is not None:
        return transformer
    if not folder.is_dir():
        raise FileNotFoundError(f"model folder {str(model)!r} does not exist (nor is it a bundled model name)")
    raise ValueError(
        f"{str(model)!r} is neither a DiT model folder (config.json), a pipeline folder (transformer/) "
        "nor a training run or checkpoint"
    )


def load_pipeline(model: str | None, device: str = "auto"):
    """The AxialDiTPipeline of a bundled name or a folder: a pipeline, a training run, a checkpoint or
    a run's model folder (see `runs.load_run_pipeline`), on `device` ("auto": cuda if available), bf16 on
    cuda. diffusers' "Loading pipeline components" bar stays off (the load is instant)."""
    from diffusers.utils import logging as diffusers_logging  # heavy: keeps --help fast

    from .pipeline import AxialDiTPipeline  # heavy: keeps --help fast
    from .runs import find_in_run, load_run_pipeline  # heavy: keeps --help fast

    path = resolve_model(model)
    load = AxialDiTPipeline.from_pretrained  # it says what is wrong with a folder that is neither
    if (path / "model_index.json").is_file():
        check_pipeline_folder(path, "--model")
    elif path.is_dir() and find_in_run(path) is not None:
        load = load_run_pipeline
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    dtype = torch.bfloat16 if torch.device(device).type == "cuda" else torch.float32
    bars_were_on = diffusers_logging.is_progress_bar_enabled()
    diffusers_logging.disable_progress_bar()
    try:
        return load(path, dtype=dtype, use_safetensors=True).to(device)
    finally:
        if bars_were_on:
            diffusers_logging.enable_progress_bar()


__all__ = [
    "BUNDLED_MODELS",
    "DEFAULT_MODEL",
    "assets_folder",
    "bundled_model_path",
    "load_dit",
    "load_pipeline",
    "resolve_model",
]

"""Training, sampling, data and evaluation on top of `axialrope.models` (installed as `axialrope.pipelines`).

    from axialrope.pipelines import AxialDiTPipeline, bundled_model_path
    pipe = AxialDiTPipeline.from_pretrained(bundled_model_path("shapes-rope"))
    images = pipe(class_labels=["circle"], height=64, width=64, extrapolation="pi").images

    from axialrope.pipelines import TrainConfig, load_run_pipeline, train
    train(TrainConfig(data="shapes", output_dir="outputs/run", max_steps=200))
    pipe = load_run_pipeline("outputs/run")            # a run, one of its checkpoints, its model_ema/

    from axialrope.pipelines import calibrate
    calibrate(pipe, "photos/", scales=[1.5, 2])         # its default extrapolation, measured on your images

The subpackages say their job: `data/` (procedural scenes, folders, buckets, video I/O,
text), `training/` (config, loop, checkpoints, outputs), `sampling/` (the pipeline, output
writers, bundled models), `evaluation/` (metrics, calibration), `checks/` (peers for the
factorization checks) and `cli/` (the `axialrope` command). Below them all: `limits` (what an input
may hold), `memory` (what fits), `paths` (checked, atomic writes) and `objectives`. The names below
load on first use, so that `import axialrope.pipelines` (and `axialrope check`) does not pay for
diffusers and accelerate.
Importing `AxialDiTPipeline` registers it with diffusers, so that `DiffusionPipeline.from_pretrained`
finds it as well (`sampling/registration.py`).
"""

from __future__ import annotations

import importlib

# public name -> module under axialrope.pipelines that defines it
_EXPORTS: dict[str, str] = {
    "AxialDiTPipeline": "sampling.pipeline",
    "AxialDiTPipelineOutput": "sampling.pipeline",
    "BUNDLED_MODELS": "sampling.bundled",
    "bundled_model_path": "sampling.bundled",
    "load_dit": "sampling.bundled",
    "load_pipeline": "sampling.bundled",
    "load_run_pipeline": "sampling.runs",
    "TrainConfig": "training.config",
    "TrainResult": "training.loop",
    "train": "training.loop",
    "train_lm": "training.text_lm",
    "SceneConfig": "data.scenes",
    "sample_scenes": "data.scenes",
    "render_images": "data.render",
    "render_videos": "data.render",
    "ShapesDataset": "data.procedural",
    "TexturesDataset": "data.procedural",
    "PhotographsDataset": "data.photographs",
    "MovingShapesDataset": "data.procedural",
    "ImageFolderDataset": "data.folders",
    "VideoFolderDataset": "data.folders",
    "SyntheticLanguage": "data.text",
    "calibrate": "evaluation.calibrate",
    "swd": "evaluation.metrics",
    "video_swd": "evaluation.metrics",
    "shape_persistence": "evaluation.metrics",
    "perplexity": "evaluation.text_lm",
    "passkey_accuracy": "evaluation.text_lm",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module 'axialrope.pipelines' has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))

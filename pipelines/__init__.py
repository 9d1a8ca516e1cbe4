"""Training, sampling, data and evaluation on top of `axialrope.models` (installed as `axialrope.pipelines`).

    from axialrope.pipelines import AxialDiTPipeline, bundled_model_path
    pipe = AxialDiTPipeline.from_pretrained(bundled_model_path("shapes-rope"))
    images = pipe(class_labels=["circle"], height=64, width=64, extrapolation="pi").images

    from axialrope.pipelines import TrainConfig, load_run_pipeline, train
    train(TrainConfig(data="shapes", output_dir="outputs/run", max_steps=200))
    pipe = load_run_pipeline("outputs/run")            # a run, one of its checkpoints, its model_ema/

    from axialrope.pipelines import calibrate
    calibrate(pipe, "photos/", scales=[1.5, 2])         # its default extrapolation, measured on your images
    calibrate(pipe, None, scales=[2])                   # no real images: the reference-free score

The subpackages say their job: `data/` (procedural scenes, folders, buckets, video I/O,
text), `dit/` (the DiT's diffusers pipeline, its schedulers and default extrapolation, the model,
pipeline and run folders it loads, the bundled models), `training/` (config, loop, checkpoints,
outputs), `sampling/` (output writers, diffusers' own pipelines), `evaluation/` (metrics,
calibration), `checks/` (peers for the factorization checks) and `cli/` (the `axialrope` command).
`data/` imports none of the others and `dit/` only training's checkpoint reader (`dit/runs.py` loads a
run as a model); training and calibration call each other (a run may calibrate at its end, and a
calibration reads its run's config); `sampling/` and `cli/` sit on top.
Below them all: `limits` (what an input
may hold), `memory` (what fits), `paths` (checked, atomic writes) and `objectives`. The names below
load on first use, so that `import axialrope.pipelines` (and `axialrope check`) does not pay for
diffusers and accelerate.
Importing `AxialDiTPipeline` registers it with diffusers, so that `DiffusionPipeline.from_pretrained`
finds it as well (`dit/registration.py`).
"""

from __future__ import annotations

import importlib

# public name -> module under axialrope.pipelines that defines it
_EXPORTS: dict[str, str] = {
    "AxialDiTPipeline": "dit.pipeline",
    "AxialDiTPipelineOutput": "dit.pipeline",
    "BUNDLED_MODELS": "dit.bundled",
    "bundled_model_path": "dit.bundled",
    "load_dit": "dit.bundled",
    "load_pipeline": "dit.bundled",
    "load_run_pipeline": "dit.runs",
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
    "self_reference_score": "evaluation.self_reference",
    "image_repetition": "evaluation.repetition",
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

"""Sampling diffusers' own pipelines (FluxPipeline, WanPipeline, ...) with an extrapolation method.

    pipe = load_family_pipeline("path/to/FLUX.1-dev")                    # a folder, or a hub id
    images = generate(pipe, "dype-yarn", prompt="a fox", height=2048, width=2048)

`is_family_model` tells `axialrope sample` / `compare` whether --model names such a pipeline
(a folder whose model_index.json names a diffusers pipeline other than this project's
AxialDiTPipeline, or a hub id) rather than one of the project's own DiTs. bf16 on CUDA.
"""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Sequence
from pathlib import Path

import torch

from axialrope.validation import is_int

from ..dit.bundled import BUNDLED_MODELS
from ..dit.registration import LEGACY_CLASS_NAMES

OWN_PIPELINE_NAMES = ("AxialDiTPipeline", *LEGACY_CLASS_NAMES)  # this project's, under any name it had

HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")  # owner/name


def pipeline_class_of(folder: Path) -> str | None:
    """The `_class_name` of a folder's model_index.json, or None."""
    index = folder / "model_index.json"
    if not index.is_file():
        return None
    try:
        return json.loads(index.read_text()).get("_class_name")
    except (OSError, ValueError):
        return None


def is_family_model(model: str | None) -> bool:
    """Whether --model names a diffusers pipeline of another family (a folder or a hub id)."""
    if model is None:
        return False
    path = Path(model)
    if path.exists():
        name = pipeline_class_of(path) if path.is_dir() else None
        return name is not None and name not in OWN_PIPELINE_NAMES
    return model not in BUNDLED_MODELS and bool(HUB_ID.match(model))


def transformer_class_of(folder: Path) -> str | None:
    """The class name of a pipeline folder's `transformer` (model_index.json), or None."""
    try:
        return json.loads((Path(folder) / "model_index.json").read_text()).get("transformer", [None, None])[1]
    except (OSError, ValueError, IndexError, TypeError, AttributeError):
        return None


def video_of_folder(model: str) -> bool | None:
    """Whether a local pipeline folder's transformer makes video (by its registered family); None if unknown."""
    from axialrope.models.integrations.registry import family_for_class  # heavy: keeps --help fast

    family = family_for_class(transformer_class_of(Path(model)))
    return None if family is None else family.video


def check_family_folder(model: str) -> None:
    """Raises ValueError, before any weight is read, when a local folder's transformer is of no
    registered family (the message names the supported classes)."""
    from axialrope.models.integrations.registry import (  # heavy: keeps --help fast
        UNREACHED,
        family_for_class,
        supported_classes,
    )

    if not Path(model).is_dir():
        return
    name = transformer_class_of(Path(model))
    if name is None:
        raise ValueError(f"{model}'s model_index.json names no transformer to extrapolate")
    if name in UNREACHED:
        raise ValueError(f"{model}'s transformer {name} cannot be extrapolated: {UNREACHED[name]}")
    if family_for_class(name) is None:
        raise ValueError(
            f"{model}'s transformer {name} is of no registered family; supported: {', '.join(supported_classes())}"
        )


def load_family_pipeline(model: str, device: str = "auto", dtype: torch.dtype | None = None):
    """The diffusers pipeline in a folder (or a hub id, through diffusers), on `device`, in `dtype` (default bf16
    on CUDA, else float32).

    Raises ValueError with one line when it cannot be loaded (not a folder and not reachable on
    the hub, a folder whose transformer is of no registered family, a pipeline without a transformer).
    """
    from diffusers import DiffusionPipeline  # heavy: keeps --help fast
    from diffusers.utils import logging as diffusers_logging  # heavy: keeps --help fast

    check_family_folder(model)
    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    if dtype is None:
        dtype = torch.bfloat16 if torch.device(device).type == "cuda" else torch.float32
    local = Path(model).is_dir()
    verbosity = diffusers_logging.get_verbosity()
    diffusers_logging.set_verbosity_error()  # the hub's retries and warnings would bury the one line we print
    try:
        pipe = DiffusionPipeline.from_pretrained(model, dtype=dtype)
    except Exception as error:  # noqa: BLE001  (diffusers raises OSError, ValueError, hub errors, ...)
        where = "from the folder" if local else "(not a local folder; diffusers could not get it from the Hub)"
        first_line = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise ValueError(f"could not load {model!r} {where}: {first_line}") from error
    finally:
        diffusers_logging.set_verbosity(verbosity)
    if getattr(pipe, "transformer", None) is None:
        raise ValueError(f"{type(pipe).__name__} has no transformer to extrapolate")
    pipe.set_progress_bar_config(disable=True)
    return pipe.to(device)


def is_video_pipeline(pipe) -> bool:
    """Whether the pipeline makes video: its __call__ takes a frame count, or (where it takes neither a
    frame count nor images per prompt) its transformer's family makes video. Kandinsky 5's image
    pipeline shares the video transformer, so the call decides before the family does."""

    from axialrope.models.integrations.registry import family_of  # heavy: keeps --help fast

    parameters = inspect.signature(type(pipe).__call__).parameters
    if "num_frames" in parameters or "frames" in parameters:
        return True
    if "num_images_per_prompt" in parameters:
        return False
    return family_of(pipe.transformer).video


def call_kwargs(
    pipe,
    prompt: str,
    height: int | None,
    width: int | None,
    frames: int | None,
    steps: int | None,
    guidance: float | None,
    seed: int,
    num: int,
    negative_prompt: str | None,
) -> dict:
    """Keyword arguments for the family pipeline's __call__ ("pt" output, a seeded CPU generator)."""
    video = is_video_pipeline(pipe)
    if frames is not None and not video:
        raise ValueError(f"--frames given, but {type(pipe).__name__} makes images")
    for name, value in (("height", height), ("width", width), ("frames", frames), ("steps", steps), ("num", num)):
        if value is not None and (not is_int(value) or value <= 0):
            raise ValueError(f"--{name} must be a positive integer, got {value}")
    kwargs = dict(
        prompt=prompt, height=height, width=width, generator=torch.Generator().manual_seed(seed), output_type="pt"
    )
    kwargs["num_videos_per_prompt" if video else "num_images_per_prompt"] = num
    if frames is not None:
        kwargs["num_frames"] = frames
    if steps is not None:
        kwargs["num_inference_steps"] = steps
    if guidance is not None:
        kwargs["guidance_scale"] = guidance
    if negative_prompt is not None:
        kwargs["negative_prompt"] = negative_prompt
    return fit_to_call(pipe, {k: v for k, v in kwargs.items() if v is not None})


def fit_to_call(pipe, kwargs: dict) -> dict:
    """`kwargs` under the names the pipeline's __call__ takes (SanaVideoPipeline's `frames`; the count per
    prompt as num_images_per_prompt or num_videos_per_prompt).

    Raises ValueError naming what the pipeline needs that the command does not pass (an image for
    ChronoEdit, Framepack, Wan Animate) or what it does not take (`guidance_scale` for a pipeline
    driven by a guider).
    """
    parameters = inspect.signature(type(pipe).__call__).parameters
    name = type(pipe).__name__
    if "num_frames" in kwargs and "num_frames" not in parameters and "frames" in parameters:
        kwargs["frames"] = kwargs.pop("num_frames")
    for given, taken in (
        ("num_videos_per_prompt", "num_images_per_prompt"),
        ("num_images_per_prompt", "num_videos_per_prompt"),
    ):
        if given in kwargs and given not in parameters and taken in parameters:
            kwargs[taken] = kwargs.pop(given)
    plain = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    needed = [n for n, p in list(parameters.items())[1:] if p.kind in plain and p.default is inspect.Parameter.empty]
    missing = [n for n in needed if n not in kwargs]
    if missing:
        raise ValueError(f"{name} needs {', '.join(missing)}, which this command does not pass")
    if not any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        unknown = [k for k in kwargs if k not in parameters]
        if unknown:
            raise ValueError(f"{name} takes no {', '.join(unknown)}")
    return kwargs


def generate(pipe, extrapolation, trained_grid: Sequence[int] | None = None, options: dict | None = None, **kwargs):
    """Runs the pipeline with `extrapolation` applied (and removed after, also on error).

    Returns images (b, c, h, w) or videos (b, t, c, h, w), float in [0, 1] on the CPU.
    """

    from axialrope.models import apply_extrapolation  # heavy: keeps --help fast

    handle = apply_extrapolation(pipe, extrapolation, trained_grid=trained_grid, **(options or {}))
    try:
        with torch.no_grad():
            output = pipe(**kwargs)
    finally:
        handle.remove()
    result = output.frames if hasattr(output, "frames") else output.images
    result = torch.as_tensor(result) if not isinstance(result, torch.Tensor) else result
    return result.float().clamp(0, 1).cpu()


__all__ = [
    "call_kwargs",
    "check_family_folder",
    "fit_to_call",
    "generate",
    "is_family_model",
    "is_video_pipeline",
    "load_family_pipeline",
    "pipeline_class_of",
    "transformer_class_of",
    "video_of_folder",
]

"""Pre-flight checks of the CLI: what `train`, `sample` and `compare` verify before any work or output.

    try:
        check_sample_arguments(args)          # device, --out, numbers: before the model loads
        pipe = load_pipeline(...)             # the model folder is checked as it loads
        check_sampling(pipe, kwargs)          # memory for the requested size, before sampling
    except PREFLIGHT_ERRORS as error:
        return usage_error("sample", error)   # one line on stderr, exit code 2

Each check raises a ValueError naming the flag and what was expected; `usage_error` prints
it as the one-line usage error every subcommand gives (exit code 2). `train`'s pre-flight is
`TrainConfig.validate` and the checks `training.loop.train` makes before its first write (the
run folder, the data, the resume, memory, disk), for Python callers of `train` as well.
The bounds themselves live in `limits.py` (inputs) and `memory.py` (what fits).
"""

from __future__ import annotations

import argparse
import difflib
import math
import sys
from pathlib import Path

import torch

from ..dit.bundled import BUNDLED_MODELS
from ..limits import MAX_FPS, MIN_FPS, check_count, check_side, shown
from ..limits import MAX_GUIDANCE_SCALE as MAX_GUIDANCE
from ..memory import check_sampling_memory, check_steps
from ..paths import check_free_space, check_output_file
from ..sampling.diffusers_families import HUB_ID

PREFLIGHT_ERRORS = (ValueError, TypeError, FileNotFoundError, NotADirectoryError)


def usage_error(command: str, error: BaseException | str) -> int:
    """Print `axialrope COMMAND: message` on one line of stderr; returns the exit code 2."""
    message = " ".join(str(error).split())  # a multi-line message still makes one line
    print(f"axialrope {command}: {message}", file=sys.stderr)
    return 2


def check_device(device: str, argument: str = "--device") -> str:
    """`device` if it names a device this machine has ("auto", "cpu", "cuda", "cuda:N", "mps")."""
    if device == "auto":
        return device
    try:
        parsed = torch.device(device)
    except (RuntimeError, TypeError):
        raise ValueError(f"{argument} {device!r}: expected auto, cpu, cuda, cuda:N or mps") from None
    if parsed.type == "cuda":
        if not torch.cuda.is_available():
            raise ValueError(f"{argument} {device}: no CUDA GPU is available here; use --device cpu (or auto)")
        if parsed.index is not None and parsed.index >= torch.cuda.device_count():
            raise ValueError(f"{argument} {device}: this machine has {torch.cuda.device_count()} CUDA device(s)")
    elif parsed.type == "mps":
        if not torch.backends.mps.is_available():
            raise ValueError(f"{argument} {device}: Apple MPS is not available here; use --device cpu (or auto)")
    elif parsed.type != "cpu":
        raise ValueError(f"{argument} {device!r}: expected auto, cpu, cuda, cuda:N or mps")
    return device


def check_model_argument(model: str | None, argument: str = "--model") -> None:
    """ValueError for a --model that looks like a local path (not a hub id "owner/name" whose first part is no
    folder here) but names no folder: a mistyped path is "no such folder", never a request to the hub."""
    if model is None or model in BUNDLED_MODELS or Path(model).exists():
        return
    path = Path(model)
    if HUB_ID.match(model) and not Path(model.split("/")[0]).is_dir():
        return  # a hub id, for diffusers to fetch
    parent = _nearest_folder(path)
    near = difflib.get_close_matches(path.name, [p.name for p in parent.iterdir()] if parent.is_dir() else [], n=3)
    near += [] if path.parent != Path(".") else difflib.get_close_matches(model, list(BUNDLED_MODELS), n=2)
    hint = f" (did you mean {', '.join(repr(n) for n in near)}?)" if near else ""
    raise ValueError(
        f"{argument} {model!r}: no such folder{hint}; give a model folder, a training run, one of "
        f"its checkpoints, a bundled model ({', '.join(BUNDLED_MODELS)}) or a hub id (owner/name)"
    )


def _nearest_folder(path: Path) -> Path:
    return next((p for p in path.parents if p.is_dir()), Path("."))


def check_sample_arguments(args: argparse.Namespace) -> None:
    """The flags `sample` and `compare` share, before the model loads: device, model, output path, numbers."""
    check_device(args.device)
    check_model_argument(args.model)
    check_output_file(args.out, "--out")
    for flag in ("height", "width", "frames"):
        value = getattr(args, flag, None)
        if value is not None and value <= 0:
            raise ValueError(f"--{flag} must be a positive number of pixels (frames), got {shown(value)}")
        if value is not None:
            check_side(value, f"--{flag}")
    for flag in ("num", "steps", "seed"):
        if getattr(args, flag, None) is not None:
            check_count(abs(getattr(args, flag)), f"--{flag}")
    if args.num is not None and args.num < 1:  # None: the model's default
        raise ValueError(f"--num must be a positive integer, got {args.num}")
    if args.steps is not None:
        if args.steps < 1:
            raise ValueError(f"--steps must be a positive integer, got {args.steps}")
        check_steps(args.steps, "--steps")
    if args.guidance is not None and not (math.isfinite(args.guidance) and 0 <= args.guidance <= MAX_GUIDANCE):
        raise ValueError(
            f"--guidance must be a number from 0 to {MAX_GUIDANCE:g} (1: no guidance), got {args.guidance}"
        )
    fps = getattr(args, "fps", None)
    if fps is not None and not (math.isfinite(fps) and MIN_FPS <= fps <= MAX_FPS):
        raise ValueError(
            f"--fps must be a number from {MIN_FPS:g} to {MAX_FPS:g} (a GIF's frame delay is whole "
            f"hundredths of a second), got {fps}"
        )


def check_sampling(pipe, kwargs: dict, out: Path | None = None) -> None:
    """Before sampling: ValueError, with a size and a --num that fit, if `pipe(**kwargs)` needs more memory than
    is free, or if the disk holding `out` has no room for the pictures."""
    labels = kwargs.get("class_labels")
    per_label = kwargs.get("num_images_per_prompt") or 1
    batch = len(labels) * per_label if labels is not None else kwargs.get("batch_size", 1)
    names = ("num_frames", "height", "width") if pipe.is_video else ("height", "width")
    shape = tuple(kwargs.get(n) or default for n, default in zip(names, pipe.trained_size, strict=True))
    guidance = labels is not None and kwargs.get("guidance_scale", 1.0) != 1.0
    model = pipe.transformer
    check_sampling_memory(
        model,
        batch,
        shape,
        guidance,
        model.device,
        "--num/--height/--width",
        steps=kwargs.get("num_inference_steps") or 0,
        per_batch=len(labels) if labels else 1,
    )
    if out is not None:  # uncompressed pixels, twice over for a video's GIF, PNG, frames and MP4, plus slack
        pixels = batch * 3 * math.prod(shape)
        check_free_space(out.parent, (4 if pipe.is_video else 1) * pixels + (1 << 20), "--out", "the samples")


__all__ = [
    "PREFLIGHT_ERRORS",
    "check_device",
    "check_model_argument",
    "check_sample_arguments",
    "check_sampling",
    "usage_error",
]

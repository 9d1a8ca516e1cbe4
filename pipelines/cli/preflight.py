"""Pre-flight checks of the CLI: what `train`, `sample` and `compare` verify before any work or output.

    try:
        check_sample_arguments(args)          # device, --out, numbers: before the model loads
        pipe = load_pipeline(...)             # the model folder is checked as it loads
        check_sampling(pipe, kwargs)          # memory for the requested size, before sampling
    except PREFLIGHT_ERRORS as error:
        return usage_error("sample", error)   # one line on stderr, exit code 2

Each check raises a ValueError naming the flag and what was expected; `usage_error` prints
it as the one-line usage error every subcommand gives (exit code 2). `train`'s pre-flight is
`TrainConfig.validate` (it checks --output-dir, --init-from and --resume too, for Python
callers of `train` as well), reported through `usage_error`.
"""

from __future__ import annotations

import argparse
import math
import sys

from ..paths import check_output_file

PREFLIGHT_ERRORS = (ValueError, TypeError, FileNotFoundError, NotADirectoryError)


def usage_error(command: str, error: BaseException | str) -> int:
    """Print `axialrope COMMAND: message` on one line of stderr; returns the exit code 2."""
    message = " ".join(str(error).split())  # a multi-line message still makes one line
    print(f"axialrope {command}: {message}", file=sys.stderr)
    return 2


def check_device(device: str, argument: str = "--device") -> str:
    """`device` if it names a device this machine has ("auto", "cpu", "cuda", "cuda:N", "mps")."""
    import torch

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


def check_sample_arguments(args: argparse.Namespace) -> None:
    """The flags `sample` and `compare` share, before the model loads: device, output path, numbers."""
    check_device(args.device)
    check_output_file(args.out, "--out")
    for flag in ("height", "width", "frames"):
        value = getattr(args, flag, None)
        if value is not None and value <= 0:
            raise ValueError(f"--{flag} must be a positive number of pixels (frames), got {value}")
    if args.num is not None and args.num < 1:  # None: the model's default
        raise ValueError(f"--num must be a positive integer, got {args.num}")
    if args.steps is not None and args.steps < 1:
        raise ValueError(f"--steps must be a positive integer, got {args.steps}")
    if args.guidance is not None and not (math.isfinite(args.guidance) and args.guidance >= 0):
        raise ValueError(f"--guidance must be a finite number >= 0 (1: no guidance), got {args.guidance}")
    fps = getattr(args, "fps", None)
    if fps is not None and not (math.isfinite(fps) and fps > 0):
        raise ValueError(f"--fps must be a positive number, got {fps}")


def check_sampling(pipe, kwargs: dict) -> None:
    """Before sampling: ValueError, with a size that fits, if `pipe(**kwargs)` needs more memory than is free."""
    from ..sampling.memory import check_sampling_memory

    labels = kwargs.get("class_labels")
    batch = len(labels) if labels is not None else kwargs.get("batch_size", 1)
    names = ("num_frames", "height", "width") if pipe.is_video else ("height", "width")
    shape = tuple(kwargs.get(n) or default for n, default in zip(names, pipe.trained_size, strict=True))
    guidance = labels is not None and kwargs.get("guidance_scale", 1.0) != 1.0
    model = pipe.transformer
    check_sampling_memory(model, batch, shape, guidance, model.device, "--height/--width")


__all__ = ["PREFLIGHT_ERRORS", "check_device", "check_sample_arguments", "check_sampling", "usage_error"]

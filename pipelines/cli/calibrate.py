"""`axialrope calibrate`: measure which extrapolation method your own model should use at each scale.

    axialrope calibrate --model outputs/photos                       # its training folder, scales 1.5 2 3
    axialrope calibrate --model outputs/photos --reference-dir photos/ --scales 2 4 --methods none pi yarn+entropy
    axialrope calibrate --model outputs/shapes --scales 2      # no real images at 64x64: the reference-free score

Samples the model with every method at each scale, scores each against real images prepared as training
prepares them (detail SWD over seeds, as benchmarks/extrapolation.py does), prints the table, saves
calibration.md, calibration.json and a labelled calibration-HxW.png per size (in <run>/calibration by
default), and records the best method per scale as the pipeline's `default_extrapolation`, which
`axialrope sample --extrapolation auto` (the default) then uses. docs/extrapolation.md says how long it takes.
Where no real images serve every size (no --reference-dir, and the run has no training folder or too few of its
images are large enough) and for a video model (in time: its scales lengthen the clip), it scores the samples
without real images, against the model's own samples at its trained size (the reference-free score), and says so.
"""

from __future__ import annotations

import argparse
import contextlib
import sys

from ..evaluation.calibrate import DEFAULT_NUM, DEFAULT_SCALES, DEFAULT_SEEDS, DEFAULT_STEPS
from ..sampling.diffusers_families import is_family_model
from ..training.run_folder import RunLock
from .calibrate_pipeline import add_pipeline_arguments, run_pipeline
from .preflight import PREFLIGHT_ERRORS, check_device, usage_error

INTERRUPTED = "nothing was recorded: the model's default_extrapolation and its calibration results are as they were"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--model",
        required=True,
        help="a training run (or one of its checkpoints or model folders) or a pipeline folder; "
        "its default_extrapolation is written",
    )
    parser.add_argument(
        "--reference-dir",
        default=None,
        help="folder of real images (class subfolders or flat) (default: the run's training folder; where it is "
        "missing or too few of its images are large enough: the reference-free score, without real images)",
    )
    parser.add_argument(
        "--scales",
        type=float,
        nargs="+",
        default=list(DEFAULT_SCALES),
        help="side / trained side (frames / trained frames for a video model), each above 1",
    )
    parser.add_argument(
        "--methods",
        nargs="+",
        default=None,
        help="NAME or NAME+entropy (default: every image method, and riflex for a video model, without and with "
        "entropy scaling)",
    )
    parser.add_argument("--num", type=int, default=DEFAULT_NUM, help="samples per seed and cell (and real images)")
    parser.add_argument("--steps", type=int, default=DEFAULT_STEPS, help="sampler steps")
    parser.add_argument("--seeds", type=int, default=DEFAULT_SEEDS, help="seeds per cell, at least 2")
    parser.add_argument(
        "--guidance",
        type=float,
        default=None,
        help="classifier-free guidance scale (default 2 with classes, 1 without)",
    )
    parser.add_argument("--out", default=None, help="folder of the results (default: <run>/calibration)")
    parser.add_argument("--device", default="auto", help="auto (cuda if available), cpu or cuda")
    add_pipeline_arguments(parser)  # a diffusers pipeline's own flags (calibrate_pipeline.py)


def run(args: argparse.Namespace) -> int:
    if is_family_model(args.model):  # a diffusers pipeline: calibrated on prompts against its own samples
        return run_pipeline(args)
    from ..evaluation.run_calibration import prepare  # heavy: keeps --help fast

    held = contextlib.ExitStack()  # the run's lock and the results', for the calibration's life
    try:
        check_device(args.device)
        job = prepare(
            args.model,
            args.reference_dir,
            args.scales,
            args.methods,
            args.num,
            args.steps,
            args.seeds,
            args.guidance,
            args.out,
            args.device,
        )
        if job.run_folder is not None:  # a training run writing this folder meanwhile: refused, before any work
            held.enter_context(RunLock(job.run_folder, report=print))
        held.enter_context(job.results)  # another calibration writing the same results: refused too
    except PREFLIGHT_ERRORS as error:
        held.close()
        return usage_error("calibrate", error)
    with held:
        try:
            job.run(progress=True)
        except OSError as error:
            where = f" {error.filename!r}" if getattr(error, "filename", None) else ""
            print(
                f"axialrope calibrate: could not write{where}: {error.strerror or error}; nothing was recorded: the "
                "model's default_extrapolation and its calibration results are as they were",
                file=sys.stderr,
            )
            return 1
        except (ValueError, RuntimeError) as error:  # during the work: samples that are not finite, ...
            message = " ".join(str(error).split())
            print(f"axialrope calibrate: {message}; the model's default is unchanged", file=sys.stderr)
            return 1
    return 0

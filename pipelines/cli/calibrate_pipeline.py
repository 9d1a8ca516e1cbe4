"""`axialrope calibrate --model M` for a diffusers pipeline (Flux, Qwen-Image, Wan, ...): its flags and its run.

    axialrope calibrate --model black-forest-labs/FLUX.1-dev --prompt "a fox in the snow" --prompt "a harbour" \\
        --sizes 1536x1536 2048x2048 1024x2048 --out outputs/flux-calibration
    accelerate launch -m axialrope.pipelines.cli calibrate --model ... (the same flags: the cells are shared)

No real images at the target sizes: the model's own samples at its trained size are the reference
(`evaluation/diffusers_calibration/`). Writes OUT/calibration.json, calibration.md and a picture per size; the
finished cells stay in OUT/cells, so the same command continues a killed run.
"""

from __future__ import annotations

import argparse
import contextlib
from pathlib import Path

import torch

from .preflight import PREFLIGHT_ERRORS, check_device, usage_error

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


class _Unset(list):
    """A shared flag's default for this project's own models, which a diffusers pipeline replaces by its own."""


class _UnsetInt(int):
    """As `_Unset`, for a number."""


def add_pipeline_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags of a diffusers pipeline's calibration; the shared ones (--scales, --num, --steps, --seeds) keep
    their defaults for this project's own models, and a pipeline gets its own where they are not given."""
    for action in parser._actions:  # marks the shared defaults, so that a pipeline tells them from given values
        if action.dest == "scales":
            action.default = _Unset(action.default)
        elif action.dest in ("num", "steps", "seeds") and isinstance(action.default, int):
            action.default = _UnsetInt(action.default)
    group = parser.add_argument_group(
        "diffusers pipelines (--model: a pipeline folder or hub id of a registered family)",
        "scored against the model's own samples at its trained size; there the shared flags default to --scales "
        "1.5 2, --num 1 a prompt, --steps the pipeline's own, --seeds 2, --out ./<model name>-calibration",
    )

    def add(flag: str, **kwargs) -> None:  # a flag the own models' calibration also takes is shared, not repeated
        if flag not in parser._option_string_actions:
            group.add_argument(flag, **kwargs)

    add(
        "--prompt",
        action="append",
        default=None,
        help="a text prompt (repeatable; default: none, give this or --prompts-file)",
    )
    add("--prompts-file", default=None, help="a text file of prompts, one a line (default: none)")
    add("--negative-prompt", default=None, help="for pipelines that take one (default: none)")
    add(
        "--sizes",
        nargs="+",
        default=None,
        metavar="HxW",
        help="pixel sizes beyond the trained one (default: --scales 1.5 2 for a pipeline)",
    )
    add(
        "--frames",
        type=int,
        nargs="+",
        default=None,
        help="frame counts, video pipelines (default: the trained frames)",
    )
    add(
        "--trained-grid",
        type=int,
        nargs="+",
        default=None,
        metavar="N",
        help="trained tokens, H W or T H W (default: the family's, docs/diffusers.md)",
    )
    add("--dtype", default="auto", choices=("auto", *DTYPES), help="auto: bfloat16 on CUDA")
    add("--search", action="store_true", help="also DyPE's exponent, YaRN's beta and RIFLEx's k over a small grid")
    add("--batch-size", type=int, default=None, help="samples a pipeline call at most (default all)")


def pipeline_settings(args: argparse.Namespace) -> dict:
    """`plan_pipeline`'s keyword arguments from the flags (the prompts and the shared flags' pipeline defaults);
    ValueError for flags that a diffusers pipeline does not take or that contradict each other."""
    from ..evaluation.diffusers_calibration.calibration import DEFAULT_PIPELINE_SEEDS, check_prompts, read_prompts_file

    if args.reference_dir is not None:
        raise ValueError(
            "--reference-dir is for this project's own models; a diffusers pipeline is calibrated against its own "
            "samples at its trained size (no real images at the target sizes are needed)"
        )
    if args.sizes is not None and not isinstance(args.scales, _Unset):
        raise ValueError("give --sizes or --scales, not both")
    prompts = list(args.prompt or [])
    if args.prompts_file is not None:
        prompts += read_prompts_file(args.prompts_file)
    if not prompts:
        raise ValueError(f"{args.model!r} is a diffusers pipeline: give --prompt (repeatable) or --prompts-file")
    scales = None if isinstance(args.scales, _Unset) else args.scales
    return dict(
        prompts=check_prompts(prompts),
        sizes=args.sizes,
        scales=scales,
        frames=args.frames,
        methods=args.methods,
        trained_grid=args.trained_grid,
        search=args.search,
        num=1 if isinstance(args.num, _UnsetInt) else args.num,
        steps=None if isinstance(args.steps, _UnsetInt) else args.steps,
        seeds=DEFAULT_PIPELINE_SEEDS if isinstance(args.seeds, _UnsetInt) else args.seeds,
        guidance_scale=args.guidance,
        negative_prompt=args.negative_prompt,
        batch_size=args.batch_size,
        out=args.out if args.out is not None else Path(args.model.rstrip("/")).name + "-calibration",
    )


def run_pipeline(args: argparse.Namespace) -> int:
    """`axialrope calibrate` on a diffusers pipeline: every check, then the cells, then the results."""
    from ..evaluation.diffusers_calibration.calibration import plan_pipeline, process_share, run_pipeline_job
    from ..locks import FileLock
    from ..paths import check_output_folder
    from ..sampling.diffusers_families import load_family_pipeline

    held = contextlib.ExitStack()
    try:
        check_device(args.device)
        settings = pipeline_settings(args)
        out = check_output_folder(settings["out"], "--out")
        share = process_share()
        device = args.device
        if share.count > 1 and device == "auto":
            device = str(share.device)
        dtype = None if args.dtype == "auto" else DTYPES[args.dtype]
        pipe = load_family_pipeline(args.model, device, dtype)
        model = str(Path(args.model).resolve()) if Path(args.model).is_dir() else args.model  # the cells' record
        job = plan_pipeline(pipe, model=model, **settings)
        if share.main:  # another calibration writing the same folder: refused before any work
            held.enter_context(
                FileLock(
                    out / ".calibration.axialrope-lock",
                    refuse=lambda holder: ValueError(
                        f"--out {str(out)!r}: another calibration is writing there ({holder})"
                    ),
                )
            )
    except PREFLIGHT_ERRORS as error:
        held.close()
        return usage_error("calibrate", error)
    with held:
        try:
            result = run_pipeline_job(job, progress=True, share=share)
        except KeyboardInterrupt:
            if share.main:
                print(f"\nthe finished cells stay in {out / 'cells'}: the same command continues from them")
            raise
    if share.main:
        print(result.table())
        print(
            f"wrote {out}/calibration.json, calibration.md and {len(result.targets)} picture(s) "
            f"({type(pipe).__name__}, {job.family.title}; reference: the model's own samples at "
            f"{job.geometry.trained.name})"
        )
    return 0


__all__ = ["add_pipeline_arguments", "pipeline_settings", "run_pipeline"]

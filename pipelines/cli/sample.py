"""`axialrope sample`: images or videos at any size, with a RoPE extrapolation method.

    axialrope sample --height 64 --width 64 --out outputs/sample.png          # bundled image model, 2x, auto
    axialrope sample --model outputs/run --classes circle ring --num 8 --extrapolation dype-yarn --entropy-scaling
    axialrope sample --model moving-shapes-rope --frames 16 --extrapolation riflex --out outputs/video.gif
    axialrope sample --model path/to/FLUX.1-dev --prompt "a fox in snow" --height 2048 --width 2048 --out fox.png
    axialrope sample --model path/to/FLUX.1-dev --calibration out/calibration.json --prompt "a fox" --width 2048

The output is one PNG grid (a row per class); a video model writes <out>.gif, <out>.png (a
row per frame), <out>.mp4 (with PyAV) and <out>_frames/, all published once complete. A
diffusers pipeline runs with `axialrope.models.apply_extrapolation`, bf16 on CUDA.
`--extrapolation auto` (the default) samples this project's DiTs with the method their
pipeline records for the requested scale; for diffusers pipelines auto is "none". With
`--calibration OUT/calibration.json` (what `axialrope calibrate` writes) auto takes the band of
that calibration for the requested size and aspect instead, for both kinds of model.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import functools
import re
import sys
import time
from pathlib import Path

import torch

from axialrope import Extrapolation

from ..dit.bundled import BUNDLED_MODELS, DEFAULT_MODEL, load_pipeline
from ..dit.extrapolation_names import AUTO, is_auto, make_extrapolation
from ..paths import check_name_fits
from ..publishing import OutputSet
from ..sampling.diffusers_families import (
    call_kwargs,
    generate,
    is_family_model,
    is_video_pipeline,
    load_family_pipeline,
    video_of_folder,
)
from .preflight import PREFLIGHT_ERRORS, check_model_argument, check_sample_arguments, check_sampling, usage_error

INTERRUPTED = "nothing was written: the files at --out are as they were"
DIT_NUM, DIT_STEPS = 4, 20  # --num and --steps for this project's DiTs (diffusers pipelines have their own)
# the scheduler names of pipelines/dit/schedulers.py, spelt here so --help does not import diffusers
SCHEDULER_HELP = (
    "a diffusers scheduler for the model's objective: euler, heun, dpm++ or unipc for flow matching; "
    "ddpm, ddim, euler, dpm++ or unipc for DDPM models (default: the model's own, e.g. euler)"
)


def add_model_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments `sample` and `compare` share: model, size, labels or prompt, seed, sampler, device."""
    parser.add_argument(
        "--model",
        default=None,
        help=f"a pipeline folder, a training run's folder (its pipeline/), one of its checkpoints, "
        f"a bundled model ({', '.join(BUNDLED_MODELS)}) (default: {DEFAULT_MODEL}), or a "
        "diffusers pipeline (folder or hub id) of Flux, Qwen-Image, Wan, HunyuanVideo, "
        "CogVideoX or LTX-Video",
    )
    parser.add_argument("--height", type=int, default=None, help="pixels (default: the trained height)")
    parser.add_argument("--width", type=int, default=None, help="pixels (default: the trained width)")
    parser.add_argument("--frames", type=int, default=None, help="frames, video models only (default: trained)")
    parser.add_argument(
        "--classes",
        nargs="+",
        default=None,
        help="class names, or ids (0, 1, ...) where no class has that name; a grid row each "
        "(default: every class; none for an unconditional model)",
    )
    parser.add_argument(
        "--num",
        type=int,
        default=None,
        help=f"samples per class (or in all, unconditional; default {DIT_NUM}); per prompt for a "
        "diffusers pipeline (default 1)",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the initial noise")
    parser.add_argument(
        "--steps",
        type=int,
        default=None,
        help=f"sampler steps (default: {DIT_STEPS}) for this project's DiTs; a diffusers pipeline's own otherwise",
    )
    parser.add_argument("--scheduler", default=None, metavar="NAME", help=SCHEDULER_HELP)
    parser.add_argument("--prompt", default=None, help="the text prompt, for diffusers pipelines (default: none)")
    parser.add_argument(
        "--negative-prompt", default=None, help="negative prompt, for diffusers pipelines that take one (default: none)"
    )
    parser.add_argument(
        "--trained-grid",
        type=int,
        nargs="+",
        default=None,
        metavar="N",
        help="tokens the model was trained at, H W or T H W (diffusers pipelines; default: the "
        "family's, see docs/diffusers.md)",
    )
    parser.add_argument(
        "--guidance",
        type=float,
        default=None,
        help="classifier-free guidance scale, 0 to 100 (default 2 with classes, 1 without)",
    )
    parser.add_argument(
        "--option",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="an Extrapolation parameter, e.g. beta_fast=32, dype_lambda_t=2, dype_beta=1.25,0.75 "
        "or riflex_index=4; shift_cap=false for Flux (repeatable; default: none, the "
        "method's own)",
    )
    parser.add_argument("--device", default="auto", help="auto (cuda if available), cpu or cuda; bf16 on cuda")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_model_arguments(parser)
    parser.add_argument(
        "--fps", type=float, default=4.0, help="frames per second of a video model's GIF and MP4, 0.01 to 100"
    )
    parser.add_argument(
        "--extrapolation",
        default=AUTO,
        help="auto (default): the method the model's pipeline records for the requested scale (its "
        "model_index.json default_extrapolation, or axialrope's fallback; plain none at or below "
        "the trained size; none for diffusers pipelines, the family's own behaviour; with --calibration, "
        "that calibration's band for the requested size and aspect), or one of "
        "none, pi, ntk, yarn, riflex, dype-ntk, dype-yarn, kappa-pi, kappa-ntk or kappa-yarn; "
        "NAME+entropy adds entropy scaling",
    )
    parser.add_argument(
        "--entropy-scaling",
        action="store_true",
        help="scale attention logits by sqrt(log N / log N_train) (default: off)",
    )
    parser.add_argument(
        "--calibration",
        default=None,
        metavar="CALIBRATION_JSON",
        help="a calibration.json (axialrope calibrate writes OUT/calibration.json): --extrapolation auto then "
        "samples with its band for the requested size and aspect, with that band's entropy scaling and options "
        "(a diffusers pipeline or this project's model alike; default: none)",
    )
    parser.add_argument(
        "--out",
        default="outputs/sample.png",
        help="output file: .png/.jpg/.webp for images; .png, .gif or .mp4 for video (all three are "
        "written); published once complete, so a failed write keeps the files already there",
    )


# the registered families' own options (a test keeps them equal)
FAMILY_OPTIONS = ("shift_cap", "dype_variant", "reference")
INTEGER_OPTIONS = ("temporal_axis", "riflex_index")
PAIR_OPTIONS = ("dype_beta", "dype_gamma")


def parse_options(options: list[str]) -> dict:
    """KEY=VALUE strings -> Extrapolation keyword arguments (numbers become floats, true/false bools,
    "a,b" pairs tuples of floats)."""
    known = ({f.name for f in dataclasses.fields(Extrapolation)} - {"method", "entropy_scaling"}) | set(FAMILY_OPTIONS)
    values = {}
    for option in options:
        key, sep, text = option.partition("=")
        if not sep or key not in known:
            raise ValueError(f"--option {option!r}: expected KEY=VALUE with KEY one of {sorted(known)}")
        try:
            if text.lower() in ("true", "false"):
                values[key] = text.lower() == "true"
            elif key in PAIR_OPTIONS:
                values[key] = tuple(float(v) for v in text.split(","))
            else:
                values[key] = int(text) if key in INTEGER_OPTIONS else float(text)
        except ValueError:
            values[key] = text  # the Extrapolation names what it expected
    return values


def split_family_options(options: dict) -> tuple[dict, dict]:
    """(Extrapolation options, apply_extrapolation's own options)."""
    return (
        {k: v for k, v in options.items() if k not in FAMILY_OPTIONS},
        {k: v for k, v in options.items() if k in FAMILY_OPTIONS},
    )


def check_calibration_flags(args: argparse.Namespace, extrapolation_options: dict) -> None:
    """ValueError for flags that `--calibration` does not take beside it: a method other than auto, entropy
    scaling or Extrapolation options (the calibration's bands carry their own)."""
    if args.extrapolation != AUTO:
        raise ValueError(
            f"--calibration is read by --extrapolation auto (the default), not --extrapolation {args.extrapolation}"
        )
    if args.entropy_scaling:
        raise ValueError("--entropy-scaling with --calibration: the calibration's bands say where it is on")
    if extrapolation_options:
        raise ValueError(
            f"--option {next(iter(extrapolation_options))} with --calibration: the calibration's bands carry each "
            "method's options"
        )


def read_calibration_flag(args: argparse.Namespace, video: bool | None = None):
    """The `Calibration` --calibration names, checked (its errors before the weights load)."""
    from axialrope.models.calibration_file import read_calibration  # heavy (axialrope.models): keeps --help fast

    return read_calibration(args.calibration, video=video)


def use_calibration(pipe, args: argparse.Namespace) -> None:
    """Makes `pipe` (this project's) pick auto's method from --calibration's bands instead of its own
    default_extrapolation, for this command only; ValueError where its trained grid is not the model's."""
    calibration = read_calibration_flag(args, video=pipe.is_video)
    if calibration.trained_grid != tuple(pipe.transformer.base_grid):
        raise ValueError(
            f"--calibration {calibration.source}: its bands are relative to trained_grid "
            f"{list(calibration.trained_grid)}, this model's is {list(pipe.transformer.base_grid)} tokens"
        )
    pipe.set_default_extrapolation(list(calibration.bands))


def plain_extrapolation(entropy_scaling: bool):
    """What auto is for a diffusers pipeline: "none" (the family's own behaviour; they record no default)."""
    return Extrapolation("none", entropy_scaling=entropy_scaling)


def class_label(pipe, text: str | int) -> str | int:
    """A --classes value as the pipeline's label: a class name first (folders named "1", "2", "3" are names),
    else an id written in ASCII digits (a digit of another script, such as "٣", is not an id)."""
    if not isinstance(text, str) or text in (pipe.config.class_names or []):
        return text
    return int(text) if re.fullmatch(r"[0-9]+", text) else text


def sampling_kwargs(pipe, args: argparse.Namespace) -> tuple[dict, int]:
    """Keyword arguments for `pipe(...)` from the shared flags, and the samples per grid row."""
    conditional = pipe.transformer.null_class is not None
    for flag, value in (
        ("--prompt", args.prompt),
        ("--negative-prompt", args.negative_prompt),
        ("--trained-grid", args.trained_grid),
    ):
        if value is not None:
            raise ValueError(
                f"{flag} is for diffusers pipelines; this project's DiT takes --classes and knows its trained size"
            )
    num = DIT_NUM if args.num is None else args.num
    if num < 1:
        raise ValueError(f"--num must be a positive integer, got {num}")
    if args.classes is not None and not conditional:
        raise ValueError("--classes given, but this model is unconditional")
    labels = None
    if conditional:
        names = args.classes if args.classes is not None else list(range(pipe.transformer.config.num_classes))
        labels = [pipe.class_id(class_label(pipe, n)) for n in names]
    guidance = args.guidance if args.guidance is not None else (2.0 if conditional else 1.0)
    # --num samples per class (the pipeline keeps each label's samples together: a grid row), or in all
    per_label = dict(num_images_per_prompt=num) if conditional else dict(batch_size=num)
    kwargs = dict(
        class_labels=labels,
        **per_label,
        height=args.height,
        width=args.width,
        num_frames=args.frames,
        num_inference_steps=DIT_STEPS if args.steps is None else args.steps,
        guidance_scale=guidance,
        scheduler=args.scheduler,
        generator=torch.Generator().manual_seed(args.seed),
        output_type="pt",
    )
    return kwargs, num


def family_pipeline(args: argparse.Namespace):
    """The diffusers pipeline --model names, loaded (after the flags it needs are checked)."""
    if args.prompt is None:
        raise ValueError(f"{args.model!r} is a diffusers pipeline: give --prompt")
    if args.classes is not None:
        raise ValueError("--classes is for this project's class-conditional DiTs; a diffusers pipeline takes --prompt")
    return load_family_pipeline(args.model, args.device)


def family_kwargs(pipe, args: argparse.Namespace) -> dict:
    """The diffusers pipeline's __call__ keyword arguments from the shared flags (a fresh seeded generator)."""
    return call_kwargs(
        pipe,
        args.prompt,
        args.height,
        args.width,
        args.frames,
        args.steps,
        args.guidance,
        args.seed,
        1 if args.num is None else args.num,
        args.negative_prompt,
    )


def run_family(args: argparse.Namespace) -> int:
    """`axialrope sample` on a diffusers pipeline (Flux, Qwen-Image, Wan, HunyuanVideo, CogVideoX, LTX-Video)."""
    started = time.perf_counter()
    with contextlib.ExitStack() as held:  # the outputs' lock, from before the model loads to after the writes
        try:
            check_sample_arguments(args)  # device, --out, numbers: before the model loads
            expected = video_of_folder(args.model)
            if expected is not None:  # a local folder: check --out before loading the weights
                check_output(args.out, video=expected)
            extrapolation_options, family_options = split_family_options(parse_options(args.option))
            if args.calibration is not None:  # auto, chosen per call by apply_extrapolation from the bands
                check_calibration_flags(args, extrapolation_options)
                read_calibration_flag(args)
                extrapolation, family_options = AUTO, {**family_options, "calibration": args.calibration}
            else:
                extrapolation = make_extrapolation(
                    args.extrapolation, args.entropy_scaling, extrapolation_options, auto=plain_extrapolation
                )
            outputs = held.enter_context(sample_outputs(args.out))  # another command writing them: refused
            pipe = family_pipeline(args)
            video = is_video_pipeline(pipe)
            out = check_output(args.out, video=video)
            result = generate(pipe, extrapolation, args.trained_grid, family_options, **family_kwargs(pipe, args))
        except PREFLIGHT_ERRORS as error:
            return usage_error("sample", error)
        try:
            frames, images = (result, None) if video else (None, result)
            shown = write_samples(frames, images, out, args.fps, result.shape[0], outputs)
        except OSError as error:
            return write_error("sample", out, error)
    size = tuple(result.shape[-2:])
    if args.calibration is not None:
        method = f"{AUTO} from {args.calibration}"
    else:
        method = f"{AUTO}: {extrapolation.method}" if is_auto(args.extrapolation) else extrapolation.method
        method += " + entropy scaling" if extrapolation.entropy_scaling else ""
    print(
        f"wrote {shown} ({size[0]}x{size[1]}{f', {result.shape[1]} frames' if video else ''}, "
        f"{type(pipe).__name__}, extrapolation {method}) in {time.perf_counter() - started:.1f} s"
    )
    return 0


def check_output(out: str, video: bool):
    """--out as a Path, if its suffix suits the model and the names a video writes beside it fit the disk."""
    from ..sampling.outputs import check_output_path  # heavy: keeps --help fast

    out = check_output_path(out, video=video)
    if video:  # <stem>.gif, <stem>.mp4 and the folder <stem>_frames/ go beside it
        check_name_fits(out.with_name(out.stem + "_frames"), "--out")
    return out


def sample_outputs(out: str):
    """The set of files `sample` writes for `--out` (`publishing.OutputSet`), keyed by its stem: held for the run,
    so a second command writing them is refused, and a set a killed run left half-published is put back."""
    out = Path(out)
    return OutputSet(out.parent, out.stem, argument="--out")


def write_samples(frames, images, out, fps: float, per_row: int, outputs) -> str:
    """Write the samples (see `outputs.save_videos`, `outputs.save_grid`) as `out` and publish them as one set
    through `outputs` (`sample_outputs`): a video's GIF, PNG, MP4 and frames all replace the previous ones at once,
    and a failed write (a full disk) leaves the files already there. The paths, shown."""
    from ..sampling.outputs import save_grid, save_videos  # heavy: keeps --help fast

    if frames is not None:
        members = [out.stem + suffix for suffix in (".gif", ".png", ".mp4", "_frames")]
        written = outputs.publish(members, lambda staging: save_videos(frames, staging / out.name, fps=fps))
        return ", ".join(str(p) for p in written.values())
    return str(outputs.publish([out.name], lambda staging: save_grid(images, staging / out.name, per_row=per_row)))


def write_error(command: str, out, error: OSError) -> int:
    """One line on stderr for an output that could not be written; returns the exit code 1."""
    print(
        f"axialrope {command}: could not write {str(out)!r}: {error.strerror or error}; nothing of it was written "
        "and files already there are kept",
        file=sys.stderr,
    )
    return 1


def describe(pipe, extrapolation, scheduler: str | None, steps: int, auto: bool = False) -> str:
    """The sampling settings as a result line shows them, e.g. "extrapolation yarn (beta_fast=16.0)
    + entropy scaling, 20 steps of unipc": the method, its options that differ from the defaults, the sampler.
    `auto`: the method is what --extrapolation auto resolved to ("extrapolation auto: pi + entropy scaling")."""
    defaults = Extrapolation(extrapolation.method)
    options = [
        f"{f.name}={getattr(extrapolation, f.name)}"
        for f in dataclasses.fields(Extrapolation)
        if f.name not in ("method", "entropy_scaling") and getattr(extrapolation, f.name) != getattr(defaults, f.name)
    ]
    method = extrapolation.method + (f" ({', '.join(options)})" if options else "")
    method += " + entropy scaling" if extrapolation.entropy_scaling else ""
    method = f"{AUTO}: {method}" if auto else method
    return f"extrapolation {method}, {steps_of(steps, sampler_name(pipe, scheduler))}"


def steps_of(steps: int, sampler: str) -> str:
    """ "20 steps of euler", "1 step of unipc"."""
    return f"{steps} step{'s' if steps != 1 else ''} of {sampler}"


def sampler_name(pipe, scheduler: str | None) -> str:
    """The short name of the scheduler a call with `scheduler` (a name or None) samples with."""
    from ..dit.schedulers import make_scheduler, scheduler_name  # heavy: keeps --help fast

    return scheduler_name(make_scheduler(scheduler, pipe.scheduler) if scheduler else pipe.scheduler)


def sample_size(samples) -> str:
    """ "4 images of 64x64" or "2 videos of 16 frames of 32x32" from the "pt" output (b, c, h, w) or (b, t, c, h, w)."""
    count, size = samples.shape[0], f"{samples.shape[-2]}x{samples.shape[-1]}"
    if samples.ndim == 5:
        return f"{count} video{'s' if count != 1 else ''} of {samples.shape[1]} frames of {size}"
    return f"{count} image{'s' if count != 1 else ''} of {size}"


def run(args: argparse.Namespace) -> int:
    try:
        check_model_argument(args.model)  # a mistyped local path must not be taken for a hub id
    except PREFLIGHT_ERRORS as error:
        return usage_error("sample", error)
    if is_family_model(args.model):
        return run_family(args)
    started = time.perf_counter()
    with contextlib.ExitStack() as held:  # the outputs' lock, from before the model loads to after the writes
        try:
            check_sample_arguments(args)  # device, --out, numbers: before the model loads
            outputs = held.enter_context(sample_outputs(args.out))  # another command writing them: refused
            if args.calibration is not None:  # its flags and file: before the model loads
                check_calibration_flags(args, split_family_options(parse_options(args.option))[0])
                read_calibration_flag(args)
            pipe = load_pipeline(args.model, args.device)
            out = check_output(args.out, video=pipe.is_video)
            options, family_options = split_family_options(parse_options(args.option))
            if family_options:
                raise ValueError(f"--option {next(iter(family_options))} is for diffusers pipelines")
            if args.calibration is not None:
                use_calibration(pipe, args)  # auto picks from its bands, not the pipeline's model_index.json
            # auto: the pipeline's pick for the requested size (a bad size raises the pipeline's own error here)
            resolve = functools.partial(pipe.resolve_extrapolation, args.height, args.width, args.frames)
            extrapolation = make_extrapolation(args.extrapolation, args.entropy_scaling, options, auto=resolve)
            kwargs, per_row = sampling_kwargs(pipe, args)
            check_sampling(pipe, kwargs, out)  # memory for the requested size and --num, the disk: before sampling
            output = pipe(extrapolation=extrapolation, **kwargs)
        except PREFLIGHT_ERRORS as error:
            return usage_error("sample", error)
        try:
            shown = write_samples(output.frames, output.images, out, args.fps, per_row, outputs)
        except OSError as error:
            return write_error("sample", out, error)
    samples = output.frames if output.frames is not None else output.images
    steps = DIT_STEPS if args.steps is None else args.steps
    settings = describe(pipe, extrapolation, args.scheduler, steps, auto=is_auto(args.extrapolation))
    print(f"wrote {shown} ({sample_size(samples)}; {settings}) in {time.perf_counter() - started:.1f} s")
    return 0

"""`axialrope sample`: images or videos from a trained DiT at any size, with a RoPE extrapolation method.

    axialrope sample --height 64 --width 64 --out outputs/sample.png          # bundled image model, 2x its size
    axialrope sample --extrapolation dype-yarn --entropy-scaling --height 96 --width 96
    axialrope sample --model moving-shapes-rope --frames 16 --extrapolation riflex --out outputs/video.gif
    axialrope sample --model outputs/run --classes circle ring --num 8 --seed 3 --scheduler unipc
    axialrope sample --model outputs/run/checkpoints/checkpoint-000500 --out outputs/step500.png

The output is one PNG grid (a row per class); a video model writes frames side by side as
<out>.gif, <out>.png (a row per frame), <out>.mp4 (if PyAV is installed) and <out>_frames/.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import time

from ..sampling.bundled import BUNDLED_MODELS, DEFAULT_MODEL, load_pipeline

ENTROPY_SUFFIX = "+entropy"
# the scheduler names of pipelines/sampling/schedulers.py, spelt here so --help does not import diffusers
SCHEDULER_HELP = ("a diffusers scheduler for the model's objective: euler, heun, dpm++ or unipc for flow matching; "
                  "ddpm, ddim, euler, dpm++ or unipc for DDPM models (default: the model's own, e.g. euler)")


def add_model_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments `sample` and `compare` share: model, size, labels, seed, sampler, device."""
    parser.add_argument("--model", default=None,
                        help=f"a pipeline folder, a training run's folder (its pipeline/), one of its checkpoints, "
                             f"or a bundled model ({', '.join(BUNDLED_MODELS)}) (default: {DEFAULT_MODEL})")
    parser.add_argument("--height", type=int, default=None, help="pixels (default: the trained height)")
    parser.add_argument("--width", type=int, default=None, help="pixels (default: the trained width)")
    parser.add_argument("--frames", type=int, default=None, help="frames, video models only (default: trained)")
    parser.add_argument("--classes", nargs="+", default=None,
                        help="class names or ids, a grid row each (default: every class; none for an unconditional model)")
    parser.add_argument("--num", type=int, default=4, help="samples per class (or in all, unconditional)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the initial noise")
    parser.add_argument("--steps", type=int, default=20, help="sampler steps")
    parser.add_argument("--scheduler", default=None, metavar="NAME", help=SCHEDULER_HELP)
    parser.add_argument("--guidance", type=float, default=None,
                        help="classifier-free guidance scale (default 2 with classes, 1 without)")
    parser.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                        help="an Extrapolation parameter, e.g. beta_fast=32 or dype_lambda_t=2 "
                             "(repeatable; default: none, the method's own)")
    parser.add_argument("--device", default="auto", help="auto (cuda if available), cpu or cuda; bf16 on cuda")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_model_arguments(parser)
    parser.add_argument("--fps", type=float, default=4.0, help="frames per second of a video model's GIF and MP4")
    parser.add_argument("--extrapolation", default="none",
                        help="none, pi, ntk, yarn, riflex, dype-pi, dype-ntk or dype-yarn; NAME+entropy adds entropy scaling")
    parser.add_argument("--entropy-scaling", action="store_true",
                        help="scale attention logits by sqrt(log N / log N_train) (default: off)")
    parser.add_argument("--out", default="outputs/sample.png", help="output file: .png/.jpg/.webp for images; .png, .gif or .mp4 for video (all three are written)")


def parse_options(options: list[str]) -> dict:
    """KEY=VALUE strings -> Extrapolation keyword arguments (numbers become floats, true/false bools)."""
    from axialrope import Extrapolation

    known = {f.name for f in dataclasses.fields(Extrapolation)} - {"method", "entropy_scaling"}
    values = {}
    for option in options:
        key, sep, text = option.partition("=")
        if not sep or key not in known:
            raise ValueError(f"--option {option!r}: expected KEY=VALUE with KEY one of {sorted(known)}")
        if text.lower() in ("true", "false"):
            values[key] = text.lower() == "true"
        else:
            try:
                values[key] = int(text) if key == "temporal_axis" else float(text)
            except ValueError:
                values[key] = text
    return values


def make_extrapolation(name: str, entropy_scaling: bool = False, options: dict | None = None):
    """An `Extrapolation` from "NAME" or "NAME+entropy" and keyword options."""
    from axialrope import Extrapolation

    if name.endswith(ENTROPY_SUFFIX):
        name, entropy_scaling = name.removesuffix(ENTROPY_SUFFIX), True
    return Extrapolation(name, entropy_scaling=entropy_scaling, **(options or {}))


def sampling_kwargs(pipe, args: argparse.Namespace) -> tuple[dict, int]:
    """Keyword arguments for `pipe(...)` from the shared flags, and the samples per grid row."""
    import torch

    conditional = pipe.transformer.null_class is not None
    if args.num < 1:
        raise ValueError(f"--num must be a positive integer, got {args.num}")
    if args.classes is not None and not conditional:
        raise ValueError("--classes given, but this model is unconditional")
    labels = None
    if conditional:
        names = args.classes if args.classes is not None else list(range(pipe.transformer.config.num_classes))
        labels = [int(n) if isinstance(n, str) and n.isdigit() else n for n in names]
    guidance = args.guidance if args.guidance is not None else (2.0 if conditional else 1.0)
    # --num samples per class (the pipeline keeps each label's samples together: a grid row), or in all
    per_label = dict(num_images_per_prompt=args.num) if conditional else dict(batch_size=args.num)
    kwargs = dict(class_labels=labels, **per_label, height=args.height, width=args.width,
                  num_frames=args.frames, num_inference_steps=args.steps, guidance_scale=guidance,
                  scheduler=args.scheduler, generator=torch.Generator().manual_seed(args.seed), output_type="pt")
    return kwargs, args.num


def describe(pipe, extrapolation, scheduler: str | None, steps: int) -> str:
    """The sampling settings as a result line shows them, e.g. "extrapolation yarn (beta_fast=16.0)
    + entropy scaling, 20 steps of unipc": the method, its options that differ from the defaults, the sampler."""
    from axialrope import Extrapolation

    defaults = Extrapolation(extrapolation.method)
    options = [f"{f.name}={getattr(extrapolation, f.name)}" for f in dataclasses.fields(Extrapolation)
               if f.name not in ("method", "entropy_scaling")
               and getattr(extrapolation, f.name) != getattr(defaults, f.name)]
    method = extrapolation.method + (f" ({', '.join(options)})" if options else "")
    method += " + entropy scaling" if extrapolation.entropy_scaling else ""
    return f"extrapolation {method}, {steps_of(steps, sampler_name(pipe, scheduler))}"


def steps_of(steps: int, sampler: str) -> str:
    """"20 steps of euler", "1 step of unipc"."""
    return f"{steps} step{'s' if steps != 1 else ''} of {sampler}"


def sampler_name(pipe, scheduler: str | None) -> str:
    """The short name of the scheduler a call with `scheduler` (a name or None) samples with."""
    from ..sampling.schedulers import make_scheduler, scheduler_name

    return scheduler_name(make_scheduler(scheduler, pipe.scheduler) if scheduler else pipe.scheduler)


def sample_size(samples) -> str:
    """"4 images of 64x64" or "2 videos of 16 frames of 32x32" from the "pt" output (b, c, h, w) or (b, t, c, h, w)."""
    count, size = samples.shape[0], f"{samples.shape[-2]}x{samples.shape[-1]}"
    if samples.ndim == 5:
        return f"{count} video{'s' if count != 1 else ''} of {samples.shape[1]} frames of {size}"
    return f"{count} image{'s' if count != 1 else ''} of {size}"


def run(args: argparse.Namespace) -> int:
    from ..sampling.outputs import check_output_path, save_grid, save_videos

    from .preflight import check_sample_arguments, check_sampling

    started = time.perf_counter()
    try:
        check_sample_arguments(args)  # device, --out, numbers: before the model loads
        pipe = load_pipeline(args.model, args.device)
        out = check_output_path(args.out, video=pipe.is_video)
        if not args.fps > 0:
            raise ValueError(f"--fps must be a positive number, got {args.fps}")
        extrapolation = make_extrapolation(args.extrapolation, args.entropy_scaling, parse_options(args.option))
        kwargs, per_row = sampling_kwargs(pipe, args)
        check_sampling(pipe, kwargs)  # memory for the requested size, before sampling
        output = pipe(extrapolation=extrapolation, **kwargs)
    except (ValueError, TypeError, FileNotFoundError) as error:
        print(f"axialrope sample: {error}", file=sys.stderr)
        return 2
    if output.frames is not None:
        written = save_videos(output.frames, out, fps=args.fps)
        shown = ", ".join(str(p) for p in written.values())
        samples = output.frames
    else:
        shown = str(save_grid(output.images, out, per_row=per_row))
        samples = output.images
    print(f"wrote {shown} ({sample_size(samples)}; {describe(pipe, extrapolation, args.scheduler, args.steps)}) "
          f"in {time.perf_counter() - started:.1f} s")
    return 0

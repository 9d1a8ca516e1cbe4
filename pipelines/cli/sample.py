"""`axialrope sample`: images or videos from a trained DiT at any size, with a RoPE extrapolation method.

    axialrope sample --height 64 --width 64 --out outputs/sample.png          # bundled image model, 2x its size
    axialrope sample --extrapolation dype-yarn --entropy-scaling --height 96 --width 96
    axialrope sample --model moving-shapes-rope --frames 16 --extrapolation riflex --out outputs/video.gif
    axialrope sample --model outputs/run/pipeline --classes circle ring --num 8 --seed 3

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


def add_model_arguments(parser: argparse.ArgumentParser) -> None:
    """The arguments `sample` and `compare` share: model, size, labels, seed, sampler, device."""
    parser.add_argument("--model", default=None,
                        help=f"a pipeline folder or a bundled model ({', '.join(BUNDLED_MODELS)}); default {DEFAULT_MODEL}")
    parser.add_argument("--height", type=int, default=None, help="pixels (default: the trained height)")
    parser.add_argument("--width", type=int, default=None, help="pixels (default: the trained width)")
    parser.add_argument("--frames", type=int, default=None, help="frames, video models only (default: trained)")
    parser.add_argument("--classes", nargs="+", default=None,
                        help="class names or ids, a grid row each (default: every class; none for an unconditional model)")
    parser.add_argument("--num", type=int, default=4, help="samples per class (or in all, unconditional)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the initial noise")
    parser.add_argument("--steps", type=int, default=20, help="sampler steps")
    parser.add_argument("--guidance", type=float, default=None,
                        help="classifier-free guidance scale (default 2 with classes, 1 without)")
    parser.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                        help="an Extrapolation parameter, e.g. beta_fast=32 or dype_lambda_t=2 (repeatable)")
    parser.add_argument("--device", default="auto", help="auto (cuda if available), cpu or cuda; bf16 on cuda")
    parser.add_argument("--fps", type=float, default=4.0, help="frames per second of GIF/MP4 output")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_model_arguments(parser)
    parser.add_argument("--extrapolation", default="none",
                        help="none, pi, ntk, yarn, riflex, dype-ntk, dype-yarn, kappa-pi, kappa-ntk or kappa-yarn; NAME+entropy adds entropy scaling")
    parser.add_argument("--entropy-scaling", action="store_true", help="scale attention logits by sqrt(log N / log N_train)")
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
        labels = [label for label in labels for _ in range(args.num)]
    guidance = args.guidance if args.guidance is not None else (2.0 if conditional else 1.0)
    kwargs = dict(class_labels=labels, batch_size=args.num, height=args.height, width=args.width,
                  num_frames=args.frames, num_inference_steps=args.steps, guidance_scale=guidance,
                  generator=torch.Generator().manual_seed(args.seed), output_type="pt")
    return kwargs, args.num


def run(args: argparse.Namespace) -> int:
    from ..sampling.outputs import check_output_path, save_grid, save_videos

    started = time.perf_counter()
    try:
        pipe = load_pipeline(args.model, args.device)
        out = check_output_path(args.out, video=pipe.is_video)
        if not args.fps > 0:
            raise ValueError(f"--fps must be a positive number, got {args.fps}")
        extrapolation = make_extrapolation(args.extrapolation, args.entropy_scaling, parse_options(args.option))
        kwargs, per_row = sampling_kwargs(pipe, args)
        output = pipe(extrapolation=extrapolation, **kwargs)
    except (ValueError, TypeError, FileNotFoundError) as error:
        print(f"axialrope sample: {error}", file=sys.stderr)
        return 2
    if output.frames is not None:
        written = save_videos(output.frames, out, fps=args.fps)
        shown = ", ".join(str(p) for p in written.values())
        size = tuple(output.frames.shape[-2:])
    else:
        shown = str(save_grid(output.images, out, per_row=per_row))
        size = tuple(output.images.shape[-2:])
    print(f"wrote {shown} ({size[0]}x{size[1]}, extrapolation {args.extrapolation}"
          f"{' + entropy scaling' if extrapolation.entropy_scaling else ''}) in {time.perf_counter() - started:.1f} s")
    return 0

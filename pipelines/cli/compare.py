"""`axialrope compare`: the same seeds sampled with every extrapolation method, side by side in one labelled PNG.

    axialrope compare --height 64 --width 64 --out outputs/compare.png      # bundled image model
    axialrope compare --methods none yarn dype-yarn+entropy --classes circle --num 4
    axialrope compare --model moving-shapes-rope --frames 16 --out outputs/compare_video.png
    axialrope compare --model path/to/FLUX.1-dev --prompt "a fox" --height 2048 --width 2048 --steps 28

Each panel is one method's grid (a row per class; for video, a row per clip with its frames
left to right), under the method's name. Default methods: every one that applies to the
model (riflex only for video; a sin-cos model only has none, with and without entropy scaling).
A diffusers pipeline (Flux, Qwen-Image, Wan, ...) runs once per method with
`axialrope.models.apply_extrapolation`, the same seed each time.
"""

from __future__ import annotations

import argparse
import time

from einops import rearrange
from PIL import Image, ImageDraw, ImageFont

from axialrope.extrapolation import EXTRAPOLATION_METHODS

from ..dit.bundled import load_pipeline
from ..dit.extrapolation_names import ENTROPY_SUFFIX, make_extrapolation
from ..paths import write_beside
from ..sampling.diffusers_families import generate, is_family_model, is_video_pipeline
from .preflight import PREFLIGHT_ERRORS, check_model_argument, check_sample_arguments, check_sampling, usage_error
from .sample import (
    DIT_STEPS,
    add_model_arguments,
    family_kwargs,
    family_pipeline,
    parse_options,
    sample_size,
    sampler_name,
    sampling_kwargs,
    split_family_options,
    steps_of,
    write_error,
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_model_arguments(parser)
    parser.add_argument(
        "--methods",
        nargs="+",
        default=None,
        help="methods to compare, NAME or NAME+entropy (default: all that apply to the model)",
    )
    parser.add_argument("--out", default="outputs/compare.png", help="output PNG")


def default_methods(pipe, video: bool | None = None) -> list[str]:
    """Every method that applies to the pipeline's model, then `none` with entropy scaling."""
    if video is None:  # this project's AxialDiTPipeline
        if pipe.transformer.rope is None:
            return ["none", "none" + ENTROPY_SUFFIX]
        video = pipe.is_video
    methods = [m for m in EXTRAPOLATION_METHODS if m != "riflex" or video]
    return methods + ["none" + ENTROPY_SUFFIX]


def panel(images, video: bool, per_row: int | None = None):
    """One method's samples as a PIL grid: `per_row` images a row (default all), or a row per clip
    with its frames left to right."""
    from torchvision.transforms.functional import to_pil_image  # heavy: keeps --help fast
    from torchvision.utils import make_grid  # heavy: keeps --help fast

    if video:
        per_row = images.shape[1]
        images = rearrange(images, "b t c h w -> (b t) c h w")
    else:
        per_row = per_row or images.shape[0]
    return to_pil_image(make_grid(images.float(), nrow=per_row, padding=1, pad_value=1.0))


def run_family(args: argparse.Namespace) -> int:
    """`axialrope compare` on a diffusers pipeline: one panel per method, the same seed each."""
    from ..sampling.outputs import check_output_path  # heavy: keeps --help fast

    started = time.perf_counter()
    try:
        check_sample_arguments(args)  # device, --out, numbers: before the model loads
        out = check_output_path(args.out, video=False)  # one labelled picture, also for video models
        extrapolation_options, family_options = split_family_options(parse_options(args.option))
        pipe = family_pipeline(args)
        video = is_video_pipeline(pipe)
        methods = args.methods or default_methods(pipe, video)
        extrapolations = [make_extrapolation(name, options=extrapolation_options) for name in methods]
        panels = []
        for extrapolation in extrapolations:
            kwargs = family_kwargs(pipe, args)  # a fresh generator: the same seed per method
            panels.append(panel(generate(pipe, extrapolation, args.trained_grid, family_options, **kwargs), video))
    except PREFLIGHT_ERRORS as error:
        return usage_error("compare", error)
    try:
        write_beside(out, labelled_panels(panels, methods).save)
    except OSError as error:
        return write_error("compare", out, error)
    print(
        f"wrote {out} ({len(methods)} methods: {', '.join(methods)}, {type(pipe).__name__}) "
        f"in {time.perf_counter() - started:.1f} s"
    )
    return 0


def labelled_panels(panels: list, labels: list[str], gap: int = 6):
    """PIL images side by side, each under its label, on white; returns one PIL image."""
    font = ImageFont.load_default()
    text_height = 16
    width = sum(p.width for p in panels) + gap * (len(panels) + 1)
    height = max(p.height for p in panels) + text_height + 2 * gap
    canvas = Image.new("RGB", (width, height), "white")
    draw = ImageDraw.Draw(canvas)
    x = gap
    for panel, label in zip(panels, labels, strict=True):
        draw.text((x, gap // 2), label, fill="black", font=font)
        canvas.paste(panel, (x, text_height + gap))
        x += panel.width + gap
    return canvas


def run(args: argparse.Namespace) -> int:
    from ..sampling.outputs import check_output_path  # heavy: keeps --help fast

    try:
        check_model_argument(args.model)  # a mistyped local path must not be taken for a hub id
    except PREFLIGHT_ERRORS as error:
        return usage_error("compare", error)
    if is_family_model(args.model):
        return run_family(args)
    started = time.perf_counter()
    try:
        check_sample_arguments(args)  # device, --out, numbers: before the model loads
        pipe = load_pipeline(args.model, args.device)
        out = check_output_path(args.out, video=False)  # one labelled picture, also for video models
        methods = args.methods or default_methods(pipe)
        options, family_options = split_family_options(parse_options(args.option))
        if family_options:
            raise ValueError(f"--option {next(iter(family_options))} is for diffusers pipelines")
        extrapolations = [make_extrapolation(name, options=options) for name in methods]
        check_sampling(pipe, sampling_kwargs(pipe, args)[0], out)  # memory, --num, the disk: before the first method
        panels = []
        for extrapolation in extrapolations:
            kwargs, per_row = sampling_kwargs(pipe, args)  # a fresh generator: the same seeds per method
            output = pipe(extrapolation=extrapolation, **kwargs)
            if output.frames is not None:
                samples = output.frames
                panels.append(panel(output.frames, video=True))
            else:
                samples = output.images
                panels.append(panel(output.images, video=False, per_row=per_row))
    except PREFLIGHT_ERRORS as error:
        return usage_error("compare", error)
    try:
        write_beside(out, labelled_panels(panels, methods).save)
    except OSError as error:
        return write_error("compare", out, error)
    steps = DIT_STEPS if args.steps is None else args.steps
    print(
        f"wrote {out} ({len(methods)} methods: {', '.join(methods)}; each {sample_size(samples)}, "
        f"{steps_of(steps, sampler_name(pipe, args.scheduler))}) in {time.perf_counter() - started:.1f} s"
    )
    return 0

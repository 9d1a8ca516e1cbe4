"""`axialrope compare`: the same seeds sampled with every extrapolation method, side by side in one labelled PNG.

    axialrope compare --height 64 --width 64 --out outputs/compare.png      # bundled image model
    axialrope compare --methods none yarn dype-yarn+entropy --classes circle --num 4
    axialrope compare --model moving-shapes-rope --frames 16 --out outputs/compare_video.png

Each panel is one method's grid (a row per class; for video, a row per clip with its frames
left to right), under the method's name. Default methods: every one that applies to the
model (riflex only for video; a sin-cos model only has none, with and without entropy scaling).
"""

from __future__ import annotations

import argparse
import sys
import time

from ..sampling.bundled import load_pipeline
from .sample import (ENTROPY_SUFFIX, add_model_arguments, make_extrapolation, parse_options, sample_size,
                     sampler_name, sampling_kwargs, steps_of)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_model_arguments(parser)
    parser.add_argument("--methods", nargs="+", default=None,
                        help="methods to compare, NAME or NAME+entropy (default: all that apply to the model)")
    parser.add_argument("--out", default="outputs/compare.png", help="output PNG")


def default_methods(pipe) -> list[str]:
    """Every method that applies to the pipeline's model, then `none` with entropy scaling."""
    from axialrope.extrapolation import EXTRAPOLATION_METHODS

    if pipe.transformer.rope is None:
        return ["none", "none" + ENTROPY_SUFFIX]
    methods = [m for m in EXTRAPOLATION_METHODS if m != "riflex" or pipe.is_video]
    return methods + ["none" + ENTROPY_SUFFIX]


def labelled_panels(panels: list, labels: list[str], gap: int = 6):
    """PIL images side by side, each under its label, on white; returns one PIL image."""
    from PIL import Image, ImageDraw, ImageFont

    font = ImageFont.load_default()
    text_height = 16
    width = sum(p.width for p in panels) + gap * (len(panels) + 1)
    height = max(p.height for p in panels) + text_height + 2 * gap
    canvas = Image.new("RGB", (width, height), "white")
    draw = ImageDraw.Draw(canvas)
    x = gap
    for panel, label in zip(panels, labels):
        draw.text((x, gap // 2), label, fill="black", font=font)
        canvas.paste(panel, (x, text_height + gap))
        x += panel.width + gap
    return canvas


def run(args: argparse.Namespace) -> int:
    from einops import rearrange
    from torchvision.transforms.functional import to_pil_image
    from torchvision.utils import make_grid

    from ..sampling.outputs import check_output_path
    from .preflight import check_sample_arguments, check_sampling

    started = time.perf_counter()
    try:
        check_sample_arguments(args)  # device, --out, numbers: before the model loads
        pipe = load_pipeline(args.model, args.device)
        out = check_output_path(args.out, video=False)  # one labelled picture, also for video models
        methods = args.methods or default_methods(pipe)
        options = parse_options(args.option)
        extrapolations = [make_extrapolation(name, options=options) for name in methods]
        check_sampling(pipe, sampling_kwargs(pipe, args)[0])  # memory for the size, before the first method
        panels = []
        for extrapolation in extrapolations:
            kwargs, per_row = sampling_kwargs(pipe, args)  # a fresh generator: the same seeds per method
            output = pipe(extrapolation=extrapolation, **kwargs)
            if output.frames is not None:
                samples, per_row = output.frames, output.frames.shape[1]
                images = rearrange(output.frames, "b t c h w -> (b t) c h w")
            else:
                samples = images = output.images
            panels.append(to_pil_image(make_grid(images.float(), nrow=per_row, padding=1, pad_value=1.0)))
    except (ValueError, TypeError, FileNotFoundError) as error:
        print(f"axialrope compare: {error}", file=sys.stderr)
        return 2
    out.parent.mkdir(parents=True, exist_ok=True)
    labelled_panels(panels, methods).save(out)
    print(f"wrote {out} ({len(methods)} methods: {', '.join(methods)}; each {sample_size(samples)}, "
          f"{steps_of(args.steps, sampler_name(pipe, args.scheduler))}) in {time.perf_counter() - started:.1f} s")
    return 0

"""Every extrapolation method on a real pretrained diffusers model, beyond its trained size: one compare grid.

    python benchmarks/diffusers_highres.py --model black-forest-labs/FLUX.1-dev --prompt "a red fox in snow" \\
        --sizes 1024 2048 4096 --steps 28 --out docs/diffusers-flux.png
    python benchmarks/diffusers_highres.py --model Wan-AI/Wan2.1-T2V-1.3B-Diffusers --prompt "waves at dusk" \\
        --height 480 --width 832 --frames 81 161 --steps 50 --out docs/diffusers-wan.png

For a machine that holds the weights (a folder, or a hub id it can download) and a GPU (bf16);
a 4K Flux sample takes minutes per method there. For each size (and each frame count of a video
model) it runs every method that applies to the family (riflex only for video), with the same
seed, through `axialrope.models.apply_extrapolation`, and writes one labelled PNG per size: a
panel per method (for video the frames of the clip left to right). It prints, and writes as
<out>.csv, the seconds each sample took. Nothing here measures quality: look at the pictures,
and say which size and seed they are.
"""

from __future__ import annotations

import argparse
import csv
import time
from pathlib import Path

from axialrope.extrapolation import EXTRAPOLATION_METHODS
from axialrope.pipelines.cli.compare import labelled_panels, panel
from axialrope.pipelines.dit.extrapolation_names import ENTROPY_SUFFIX, make_extrapolation
from axialrope.pipelines.sampling.diffusers_families import (
    call_kwargs,
    generate,
    is_video_pipeline,
    load_family_pipeline,
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--model", required=True, help="a diffusers pipeline folder or hub id (Flux, Qwen-Image, Wan, ...)"
    )
    parser.add_argument("--prompt", required=True)
    parser.add_argument("--sizes", type=int, nargs="+", default=None, help="square image sizes in px")
    parser.add_argument("--height", type=int, default=None, help="px (with --width, instead of --sizes)")
    parser.add_argument("--width", type=int, default=None)
    parser.add_argument("--frames", type=int, nargs="+", default=[None], help="frame counts (video models)")
    parser.add_argument(
        "--methods", nargs="+", default=None, help=f"default: every method that applies, then none{ENTROPY_SUFFIX}"
    )
    parser.add_argument("--trained-grid", type=int, nargs="+", default=None, help="override the family's trained grid")
    parser.add_argument("--steps", type=int, default=None)
    parser.add_argument("--guidance", type=float, default=None)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--device", default="auto")
    parser.add_argument("--out", default="outputs/diffusers_highres.png", help="PNG; one per size, suffixed")
    args = parser.parse_args()

    pipe = load_family_pipeline(args.model, args.device)
    video = is_video_pipeline(pipe)
    methods = args.methods or [m for m in EXTRAPOLATION_METHODS if m != "riflex" or video] + ["none" + ENTROPY_SUFFIX]
    sizes = [(s, s) for s in args.sizes] if args.sizes else [(args.height, args.width)]
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    rows = []
    for height, width in sizes:
        for frames in args.frames:
            panels = []
            for name in methods:
                kwargs = call_kwargs(
                    pipe, args.prompt, height, width, frames, args.steps, args.guidance, args.seed, 1, None
                )
                started = time.perf_counter()
                result = generate(pipe, make_extrapolation(name), args.trained_grid, **kwargs)
                seconds = time.perf_counter() - started
                rows.append(
                    {
                        "height": height,
                        "width": width,
                        "frames": frames or "",
                        "method": name,
                        "seconds": f"{seconds:.1f}",
                    }
                )
                print(f"{height}x{width}{f'x{frames}' if frames else ''} {name}: {seconds:.1f} s", flush=True)
                panels.append(panel(result, video))
            tag = f"{height}x{width}" + (f"x{frames}" if frames else "")
            path = out.with_name(f"{out.stem}-{tag}{out.suffix}")
            labelled_panels(panels, methods).save(path)
            print(f"wrote {path}")
    with open(out.with_suffix(".csv"), "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)


if __name__ == "__main__":
    main()

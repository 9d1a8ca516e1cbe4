"""How much classifier-free guidance the bundled image models want, measured at their trained size.

Each bundled image model samples the same seeds and class labels at 32x32 for every guidance
scale; each cell is the Laplacian-pyramid SWD (x1e3, lower is better) against real renders
with the same labels, as in benchmarks/extrapolation.py, whose helpers this script reuses.

    python benchmarks/guidance.py                  # 32 images per cell, 20 steps
    python benchmarks/guidance.py --scales 1 2 4   # a shorter sweep

Writes benchmarks/results/guidance.{md,csv} and guidance_samples.png (a labelled row per scale).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch
from reporting import save_labelled_grid, write_table
from samples_and_real import FLOOR_SEED, REAL_SEED, Method, generate, real_images

from axialrope.pipelines.dit.bundled import bundled_model_path
from axialrope.pipelines.dit.pipeline import AxialDiTPipeline
from axialrope.pipelines.evaluation.metrics import swd


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scales", type=float, nargs="+", default=[1, 2, 3, 4, 5, 6], help="guidance scales")
    parser.add_argument("--models", nargs="+", default=["shapes-rope", "shapes-sincos"], help="bundled image models")
    parser.add_argument("--num", type=int, default=32, help="images per cell")
    parser.add_argument("--steps", type=int, default=20, help="sampler steps")
    parser.add_argument("--seed", type=int, default=0, help="noise seed")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's choice)")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results"), help="output folder")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    args.out.mkdir(parents=True, exist_ok=True)

    rows, grid_rows = [], {}
    for name in args.models:
        pipe = AxialDiTPipeline.from_pretrained(bundled_model_path(name))
        pipe.set_progress_bar_config(disable=True)
        height, width = pipe.trained_size
        real, labels = real_images(args.num, height, width, REAL_SEED)
        grid_rows.setdefault("real", real)
        scores = []
        for scale in args.scales:
            start = time.perf_counter()
            samples = generate(
                pipe, Method("none"), labels, {"height": height, "width": width}, args.steps, scale, args.seed
            )
            scores.append(swd(samples, real).mean)
            grid_rows[f"{name} g={scale:g}"] = samples
            print(f"{name} guidance {scale:g}: SWD {scores[-1]:.2f} ({time.perf_counter() - start:.1f} s)", flush=True)
        rows.append([name, *scores])
    floor = swd(real_images(args.num, height, width, FLOOR_SEED)[0], real).mean
    rows.append(["real vs real (floor)", *[floor] * len(args.scales)])
    write_table(args.out / "guidance", ["model"] + [f"g={s:g}" for s in args.scales], rows)
    save_labelled_grid(
        args.out / "guidance_samples.png", f"{height}x{width}, {args.steps} steps, same seeds", grid_rows, per_row=12
    )
    print((args.out / "guidance.md").read_text())


if __name__ == "__main__":
    main()

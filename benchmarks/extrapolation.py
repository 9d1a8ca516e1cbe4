"""Which extrapolation method works, measured: SWD of samples beyond the trained size.

Images: the bundled RoPE image model (trained at 32x32) and the sin-cos model trained the
same way sample a fixed set of seeds and class labels at 1x, 1.5x, 2x and 3x the trained
side and at two non-square shapes, with every method. Each cell is the Laplacian-pyramid
sliced Wasserstein distance (x1e3, lower is better) against real renders of the same size
from the procedural generator with the same labels; the SWD between two independent real
sets is the floor.

Video: the bundled video model (8 frames of 32x32) at 2x and 3x the frames and at 2x the
side: per-frame SWD, SWD of frame differences (motion), a repetition score (1: the video
loops back on itself) and shape persistence (1: the shapes' silhouettes move rigidly over
the trained clip length), with the real videos' scores as reference.

    python benchmarks/extrapolation.py            # full run (about 30 minutes on 2 CPU cores)
    python benchmarks/extrapolation.py --quick    # a few minutes: fewer samples, sizes, steps

Writes Markdown tables, CSVs, a plot of SWD against scale and a labelled sample grid per
size into --out (default benchmarks/results).
"""

from __future__ import annotations

import argparse
import csv
import math
import time
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import PIL.Image  # noqa: E402
import PIL.ImageDraw  # noqa: E402
import torch  # noqa: E402
from torchvision.utils import make_grid  # noqa: E402

from axialrope import Extrapolation  # noqa: E402
from axialrope.pipelines.sampling.bundled import bundled_model_path  # noqa: E402
from axialrope.pipelines.sampling.pipeline import AxialDiTPipeline  # noqa: E402
from axialrope.pipelines.evaluation.metrics import repetition_score, shape_persistence, swd, video_swd  # noqa: E402
from axialrope.pipelines.data.render import render_images, render_videos  # noqa: E402
from axialrope.pipelines.data.scenes import SceneConfig, sample_scenes  # noqa: E402


@dataclass(frozen=True)
class Method:
    """A row of the tables: an extrapolation method, optionally with entropy scaling."""

    name: str
    entropy_scaling: bool = False

    @property
    def label(self) -> str:
        return self.name + ("+entropy" if self.entropy_scaling else "")

    def extrapolation(self) -> Extrapolation:
        return Extrapolation(self.name, entropy_scaling=self.entropy_scaling)


ROPE_IMAGE_METHODS = [Method(m) for m in ("none", "pi", "ntk", "yarn", "kappa-pi", "kappa-ntk", "kappa-yarn")] + [
    Method("none", True), Method("ntk", True), Method("kappa-yarn", True)]
SINCOS_METHODS = [Method("none"), Method("none", True)]
VIDEO_METHODS = [Method(m) for m in ("none", "pi", "ntk", "yarn", "riflex", "kappa-pi", "kappa-ntk", "kappa-yarn")]

REAL_SEED, FLOOR_SEED = 1_000_001, 2_000_002  # scene families disjoint from training (seed 0)


def real_images(count: int, height: int, width: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(count, 3, h, w) renders in [0, 1] and their class labels."""
    scenes = sample_scenes(seed, range(count))
    return render_images(scenes, height, width), scenes.labels


def real_videos(count: int, frames: int, height: int, width: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """(count, 3, t, h, w) renders in [0, 1] and their class labels."""
    scenes = sample_scenes(seed, range(count))
    return render_videos(scenes, frames, height, width), scenes.labels


def fastest_shift(lag: int, height: int, width: int) -> int:
    """Pixels the fastest procedural shape can move along an axis in `lag` frames (shape persistence's max_shift)."""
    return math.ceil(SceneConfig().speed[1] * lag * max(height, width))


def generate(pipe: AxialDiTPipeline, method: Method, labels: torch.Tensor, size: dict, steps: int, guidance: float,
             seed: int) -> torch.Tensor:
    """Samples in [0, 1]: images (n, 3, h, w) or videos (n, 3, t, h, w)."""
    out = pipe(class_labels=labels.tolist(), num_inference_steps=steps, guidance_scale=guidance,
               generator=torch.Generator().manual_seed(seed), extrapolation=method.extrapolation(),
               output_type="pt", **size)
    if out.frames is not None:
        return out.frames.permute(0, 2, 1, 3, 4)  # (n, t, c, h, w) -> (n, c, t, h, w)
    return out.images


def write_table(path: Path, header: list[str], rows: list[list]) -> None:
    """The same rows as CSV (path.csv) and Markdown (path.md)."""
    with open(path.with_suffix(".csv"), "w", newline="") as f:
        csv.writer(f).writerows([header, *rows])
    cell = lambda v: f"{v:.2f}" if isinstance(v, float) else str(v)  # noqa: E731
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    path.with_suffix(".md").write_text("\n".join(lines) + "\n")


def save_labelled_grid(path: Path, title: str, rows: dict[str, torch.Tensor], per_row: int) -> None:
    """One row of samples per method at their own pixels, labelled; rows maps label -> (n, 3, h, w) in [0, 1]."""
    strips = [make_grid(images[:per_row], nrow=per_row, padding=2, pad_value=1.0) for images in rows.values()]
    label_width, title_height = 130, 18
    width = label_width + max(strip.shape[-1] for strip in strips)
    height = title_height + sum(strip.shape[-2] for strip in strips)
    canvas = PIL.Image.new("RGB", (width, height), "white")
    draw = PIL.ImageDraw.Draw(canvas)
    draw.text((4, 3), title, fill="black")
    top = title_height
    for label, strip in zip(rows, strips):
        pixels = (strip.clamp(0, 1) * 255).round().to(torch.uint8).permute(1, 2, 0).numpy()
        canvas.paste(PIL.Image.fromarray(pixels), (label_width, top))
        draw.text((4, top + strip.shape[-2] // 2 - 5), label, fill="black")
        top += strip.shape[-2]
    canvas.save(path)


def image_benchmark(args, out: Path) -> None:
    models = {"rope": ROPE_IMAGE_METHODS, "sincos": SINCOS_METHODS}
    pipes = {"rope": AxialDiTPipeline.from_pretrained(args.image_model),
             "sincos": AxialDiTPipeline.from_pretrained(args.sincos_model)}
    side = pipes["rope"].trained_size[-1]
    scales = (1, 2) if args.quick else (1, 1.5, 2, 3)
    sizes = [(int(side * k), int(side * k)) for k in scales]
    if not args.quick:
        sizes += [(side, 2 * side), (2 * side, side)]
    for pipe in pipes.values():
        pipe.set_progress_bar_config(disable=True)
    header = ["model", "method"] + [f"{h}x{w}" for h, w in sizes]
    results: dict[tuple[str, str], list[float]] = {}
    floors = []
    for height, width in sizes:
        real, labels = real_images(args.num, height, width, REAL_SEED)
        floor = swd(real_images(args.num, height, width, FLOOR_SEED)[0], real).mean
        floors.append(floor)
        grid_rows = {"real": real}
        for model, methods in models.items():
            for method in methods:
                start = time.perf_counter()
                samples = generate(pipes[model], method, labels, {"height": height, "width": width},
                                   args.steps, args.guidance, args.seed)
                distance = swd(samples, real).mean
                results.setdefault((model, method.label), []).append(distance)
                grid_rows[f"{model} {method.label}"] = samples
                print(f"{height}x{width} {model:6s} {method.label:18s} SWD {distance:7.2f} "
                      f"(floor {floor:.2f}) {time.perf_counter() - start:5.1f}s", flush=True)
        save_labelled_grid(out / f"samples_{height}x{width}.png",
                           f"{height}x{width} from a {side}x{side} model (first samples of each method)",
                           grid_rows, per_row=8)
    rows = [[model, label, *values] for (model, label), values in results.items()]
    rows.append(["real", "floor (real vs real)", *floors])
    write_table(out / "extrapolation_images", header, rows)
    plot_against_scale(out / "extrapolation_images.png", sizes, side, results, floors)


def plot_against_scale(path: Path, sizes, side: int, results, floors) -> None:
    square = [i for i, (h, w) in enumerate(sizes) if h == w]
    scales = [sizes[i][0] / side for i in square]
    figure, axis = plt.subplots(figsize=(7, 4.5))
    colours = plt.cm.tab20.colors  # more series than the default cycle's 10 colours
    for index, ((model, label), values) in enumerate(results.items()):
        style = "--" if model == "sincos" else "-"
        axis.plot(scales, [values[i] for i in square], style, marker="o", color=colours[index % len(colours)],
                  label=f"{model} {label}")
    axis.plot(scales, [floors[i] for i in square], ":", color="black", label="floor (real vs real)")
    axis.set(xlabel="side / trained side", ylabel="SWD x1e3 (lower is better)", yscale="log",
             title="Image samples beyond the trained 32x32 grid")
    axis.legend(fontsize=7, ncol=2)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def video_benchmark(args, out: Path) -> None:
    pipe = AxialDiTPipeline.from_pretrained(args.video_model)
    pipe.set_progress_bar_config(disable=True)
    trained_size = pipe.trained_size  # (frames, height, width)
    trained_frames = trained_size[0]
    sizes = args.video_sizes or ([(16, 32, 32), (8, 64, 64)] if args.quick else
                                 [(8, 32, 32), (16, 32, 32), (24, 32, 32), (8, 64, 64)])
    count = max(4, args.num // 4)
    header = ["size", "method", "frame SWD", "motion SWD", "repetition", "persistence"]
    rows = []
    for frames, height, width in sizes:
        real, labels = real_videos(count, frames, height, width, REAL_SEED)
        floor = video_swd(real_videos(count, frames, height, width, FLOOR_SEED)[0], real)
        min_lag = max(1, trained_frames // 2)
        # silhouettes compared across the trained clip length; the fastest shape moves this far in it
        lag = trained_frames - 1
        max_shift = fastest_shift(lag, height, width)
        size_label = f"{frames}x{height}x{width}"
        rows.append([size_label, "real (floor)", floor["frame_swd"], floor["motion_swd"],
                     repetition_score(real, min_lag), shape_persistence(real, lag, max_shift)])
        grid_rows = {"real": real[:, :, -1]}
        for method in VIDEO_METHODS:
            if method.name == "riflex" and frames == trained_frames:
                continue  # RIFLEx changes only the temporal axis: identical to "none" here
            if method.name != "none" and (frames, height, width) == trained_size:
                continue  # at the trained size every method is the trained encoding (tested)
            start = time.perf_counter()
            samples = generate(pipe, method, labels, {"num_frames": frames, "height": height, "width": width},
                               args.steps, args.guidance, args.seed)
            scores = video_swd(samples, real)
            rows.append([size_label, method.label, scores["frame_swd"], scores["motion_swd"],
                         repetition_score(samples, min_lag), shape_persistence(samples, lag, max_shift)])
            grid_rows[method.label] = samples[:, :, -1]  # the last frame: where extrapolation shows
            print(f"{size_label} {method.label:10s} frame {scores['frame_swd']:7.2f} motion {scores['motion_swd']:7.2f} "
                  f"repetition {rows[-1][-2]:.2f} persistence {rows[-1][-1]:.2f} "
                  f"{time.perf_counter() - start:5.1f}s", flush=True)
        save_labelled_grid(out / f"video_last_frames_{size_label}.png",
                           f"last frame of {size_label} videos from an 8x32x32 model", grid_rows, per_row=count)
    write_table(out / "extrapolation_video", header, rows)


def video_size(text: str) -> tuple[int, int, int]:
    """'16x32x32' -> (16, 32, 32), for argparse."""
    parts = text.lower().split("x")
    if len(parts) != 3 or not all(p.isdigit() and int(p) > 0 for p in parts):
        raise argparse.ArgumentTypeError(f"a video size is TxHxW with positive integers, got {text!r}")
    return tuple(int(p) for p in parts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer samples, sizes and steps (a few minutes)")
    parser.add_argument("--num", type=int, default=None, help="images per cell (default 32, quick 12)")
    parser.add_argument("--steps", type=int, default=None, help="sampler steps (default 12, quick 8)")
    parser.add_argument("--guidance", type=float, default=2.0, help="classifier-free guidance scale")
    parser.add_argument("--seed", type=int, default=0, help="noise seed")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's choice)")
    parser.add_argument("--skip-video", action="store_true", help="images only")
    parser.add_argument("--skip-images", action="store_true", help="video only")
    parser.add_argument("--image-model", default=bundled_model_path("shapes-rope"), help="RoPE image pipeline folder")
    parser.add_argument("--sincos-model", default=bundled_model_path("shapes-sincos"), help="sin-cos image pipeline folder")
    parser.add_argument("--video-model", default=bundled_model_path("moving-shapes-rope"), help="video pipeline folder")
    parser.add_argument("--video-sizes", type=video_size, nargs="+", default=None,
                        help="video sizes TxHxW (default 8x32x32 16x32x32 24x32x32 8x64x64)")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results"), help="output folder")
    args = parser.parse_args()
    args.num = args.num or (12 if args.quick else 32)
    args.steps = args.steps or (8 if args.quick else 12)
    if args.threads:
        torch.set_num_threads(args.threads)
    args.out.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    if not args.skip_images:
        image_benchmark(args, args.out)
    if not args.skip_video:
        video_benchmark(args, args.out)
    print(f"wrote {args.out} in {(time.perf_counter() - start) / 60:.1f} min")


if __name__ == "__main__":
    main()

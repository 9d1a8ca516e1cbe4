"""Which extrapolation method works, measured on three kinds of data, over seeds (docs/extrapolation.md).

RoPE and sin-cos models of procedural shapes and textures and of crops of real photographs, trained at
32x32, sample at 1x to 3x the side and at two non-square shapes with every method, with and without
entropy scaling; the bundled video model at 2x and 3x the frames and 2x the side. Each cell: detail SWD
(and full SWD, shape recognition, video motion scores) against held-out real renders, once per seed. The
work runs as parts (a data kind and size each, a video size, the classifier), `--jobs` processes at a
time, each writing <out>/raw/<part>.csv; `extrapolation_report.py` then writes the tables, plots and
each bundled pipeline's `default_extrapolation`.

    python benchmarks/extrapolation.py               # everything, into benchmarks/results
    python benchmarks/extrapolation.py --quick       # the whole path in short (1x and 2x, 2 seeds, few samples)
    python benchmarks/extrapolation.py --report-only # the report again, from the raw values
    python benchmarks/extrapolation.py --part textures:64x64   # one part alone
    python benchmarks/extrapolation.py --kinds photographs --skip-video   # one data kind's parts, then the report
    python benchmarks/extrapolation.py --methods spa  # one method's cells, merged into the raw values there
    python benchmarks/extrapolation.py --methods sega --skip-video --no-write-defaults  # the same, images only

The photographs models are not bundled: `STAGES=photos bash benchmarks/train_bundled.sh` trains them
into outputs/bundled/photos-{rope,sincos} (a missing one is skipped, with a note; both missing fail).
"""

from __future__ import annotations

import argparse
import csv
import math
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from reporting import run_parts, save_labelled_grid
from samples_and_real import FLOOR_SEED, REAL_SEED, fastest_shift, generate, real_images, real_videos

from axialrope.pipelines.dit.bundled import bundled_model_path
from axialrope.pipelines.dit.pipeline import AxialDiTPipeline
from axialrope.pipelines.dit.runs import load_run_pipeline
from axialrope.pipelines.evaluation.cells import (
    VIDEO_METHOD_NAMES,
    Method,
    References,
    floor_distance,
    image_methods,
    measure_cell,
)
from axialrope.pipelines.evaluation.metrics import repetition_score, shape_persistence, video_swd

# calibration's video methods (in time), and spa, which acts in space: its 2x-the-side video cell
VIDEO_METHOD_NAMES = (*VIDEO_METHOD_NAMES, "spa")
ROPE_METHODS = image_methods(rope=True)
SINCOS_METHODS = image_methods(rope=False)  # a sin-cos model has no frequencies to rescale
VIDEO_METHODS = [Method(name) for name in VIDEO_METHOD_NAMES] + [Method("none", True)]

MODELS = {  # data kind -> {model: bundled name, or a pipeline folder for a kind with no bundled model}
    "shapes": {"rope": "shapes-rope", "sincos": "shapes-sincos"},
    "textures": {"rope": "textures-rope", "sincos": "textures-sincos"},
    "photographs": {"rope": "outputs/bundled/photos-rope", "sincos": "outputs/bundled/photos-sincos"},
}
TRAIN_PHOTOS = "STAGES=photos bash benchmarks/train_bundled.sh"
VIDEO_MODEL = "moving-shapes-rope"
TRAINED_SIDE = 32
IMAGE_SIZES = [(32, 32), (48, 48), (64, 64), (96, 96), (32, 64), (64, 32)]
VIDEO_SIZES = [(8, 32, 32), (16, 32, 32), (24, 32, 32), (8, 64, 64)]
RECOGNITION_SIZES = [(64, 64), (96, 96)]  # 2x and 3x: averaged down to 32x32 by 2 and 3
RAW_HEADER = ["data", "model", "method", "size", "seed", "metric", "value"]


def size_label(size) -> str:
    return "x".join(str(s) for s in size)


def parse_size(text: str) -> tuple[int, ...]:
    """'64x32' -> (64, 32), '16x32x32' -> (16, 32, 32)."""
    parts = text.lower().split("x")
    if len(parts) not in (2, 3) or not all(p.isdigit() and int(p) > 0 for p in parts):
        raise argparse.ArgumentTypeError(f"a size is HxW or TxHxW with positive integers, got {text!r}")
    return tuple(int(p) for p in parts)


def load_pipeline(name_or_folder: str) -> AxialDiTPipeline:
    """A bundled model by name, a pipeline folder, or a training run folder (its EMA weights' pipeline)."""
    folder = Path(name_or_folder)
    if folder.is_dir() and not (folder / "model_index.json").exists():
        pipe = load_run_pipeline(folder)
    else:
        pipe = AxialDiTPipeline.from_pretrained(folder if folder.is_dir() else bundled_model_path(name_or_folder))
    pipe.set_progress_bar_config(disable=True)
    return pipe


class RawWriter:
    """Appends rows of RAW_HEADER to one part's CSV (written whole at the end, atomically).

    merge: the labels of the methods measured (`--methods`): the CSV's other rows are kept, these methods'
    replaced, and no floor rows are added (the kept ones stand).
    """

    def __init__(self, path: Path, merge: list[str] | None = None):
        self.path, self.rows, self.merge = path, [], merge

    def add(self, data: str, model: str, method: str, size, seed: int, metric: str, value: float) -> None:
        if self.merge is not None and method == "floor":
            return
        self.rows.append([data, model, method, size_label(size), seed, metric, f"{value:.6g}"])

    def close(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if self.merge is not None and self.path.exists():
            with open(self.path, newline="") as f:
                kept = [row for row in list(csv.reader(f))[1:] if row[2] not in self.merge]
            self.rows = kept + self.rows
        partial = self.path.with_suffix(".partial")
        with open(partial, "w", newline="") as f:
            csv.writer(f).writerows([RAW_HEADER, *self.rows])
        partial.replace(self.path)


# -- the parts ----------------------------------------------------------------------------------


def add_swd(raw: RawWriter, data: str, model: str, method: str, size, seed: int, result) -> None:
    """Both SWDs of a cell: "swd_detail" (band-pass levels, the headline) and "swd" (every level)."""
    raw.add(data, model, method, size, seed, "swd_detail", result.detail)
    raw.add(data, model, method, size, seed, "swd", result.mean)


def procedural_references(kind: str, size: tuple[int, int], seed: int, num: int) -> References:
    """Seed `seed`'s real images of a data kind at `size`: its own block of held-out renders, their labels,
    and the floor's block of another scene family."""
    first = seed * num
    real, labels = real_images(num, *size, REAL_SEED, kind, first)
    return References(real, real_images(num, *size, FLOOR_SEED, kind, first)[0], labels)


def image_part(kind: str, size: tuple[int, int], args) -> None:
    """Every model and method of one data kind at one size, every seed; recognition for shapes at 2x/3x."""
    height, width = size
    raw = RawWriter(args.out / "raw" / f"{kind}_{size_label(size)}.csv", measured_only(args))
    trained = (height, width) == (TRAINED_SIDE, TRAINED_SIDE)
    classifier = None
    if kind == "shapes" and size in RECOGNITION_SIZES:
        classifier = shape_classifier(args)
    pipes = model_pipelines(kind, args)
    grid_rows = {}
    for seed in range(args.seeds):
        references = procedural_references(kind, size, seed, args.num)
        add_swd(raw, kind, "real", "floor", size, seed, floor_distance(references))
        if seed == 0:
            grid_rows["real"] = references.real
        for model, pipe in pipes.items():
            # at the trained size every method is the trained encoding (tested): one row stands for all
            methods = [Method("none")] if trained else (ROPE_METHODS if model == "rope" else SINCOS_METHODS)
            if measured_only(args) is not None:
                methods = [m for m in methods if m.label in measured_only(args) and not trained]
            for method in methods:
                start = time.perf_counter()
                cell = measure_cell(pipe, method, references, args.steps, args.guidance, seed)
                samples, distance = cell.samples, cell.distance
                add_swd(raw, kind, model, method.label, size, seed, distance)
                if classifier is not None:
                    raw.add(
                        kind,
                        model,
                        method.label,
                        size,
                        seed,
                        "recognised",
                        recognised(classifier, samples, references.labels, height // TRAINED_SIDE),
                    )
                if seed == 0:
                    grid_rows[f"{model} {method.label}"] = samples
                print(
                    f"{kind} {size_label(size)} seed {seed} {model:6s} {method.label:18s} SWD {distance.detail:7.2f} "
                    f"{time.perf_counter() - start:5.1f}s",
                    flush=True,
                )
    raw.close()
    if measured_only(args) is not None and len(grid_rows) == 1:
        return  # nothing of these methods at this size (the trained one)
    save_labelled_grid(
        args.out / f"samples_{kind}_{size_label(size)}{picture_suffix(args)}.png",
        f"{kind} at {height}x{width} from {TRAINED_SIDE}x{TRAINED_SIDE} models (seed 0)",
        grid_rows,
        per_row=min(8, args.num),
    )


def measured_only(args) -> list[str] | None:
    """The method labels of `--methods`, or None for a whole run (a Namespace built elsewhere may lack it)."""
    return getattr(args, "methods", None)


def picture_suffix(args) -> str:
    """ "" for a whole run; "_<methods>" where --methods measured some only (the whole run's pictures stay)."""
    return "" if measured_only(args) is None else "_" + "_".join(m.replace("+", "-") for m in measured_only(args))


def model_pipelines(kind: str, args) -> dict[str, AxialDiTPipeline]:
    """model -> pipeline of a data kind; a default folder that is missing (photographs) is skipped, with a note."""
    pipes = {}
    for model, default in MODELS[kind].items():
        chosen = getattr(args, f"{kind}_{model}")
        if chosen is None and "/" in default and not Path(default).is_dir():
            print(f"{kind}: no {model} model at {default} (train it: {TRAIN_PHOTOS}); skipped", flush=True)
            continue
        pipes[model] = load_pipeline(chosen or default)
    if not pipes:
        others = " ".join(k for k in MODELS if k != kind)
        raise SystemExit(
            f"{kind}: no model to measure; train them with {TRAIN_PHOTOS}, name folders with "
            f"--{kind}-rope / --{kind}-sincos, or leave the kind out with --kinds {others}"
        )
    return pipes


def video_part(size: tuple[int, int, int], args) -> None:
    """Every video method at one size, every seed."""
    frames, height, width = size
    pipe = load_pipeline(args.video_model or VIDEO_MODEL)
    trained_size = pipe.trained_size  # (frames, height, width)
    raw = RawWriter(args.out / "raw" / f"video_{size_label(size)}.csv", measured_only(args))
    lag = trained_size[0] - 1  # silhouettes compared across the trained clip length
    min_lag, max_shift = max(1, trained_size[0] // 2), fastest_shift(lag, height, width)
    count = args.clips
    grid_rows = {}
    for seed in range(args.seeds):
        real, labels = real_videos(count, frames, height, width, REAL_SEED, seed * count)
        floor = video_swd(real_videos(count, frames, height, width, FLOOR_SEED, seed * count)[0], real)
        scores = {
            "frame_swd": floor["frame_swd"],
            "motion_swd": floor["motion_swd"],
            "repetition": repetition_score(real, min_lag),
            "persistence": shape_persistence(real, lag, max_shift),
        }
        for metric, value in scores.items():
            raw.add("moving shapes", "real", "floor", size, seed, metric, value)
        if seed == 0:
            grid_rows["real"] = real[:, :, -1]
        for method in VIDEO_METHODS:
            if measured_only(args) is not None and method.label not in measured_only(args):
                continue
            if method.name == "riflex" and frames == trained_size[0]:
                continue  # RIFLEx changes only the temporal axis: "none" here
            if method != Method("none") and tuple(size) == tuple(trained_size):
                continue  # at the trained size every method is the trained encoding (tested)
            start = time.perf_counter()
            samples = generate(
                pipe,
                method,
                labels,
                {"num_frames": frames, "height": height, "width": width},
                args.steps,
                args.guidance,
                seed,
            )
            scores = video_swd(samples, real)
            scores |= {
                "repetition": repetition_score(samples, min_lag),
                "persistence": shape_persistence(samples, lag, max_shift),
            }
            for metric, value in scores.items():
                raw.add("moving shapes", "rope", method.label, size, seed, metric, value)
            if seed == 0:
                grid_rows[method.label] = samples[:, :, -1]  # the last frame: where extrapolation shows
            print(
                f"video {size_label(size)} seed {seed} {method.label:14s} frame {scores['frame_swd']:7.2f} "
                f"motion {scores['motion_swd']:7.2f} {time.perf_counter() - start:5.1f}s",
                flush=True,
            )
    raw.close()
    if measured_only(args) is not None and len(grid_rows) == 1:
        return
    save_labelled_grid(
        args.out / f"video_last_frames_{size_label(size)}{picture_suffix(args)}.png",
        f"last frame of {size_label(size)} videos from an 8x32x32 model (seed 0)",
        grid_rows,
        per_row=count,
    )


def shape_classifier(args):
    """The cached shape classifier of shape_recognition.py, trained first if the cache lacks it
    (None with --quick and no cache: recognition is then left out)."""
    from shape_recognition import CLASSIFIER_SETTINGS, DEFAULT_CACHE, load_or_train_classifier

    if (args.quick or measured_only(args)) and not DEFAULT_CACHE.exists():
        print(
            f"--quick/--methods: no {DEFAULT_CACHE}, so no shape recognition "
            f"(CLASSIFIER_SETTINGS {CLASSIFIER_SETTINGS})"
        )
        return None
    return load_or_train_classifier(DEFAULT_CACHE)


def recognised(classifier, samples: torch.Tensor, labels: torch.Tensor, factor: int) -> float:
    """Share of (n, 3, h, w) samples that the classifier, reading them averaged down by `factor`, names right."""
    from shape_recognition import predict

    return (predict(classifier, F.avg_pool2d(samples, factor)) == labels).float().mean().item()


def run_part(name: str, args) -> None:
    if name == "classifier":
        shape_classifier(args)
        return
    kind, _, size = name.partition(":")
    if kind == "video":
        video_part(parse_size(size), args)
    elif kind in MODELS:
        image_part(kind, parse_size(size), args)
    else:
        raise SystemExit(f"--part: unknown part {name!r}; parts look like shapes:64x64, video:16x32x32, classifier")


def all_parts(args) -> list[str]:
    """Every part of the run, longest first (the classifier first: the 2x and 3x shapes parts need it)."""
    images = [f"{kind}:{size_label(size)}" for kind in args.kinds for size in args.sizes]
    videos = [f"video:{size_label(size)}" for size in args.video_sizes]
    cost = lambda part: math.prod(parse_size(part.partition(":")[2])) * (3 if part.startswith("video") else 1)  # noqa: E731
    parts = sorted(videos + images, key=cost, reverse=True)
    if "shapes" in args.kinds and any(size in RECOGNITION_SIZES for size in args.sizes) and not measured_only(args):
        parts.insert(0, "classifier")
    return parts


def run_all(parts: list[str], args) -> None:
    """Each part in its own process, `args.jobs` at a time, one torch thread each; stops on a failed part."""
    run_parts(__file__, parts, args.jobs, args.out)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="1x and 2x only, 2 seeds, 4 samples, 6 steps, one video size; into outputs/",
    )
    parser.add_argument("--seeds", type=int, default=None, help="seeds per cell (default 4, quick 2)")
    parser.add_argument("--num", type=int, default=None, help="images per seed and cell (default 12, quick 4)")
    parser.add_argument("--clips", type=int, default=None, help="videos per seed and cell (default 3, quick 2)")
    parser.add_argument("--steps", type=int, default=None, help="sampler steps (default 12, quick 6)")
    parser.add_argument("--guidance", type=float, default=2.0, help="classifier-free guidance scale")
    parser.add_argument("--sizes", type=parse_size, nargs="+", default=None, help="image sizes HxW")
    parser.add_argument("--video-sizes", type=parse_size, nargs="+", default=None, help="video sizes TxHxW")
    parser.add_argument(
        "--kinds",
        nargs="+",
        choices=list(MODELS),
        default=list(MODELS),
        help="image data kinds to measure (the report reads every kind's raw values)",
    )
    parser.add_argument(
        "--methods",
        nargs="+",
        default=None,
        help="measure only these method labels (e.g. spa spa+entropy), merged into the raw CSVs under --out",
    )
    parser.add_argument("--skip-images", action="store_true", help="video only")
    parser.add_argument("--skip-video", action="store_true", help="images only")
    parser.add_argument("--jobs", type=int, default=2, help="parts run at once, one thread each")
    parser.add_argument("--part", default=None, help="run one part in this process (what --jobs starts)")
    parser.add_argument("--report-only", action="store_true", help="only the report, from <out>/raw/")
    parser.add_argument(
        "--write-defaults",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="record each bundled pipeline's default_extrapolation (default: on, off with --quick)",
    )
    parser.add_argument("--threads", type=int, default=None, help="torch threads of a --part (default: torch's)")
    for kind, models in MODELS.items():
        for model, bundled in models.items():
            where = f"folder {bundled}" if "/" in bundled else f"bundled {bundled}"
            parser.add_argument(f"--{kind}-{model}", default=None, help=f"pipeline folder (default {where})")
    parser.add_argument("--video-model", default=None, help=f"video pipeline folder (default bundled {VIDEO_MODEL})")
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="output folder (default benchmarks/results, quick outputs/extrapolation-quick)",
    )
    args = parser.parse_args()
    quick = args.quick
    args.seeds = args.seeds or (2 if quick else 4)
    args.num = args.num or (4 if quick else 12)
    args.clips = args.clips or (2 if quick else 3)
    args.steps = args.steps or (6 if quick else 12)
    args.out = args.out or Path("outputs/extrapolation-quick" if quick else "benchmarks/results")
    args.sizes = [] if args.skip_images else (args.sizes or ([(32, 32), (64, 64)] if quick else IMAGE_SIZES))
    args.video_sizes = [] if args.skip_video else (args.video_sizes or ([(16, 32, 32)] if quick else VIDEO_SIZES))
    args.write_defaults = (not quick) if args.write_defaults is None else args.write_defaults
    for name in ("seeds", "num", "clips", "steps", "jobs"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be a positive integer, got {getattr(args, name)}")
    if args.seeds < 2:
        parser.error("--seeds must be at least 2: the interval is over seeds")
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.part:
        run_part(args.part, args)
        return
    start = time.perf_counter()
    if not args.report_only:
        run_all(all_parts(args), args)
    from extrapolation_report import report

    report(args.out, write_defaults=args.write_defaults)
    print(f"wrote {args.out} in {(time.perf_counter() - start) / 60:.1f} min")


if __name__ == "__main__":
    main()

"""Does the reference-free score choose as real images would? Both scores on the same samples.

The RoPE models of the procedural shapes and textures and of the photographs (where its model exists: see
benchmarks/extrapolation.py), trained at 32x32, sample with every method at 1.5x, 2x and 3x the side and at
32x64 (and 64x32 if asked), once per seed; with --video, the video model (8x32x32) at 2x and 3x the frames. Each
sample set gets two values: against held-out real renders of its size, the detail SWD (images:
`cells.measure_cell`, the benchmark's cell; clips: the mean of the detail SWD of the frames and of the frame
differences, the motion); and the reference-free score against the model's own samples at its trained size
(`self_reference.self_reference_score` against `cells.own_reference`, what `axialrope calibrate` does without
real images), which sees no real image. Per cell (a data kind and size): the rank agreement of the two orders of
the methods (Kendall's tau-b and Spearman), and the real-reference value of the method the reference-free score
picks over the real-reference best, from the means over seeds and per seed with a bootstrap interval over seeds
(`intervals.seed_interval`); beside it the same ratio in the published tables of benchmarks/extrapolation.py (other
samples: 4 seeds of 12 images or 3 clips; for clips its frame SWD). docs/extrapolation.md, "Calibrating without
real images".

    python benchmarks/self_reference_agreement.py --video          # every part, two at a time, then the report
    python benchmarks/self_reference_agreement.py --report-only    # the report again, from the raw values
    python benchmarks/self_reference_agreement.py --part shapes:64x64 --seeds 3   # one part alone
    python benchmarks/self_reference_agreement.py --first-seed 2 --out benchmarks/results/self_reference/seeds2-3
                                                                   # more seeds: the report above reads them too

Seeds 0, 1, ... draw the same real images as benchmarks/extrapolation.py's seeds.
"""

from __future__ import annotations

import argparse
import csv
import math
import sys
import time
from pathlib import Path

import torch
from extrapolation import (
    MODELS,
    ROPE_METHODS,
    TRAIN_PHOTOS,
    VIDEO_METHODS,
    VIDEO_MODEL,
    load_pipeline,
    parse_size,
    procedural_references,
    size_label,
)
from reporting import run_parts
from samples_and_real import FLOOR_SEED, REAL_SEED, real_videos

from axialrope.pipelines.evaluation.cells import floor_distance, generate, measure_cell, own_reference
from axialrope.pipelines.evaluation.intervals import seed_interval
from axialrope.pipelines.evaluation.metrics import frames_as_images, swd, video_swd
from axialrope.pipelines.evaluation.self_reference import self_reference_score

SIZES = [(48, 48), (64, 64), (96, 96), (32, 64)]  # 1.5x, 2x, 3x and one non-square size
VIDEO_SIZES = [(16, 32, 32), (24, 32, 32)]  # 2x and 3x the trained 8 frames
TRAINED, TRAINED_VIDEO = (32, 32), (8, 32, 32)
VIDEO = "moving shapes"
HEADER = ["data", "method", "size", "seed", "metric", "value"]
PARTS = ("real", "self", "distance", "window", "zoom", "window_weight", "spectrum", "repetition", "loop", "penalty")
AIM = 1.15  # the reference-free pick's real value within this factor of the real best


def run_part(name: str, args) -> None:
    """One data kind at one size: every RoPE method, every seed, both scores; <out>/raw/<part>.csv."""
    kind, _, text = name.partition(":")
    size = parse_size(text)
    rows = video_rows(size, args) if kind == "video" else image_rows(kind, size, args)
    path = args.out / "raw" / f"{kind}_{size_label(size)}.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path.with_suffix(".partial"), "w", newline="") as f:
        csv.writer(f).writerows([HEADER, *[[*row[:5], f"{row[5]:.6g}"] for row in rows]])
    path.with_suffix(".partial").replace(path)


def image_rows(kind: str, size: tuple[int, int], args) -> list[list]:
    """Every RoPE image method of a data kind's model at `size`, every seed: the detail SWD against the real
    renders of benchmarks/extrapolation.py's seed, and the reference-free score of the same samples."""
    pipe = load_pipeline(args.model_of[kind])
    rows = []
    for seed in range(args.first_seed, args.first_seed + args.seeds):
        own = own_reference(pipe, seed, args.num, args.steps, args.guidance, factor=args.own)
        references = procedural_references(kind, size, seed, args.num)
        rows.append([kind, "floor", size_label(size), seed, "real", floor_distance(references).detail])
        for method in ROPE_METHODS:
            start = time.perf_counter()
            cell = measure_cell(pipe, method, references, args.steps, args.guidance, seed)
            score = self_reference_score(cell.samples, own.own, seed=seed)
            rows += scored(kind, method.label, size, seed, {"real": cell.distance.detail}, score)
            log(f"{kind}:{size_label(size)}", seed, method.label, cell.distance.detail, score.value, start)
    return rows


def clip_detail(samples: torch.Tensor, real: torch.Tensor) -> float:
    """The real reference of clips (n, c, t, h, w) in [0, 1]: the mean of the detail SWD of their frames and of
    their frame differences (mapped to [0, 1] as the reference-free score maps them)."""
    motion = lambda clips: (clips[:, :, 1:] - clips[:, :, :-1] + 1) / 2  # noqa: E731
    frames = swd(frames_as_images(samples), frames_as_images(real)).detail
    return (frames + swd(frames_as_images(motion(samples)), frames_as_images(motion(real))).detail) / 2


def video_rows(size: tuple[int, int, int], args) -> list[list]:
    """The video model at `size` (t, h, w): every video method, every seed, against held-out real clips
    (`clip_detail`; the frame SWD too, the published video table's headline) and by the reference-free score."""
    frames, height, width = size
    pipe = load_pipeline(VIDEO_MODEL)
    rows = []
    for seed in range(args.first_seed, args.first_seed + args.seeds):
        own = own_reference(pipe, seed, args.clips, args.steps, args.guidance, factor=args.own)
        real, labels = real_videos(args.clips, frames, height, width, REAL_SEED, seed * args.clips)
        floor = real_videos(args.clips, frames, height, width, FLOOR_SEED, seed * args.clips)[0]
        rows.append([VIDEO, "floor", size_label(size), seed, "real", clip_detail(floor, real)])
        for method in VIDEO_METHODS:
            start = time.perf_counter()
            keywords = {"num_frames": frames, "height": height, "width": width}
            samples = generate(pipe, method, labels, keywords, args.steps, args.guidance, seed)
            real_value = clip_detail(samples, real)
            score = self_reference_score(samples, own.own, seed=seed)
            extra = {"real": real_value, "frame_swd": video_swd(samples, real)["frame_swd"]}
            rows += scored(VIDEO, method.label, size, seed, extra, score)
            log(f"video:{size_label(size)}", seed, method.label, real_value, score.value, start)
    return rows


def log(part: str, seed: int, label: str, real: float, score: float, start: float) -> None:
    print(f"{part} seed {seed} {label:18s} real {real:6.1f} self {score:6.1f} {time.perf_counter() - start:5.1f}s")
    sys.stdout.flush()


def scored(data: str, label: str, size, seed: int, real: dict[str, float], score) -> list[list]:
    """The raw rows of one cell: its real-reference value(s), its reference-free score and the score's parts."""
    values = {**real, "self": score.value, **score.parts}
    names = [*real, *(part for part in PARTS if part not in real)]
    return [[data, label, size_label(size), seed, name, values[name]] for name in names if values[name] is not None]


def run_all(parts: list[str], args) -> None:
    """Each part in its own process of one thread, `args.jobs` at a time, longest first; stops on a failure."""
    run_parts(__file__, parts, args.jobs, args.out)


# -- the report ----------------------------------------------------------------------------------


def read_values(folder: Path) -> dict[tuple[str, str], dict[str, dict[str, list[float]]]]:
    """(data, size) -> metric -> method -> values in seed order, from <folder>/raw and the raw values of every run
    with its --out inside <folder> (more seeds of the same parts: --first-seed 2 --out <folder>/seeds2-3)."""
    cells: dict = {}
    for path in sorted(folder.glob("**/raw/*.csv")):
        with open(path, newline="") as f:
            for row in csv.DictReader(f):
                seeds = cells.setdefault((row["data"], row["size"]), {}).setdefault(row["metric"], {})
                seeds.setdefault(row["method"], {})[int(row["seed"])] = float(row["value"])
    in_order = lambda methods: {m: [v[s] for s in sorted(v)] for m, v in methods.items()}  # noqa: E731
    return {cell: {metric: in_order(methods) for metric, methods in metrics.items()} for cell, metrics in cells.items()}


def ranks(values: list[float]) -> list[float]:
    """1-based ranks, ties given their average rank."""
    order = sorted(range(len(values)), key=values.__getitem__)
    result = [0.0] * len(values)
    start = 0
    while start < len(order):
        end = start
        while end + 1 < len(order) and values[order[end + 1]] == values[order[start]]:
            end += 1
        for index in order[start : end + 1]:
            result[index] = (start + end) / 2 + 1
        start = end + 1
    return result


def spearman(a: list[float], b: list[float]) -> float:
    """Spearman's rank correlation: Pearson's correlation of the ranks."""
    ra, rb = torch.tensor(ranks(a), dtype=torch.float64), torch.tensor(ranks(b), dtype=torch.float64)
    ra, rb = ra - ra.mean(), rb - rb.mean()
    return float((ra * rb).sum() / (ra.pow(2).sum() * rb.pow(2).sum()).sqrt())


def kendall(a: list[float], b: list[float]) -> float:
    """Kendall's tau-b: (concordant - discordant pairs) / sqrt of the pairs untied in a times those in b."""
    concordant = discordant = untied_a = untied_b = 0
    for i in range(len(a)):
        for j in range(i + 1, len(a)):
            sign = (a[i] > a[j]) - (a[i] < a[j]), (b[i] > b[j]) - (b[i] < b[j])
            untied_a, untied_b = untied_a + (sign[0] != 0), untied_b + (sign[1] != 0)
            concordant += sign[0] * sign[1] > 0
            discordant += sign[0] * sign[1] < 0
    return (concordant - discordant) / math.sqrt(untied_a * untied_b)


def agreement(real: dict[str, float], score: dict[str, float]) -> tuple[float, float, str, str, float]:
    """(Kendall, Spearman, the real-reference best, the score's pick, the pick's real value over the best's)."""
    methods = sorted(real)
    a, b = [real[m] for m in methods], [score[m] for m in methods]
    best, pick = min(methods, key=real.get), min(methods, key=score.get)
    return kendall(a, b), spearman(a, b), best, pick, real[pick] / real[best]


def published(data: str, size: str) -> dict[str, float] | None:
    """Mean detail SWD (frame SWD for video) per RoPE method of benchmarks/extrapolation.py's own run
    (benchmarks/results/raw)."""
    from extrapolation_report import read_raw

    folder = Path(__file__).parent / "results"
    if not (folder / "raw").is_dir():
        return None
    metric = "frame_swd" if data == VIDEO else "swd_detail"
    values = {
        method: sum(v) / len(v)
        for (kind, model, method, label, measured), v in read_raw(folder).items()
        if (kind, model, label, measured) == (data, "rope", size, metric)
    }
    return values or None


def cell_order(cell: tuple[str, str]) -> tuple:
    """Shapes, textures, photographs, then video; per kind, square sizes by side, then the others."""
    data, size = cell
    shape = parse_size(size)
    kinds = [*MODELS, VIDEO]
    return (kinds.index(data) if data in kinds else len(kinds), len(set(shape[-2:])) > 1, shape)


def interval_text(values: list[float]) -> str:
    interval = seed_interval(values)
    return f"{interval.value:.2f} [{interval.low:.2f}, {interval.high:.2f}]"


def methods_measured(cells) -> str:
    """How many methods the cells measured, per data kind ("shapes 18, video 11"): runs made before a method
    joined the lists lack it."""
    counts = {}
    for (data, _), metrics in cells.items():
        counts[data] = max(counts.get(data, 0), len([m for m in metrics["real"] if m != "floor"]))
    return ", ".join(f"{data} {count}" for data, count in counts.items())


def report(args) -> None:
    """self_reference_agreement.{md,csv} in <out>: a row per data kind and size."""
    cells = read_values(args.out)
    if not cells:
        raise SystemExit(f"no raw values in {args.out / 'raw'}: run the parts first")
    header = [
        "data",
        "size",
        "scale",
        "Kendall",
        "Kendall per seed",
        "Spearman",
        "real best",
        "reference-free pick",
        "pick / best",
        "pick / best per seed",
        "published table",
        "seeds",
    ]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    csv_rows = []
    for data, size in sorted(cells, key=cell_order):
        metrics = cells[(data, size)]
        real = {m: v for m, v in metrics["real"].items() if m != "floor"}
        score = metrics["self"]
        seeds = len(next(iter(real.values())))
        mean = lambda values: {m: sum(v) / len(v) for m, v in values.items()}  # noqa: E731
        tau, rho, best, pick, ratio = agreement(mean(real), mean(score))
        at = lambda values, seed: {m: v[seed] for m, v in values.items()}  # noqa: E731
        per_seed = [agreement(at(real, s), at(score, s)) for s in range(seeds)]
        table = published(data, size)
        # the published tables hold the methods of their own run: a pick measured after it has no value there
        versus = f"{table[pick] / min(table.values()):.2f} ({min(table, key=table.get)})" if pick in table else ""
        shape = parse_size(size)
        scale = max(s / t for s, t in zip(shape, TRAINED_VIDEO if len(shape) == 3 else TRAINED, strict=True))
        row = [
            data,
            size,
            f"{scale:g}x",
            f"{tau:.2f}",
            interval_text([p[0] for p in per_seed]),
            f"{rho:.2f}",
            f"{best} ({mean(real)[best]:.1f})",
            f"{pick} ({mean(real)[pick]:.1f})",
            f"**{ratio:.2f}**" if ratio > AIM else f"{ratio:.2f}",
            interval_text([p[4] for p in per_seed]),
            versus,
            str(seeds),
        ]
        lines.append("| " + " | ".join(row) + " |")
        per_tau, per_ratio = seed_interval([p[0] for p in per_seed]), seed_interval([p[4] for p in per_seed])
        csv_rows.append(
            [data, size, scale, tau, per_tau.value, per_tau.low, per_tau.high, rho, best, pick, ratio]
            + [per_ratio.value, per_ratio.low, per_ratio.high, versus, seeds]
        )
    settings = (
        f"{args.num} images ({args.clips} clips) a seed and cell, {args.steps} sampler steps, guidance "
        f"{args.guidance:g}; the model's own samples: {args.own} times as many a seed at its trained size"
    )
    notes = [
        "",
        f"Rank agreement over the RoPE methods each cell measured (its run's list: {methods_measured(cells)}) of the "
        "reference-free score with the real reference (detail SWD against real renders; for clips the mean of the "
        "detail SWD of frames and of frame differences), Kendall's tau-b from the means over seeds and per seed "
        "(mean [95% bootstrap interval over seeds]), Spearman from the means; pick / best: the real-reference "
        "value of the reference-free pick over the real-reference best (1: the same method; in bold above "
        f"{AIM:g}), from the means and per seed; published table: the same ratio in benchmarks/results/raw of "
        "benchmarks/extrapolation.py (other samples: 4 seeds of 12 images or 3 clips, 12 steps; frame SWD for "
        f"clips; its best in brackets). {settings}.",
    ]
    (args.out / "self_reference_agreement.md").write_text("\n".join(lines + notes) + "\n")
    names = [h.replace(" ", "_").replace("/", "over") for h in header]
    csv_header = names[:4] + ["Kendall_per_seed", "low", "high", "Spearman", "real_best", "pick", "pick_over_best"]
    csv_header += ["per_seed", "low", "high", "published", "seeds"]
    with open(args.out / "self_reference_agreement.csv", "w", newline="") as f:
        csv.writer(f).writerows([csv_header, *csv_rows])
    print("\n".join(lines + notes))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter
    )
    parser.add_argument("--seeds", type=int, default=3, help="seeds per cell, at least 2")
    parser.add_argument("--first-seed", type=int, default=0, help="the first seed (the benchmark's seeds start at 0)")
    parser.add_argument("--num", type=int, default=6, help="images per seed and cell")
    parser.add_argument("--clips", type=int, default=2, help="clips per seed and cell (video)")
    parser.add_argument("--own", type=int, default=4, help="the model's own samples a seed, in multiples of --num")
    parser.add_argument("--steps", type=int, default=10, help="sampler steps")
    parser.add_argument("--guidance", type=float, default=2.0, help="classifier-free guidance scale")
    parser.add_argument("--sizes", type=parse_size, nargs="+", default=SIZES, help="image sizes HxW")
    parser.add_argument("--kinds", nargs="+", choices=list(MODELS), default=list(MODELS), help="data kinds")
    parser.add_argument("--video", action="store_true", help=f"also the video model at {VIDEO_SIZES} (t, h, w)")
    parser.add_argument("--skip-images", action="store_true", help="no image parts (with --video: video only)")
    for kind, models in MODELS.items():
        parser.add_argument(f"--{kind}-rope", default=None, help=f"pipeline or run folder (default {models['rope']})")
    parser.add_argument("--jobs", type=int, default=2, help="parts run at once, one thread each")
    parser.add_argument("--part", default=None, help="run one part (data:HxW or video:TxHxW) in this process")
    parser.add_argument("--report-only", action="store_true", help="only the report, from <out>/raw/")
    parser.add_argument("--threads", type=int, default=None, help="torch threads of a --part")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/self_reference"), help="output folder")
    args = parser.parse_args()
    for name in ("seeds", "num", "clips", "own", "steps", "jobs"):
        if getattr(args, name) < 1:
            parser.error(f"--{name} must be a positive integer, got {getattr(args, name)}")
    if args.seeds < 2:
        parser.error("--seeds must be at least 2: the intervals are over seeds")
    args.model_of = {}
    for kind in args.kinds:
        chosen = getattr(args, f"{kind}_rope") or MODELS[kind]["rope"]
        if "/" in chosen and not Path(chosen).is_dir():
            print(f"{kind}: no model at {chosen} (train it: {TRAIN_PHOTOS}); skipped", flush=True)
            continue
        args.model_of[kind] = chosen
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.part:
        run_part(args.part, args)
        return
    start = time.perf_counter()
    if not args.report_only:
        parts = [] if args.skip_images else [f"{kind}:{size_label(s)}" for kind in args.model_of for s in args.sizes]
        parts += [f"video:{size_label(size)}" for size in VIDEO_SIZES] if args.video else []
        run_all(sorted(parts, key=lambda p: math.prod(parse_size(p.partition(":")[2])), reverse=True), args)
    report(args)
    print(f"wrote {args.out} in {(time.perf_counter() - start) / 60:.1f} min")


if __name__ == "__main__":
    main()

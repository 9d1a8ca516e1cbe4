"""The report of benchmarks/extrapolation.py: tables, plots and default methods from the parts' raw values.

    python benchmarks/extrapolation.py --report-only     # the same, as part of the benchmark's command

Reads <out>/raw/*.csv (a row per data kind, model, method, size, seed and metric) and writes
extrapolation_images{,_full}.{md,csv} (detail and full SWD per model, method and size: mean over seeds
[95% interval]), extrapolation_best.md (the best method per data kind and size, and whether its interval
clears the runner-up's), extrapolation_recognition.md, extrapolation_video.{md,csv}, a plot per data
kind (extrapolation_<data>.png), and extrapolation_defaults.json: each bundled pipeline's
`default_extrapolation` (the lowest mean SWD per scale range; written into the bundled model_index.json
with write_defaults) and "fallback", the least-bad bands over every image data kind (`FALLBACK_EXTRAPOLATION`),
whose table of ratios to each kind's best is extrapolation_fallback.md.
"""

from __future__ import annotations

import csv
import json
from collections import defaultdict
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from axialrope.extrapolation import split_name  # noqa: E402
from axialrope.pipelines.dit.bundled import bundled_model_path  # noqa: E402
from axialrope.pipelines.evaluation.intervals import Interval, best_of, seed_interval  # noqa: E402

TRAINED_SIDE, TRAINED_VIDEO = 32, (8, 32, 32)
HEADLINE = "swd_detail"  # the images' metric that ranks methods (see benchmarks/extrapolation.py)
# scale ranges of default_extrapolation: (largest scale of the range, or None for "and beyond")
BANDS = (1.75, 2.5, None)
BUNDLED = {
    ("shapes", "rope"): "shapes-rope",
    ("shapes", "sincos"): "shapes-sincos",
    ("textures", "rope"): "textures-rope",
    ("textures", "sincos"): "textures-sincos",
}

METRIC_NAMES = {"swd_detail": "detail SWD", "swd": "SWD", "frame_swd": "frame SWD"}
Key = tuple[str, str, str, str, str]  # data, model, method, size, metric


def read_raw(folder: Path) -> dict[Key, list[float]]:
    """Per (data, model, method, size, metric), the values of every seed, in seed order."""
    values: dict[Key, dict[int, float]] = defaultdict(dict)
    files = sorted((folder / "raw").glob("*.csv"))
    if not files:
        raise SystemExit(f"no raw values in {folder / 'raw'}: run the benchmark's parts first")
    for path in files:
        with open(path, newline="") as f:
            for row in csv.DictReader(f):
                key = (row["data"], row["model"], row["method"], row["size"], row["metric"])
                values[key][int(row["seed"])] = float(row["value"])
    return {key: [seeds[s] for s in sorted(seeds)] for key, seeds in values.items()}


def size_of(label: str) -> tuple[int, ...]:
    return tuple(int(v) for v in label.split("x"))


def scale_of(label: str) -> float:
    """The largest per-axis factor of a size over the trained one."""
    size = size_of(label)
    trained = TRAINED_VIDEO if len(size) == 3 else (TRAINED_SIDE, TRAINED_SIDE)
    return max(s / t for s, t in zip(size, trained, strict=True))


def cell_text(interval: Interval | None, bold: bool = False, digits: int = 1) -> str:
    if interval is None:
        return ""
    text = f"{interval.value:.{digits}f} [{interval.low:.{digits}f}, {interval.high:.{digits}f}]"
    return f"**{text}**" if bold else text


class Results:
    """The raw values with their intervals, looked up by (data, model, method, size, metric)."""

    def __init__(self, values: dict[Key, list[float]]):
        self.values = values
        self.intervals = {key: seed_interval(v) for key, v in values.items() if len(v) >= 2}

    def key(self, data, model, method, size, metric=HEADLINE) -> Key:
        """The key a cell's values are under: at the trained size every method is the trained encoding,
        measured once as the model's "none"."""
        key = (data, model, method, size, metric)
        if key not in self.values and size == f"{TRAINED_SIDE}x{TRAINED_SIDE}" and model != "real":
            return (data, model, "none", size, metric)
        return key

    def get(self, data, model, method, size, metric=HEADLINE) -> Interval | None:
        return self.intervals.get(self.key(data, model, method, size, metric))

    def datas(self, video: bool = False) -> list[str]:
        """The image data kinds (shapes first), or with video=True the video one."""
        found = {k[0] for k in self.values if (k[0] == "moving shapes") == video}
        return sorted(found, key=lambda d: (d != "shapes", d))

    def sizes(self, data: str) -> list[str]:
        """Sizes of a data kind as the benchmark orders them: squares by scale, then non-square;
        videos by frame size, then by length."""

        def order(label: str):
            size = size_of(label)
            return (size[1], size[0]) if len(size) == 3 else (size[0] != size[1], scale_of(label), size)

        return sorted({k[3] for k in self.values if k[0] == data}, key=order)

    def rows(self, data: str) -> list[tuple[str, str]]:
        """(model, method) of a data kind, in first-seen order (the benchmark's order), the floor last."""
        seen = dict.fromkeys((k[1], k[2]) for k in self.values if k[0] == data and k[1] != "real")
        return list(seen) + [("real", "floor")]

    def candidates(self, data: str, size: str, metric: str = HEADLINE) -> dict[str, Interval]:
        """ "model method" -> interval of every method of every model at one size."""
        return {
            f"{m} {method}": self.get(data, m, method, size, metric)
            for m, method in self.rows(data)
            if m != "real" and self.get(data, m, method, size, metric) is not None
        }


def image_tables(
    results: Results,
    out: Path,
    metric: str = HEADLINE,
    name: str = "extrapolation_images",
    best_name: str | None = "extrapolation_best",
) -> None:
    """<name>.{md,csv} and (best_name) the table of best methods, for one metric."""
    lines, csv_rows, best_lines = [], [], []
    best_lines += ["| data | size | best | SWD | runner-up | SWD | clears | none | floor |", "|" + "---|" * 9]
    for data in results.datas():
        sizes = results.sizes(data)
        lines += [f"### {data}", "", "| model | method | " + " | ".join(sizes) + " |", "|" + "---|" * (2 + len(sizes))]
        winners = {}
        for size in sizes:
            cells = results.candidates(data, size, metric)
            if size != f"{TRAINED_SIDE}x{TRAINED_SIDE}" and len(cells) > 1:
                label, clears = best_of(cells)
                winners[size] = label if clears else None
                ranked = sorted(cells, key=lambda c: cells[c].value)
                best_lines.append(
                    " | ".join(
                        [
                            f"| {data}",
                            size,
                            f"{label}",
                            cell_text(cells[label]),
                            ranked[1],
                            cell_text(cells[ranked[1]]),
                            "yes" if clears else "no",
                            cell_text(cells.get("rope none")),
                            cell_text(results.get(data, "real", "floor", size, metric)) + " |",
                        ]
                    )
                )
        for model, method in results.rows(data):
            cells = [results.get(data, model, method, size, metric) for size in sizes]
            texts = [
                cell_text(c, bold=winners.get(size) == f"{model} {method}")
                for c, size in zip(cells, sizes, strict=True)
            ]
            lines.append(f"| {model} | {method} | " + " | ".join(texts) + " |")
            for size, cell in zip(sizes, cells, strict=True):
                if cell is not None:
                    seeds = results.values[results.key(data, model, method, size, metric)]
                    csv_rows.append(
                        [
                            data,
                            model,
                            method,
                            size,
                            f"{cell.value:.3f}",
                            f"{cell.low:.3f}",
                            f"{cell.high:.3f}",
                            " ".join(f"{v:.3f}" for v in seeds),
                        ]
                    )
        lines += [
            "",
            f"At {TRAINED_SIDE}x{TRAINED_SIDE} every method is the trained encoding: each row shows the "
            "model's `none` cell. Bold: the best of its column, its interval clear of the runner-up's.",
            "",
        ]
    (out / f"{name}.md").write_text("\n".join(lines))
    with open(out / f"{name}.csv", "w", newline="") as f:
        csv.writer(f).writerows([["data", "model", "method", "size", metric, "low", "high", "per seed"], *csv_rows])
    if best_name:
        (out / f"{best_name}.md").write_text("\n".join(best_lines) + "\n")


def recognition_table(results: Results, out: Path) -> None:
    sizes = sorted({k[3] for k in results.values if k[4] == "recognised"}, key=scale_of)
    if not sizes:
        return
    lines = ["| model | method | " + " | ".join(sizes) + " |", "|" + "---|" * (2 + len(sizes))]
    for model, method in results.rows("shapes"):
        cells = [results.intervals.get(("shapes", model, method, size, "recognised")) for size in sizes]
        if any(cells):
            lines.append(f"| {model} | {method} | " + " | ".join(cell_text(c, digits=2) for c in cells) + " |")
    (out / "extrapolation_recognition.md").write_text("\n".join(lines) + "\n")


VIDEO_METRICS = ("frame_swd", "motion_swd", "repetition", "persistence")


def video_table(results: Results, out: Path) -> None:
    data = "moving shapes"
    if not any(k[0] == data for k in results.values):
        return
    lines = ["| size | method | frame SWD | motion SWD | repetition | persistence |", "|" + "---|" * 6]
    csv_rows = []
    for size in results.sizes(data):
        for model, method in [("real", "floor")] + [r for r in results.rows(data) if r[0] != "real"]:
            cells = [results.intervals.get((data, model, method, size, metric)) for metric in VIDEO_METRICS]
            if not any(cells):
                continue
            texts = [cell_text(c, digits=1 if "swd" in m else 2) for c, m in zip(cells, VIDEO_METRICS, strict=True)]
            lines.append(f"| {size} | {'real (floor)' if model == 'real' else method} | " + " | ".join(texts) + " |")
            csv_rows.append([size, method, *(f"{c.value:.3f}" if c else "" for c in cells)])
    (out / "extrapolation_video.md").write_text("\n".join(lines) + "\n")
    with open(out / "extrapolation_video.csv", "w", newline="") as f:
        csv.writer(f).writerows([["size", "method", *VIDEO_METRICS], *csv_rows])


def plot(results: Results, out: Path) -> None:
    """SWD against the side's scale (square sizes), one panel without and one with entropy scaling."""
    for data in results.datas():
        sizes = [s for s in results.sizes(data) if size_of(s)[0] == size_of(s)[1]]
        scales = [scale_of(s) for s in sizes]
        figure, axes = plt.subplots(1, 2, figsize=(12, 4.5), sharey=True)
        colours = plt.cm.tab10.colors
        bases = list(dict.fromkeys(split_name(method)[0] for m, method in results.rows(data) if m == "rope"))
        for axis, entropy in zip(axes, (False, True), strict=True):
            rows = [(m, method) for m, method in results.rows(data) if m != "real" and split_name(method)[1] == entropy]
            for model, method in rows:
                measured = [(x, results.get(data, model, method, size)) for x, size in zip(scales, sizes, strict=True)]
                measured = [(x, c) for x, c in measured if c is not None]  # a method measured at some sizes only
                cells = [c for _, c in measured]
                base = split_name(method)[0]  # one colour per method in both panels
                colour = "black" if model == "sincos" else colours[bases.index(base) % len(colours)]
                axis.errorbar(
                    [x for x, _ in measured],
                    [c.value for c in cells],
                    yerr=[[c.value - c.low for c in cells], [c.high - c.value for c in cells]],
                    fmt="--o" if model == "sincos" else "-o",
                    capsize=3,
                    markersize=4,
                    color=colour,
                    label=f"{model} {method}",
                )
            floor = [results.get(data, "real", "floor", size) for size in sizes]
            axis.plot(scales, [c.value for c in floor], ":", color="grey", label="floor (real vs real)")
            axis.set(
                xlabel="side / trained side",
                yscale="log",
                title=f"{data}: {'with' if entropy else 'without'} entropy scaling",
            )
            axis.legend(fontsize=7, ncol=2)
        axes[0].set_ylabel("detail SWD x1e3 (lower is better)")
        figure.suptitle("mean over seeds with the 95% bootstrap interval; dotted: two real sets", fontsize=9)
        figure.tight_layout()
        figure.savefig(out / f"extrapolation_{data}.png", dpi=100)
        plt.close(figure)


def band_sizes(results: Results, data: str, lower: float, upper: float | None) -> list[str]:
    """The sizes of a data kind whose scale lies in (lower, upper] (upper None: no limit)."""
    return [s for s in results.sizes(data) if lower < scale_of(s) <= (upper or float("inf"))]


def band_means(results: Results, data: str, model: str, sizes: list[str], metric: str = HEADLINE) -> dict[str, float]:
    """method -> its mean `metric` over `sizes`, for the methods of `model` measured at every one of them."""
    means = {}
    for m, method in results.rows(data):
        cells = [results.intervals.get((data, m, method, size, metric)) for size in sizes]
        if m == model and sizes and all(cells):
            means[method] = sum(c.value for c in cells) / len(cells)
    return means


def make_band(upper: float | None, label: str, measured: str) -> dict:
    """A band of default_extrapolation for a table label such as "pi+entropy"."""
    method, entropy = split_name(label)
    return {
        "up_to_scale": upper,
        "method": method,
        "entropy_scaling": entropy,
        "measured": f"{measured} (benchmarks/extrapolation.py)",
    }


def default_bands(results: Results, data: str, model: str, metric: str = HEADLINE) -> list[dict]:
    """The method with the lowest mean `metric` (averaged over the sizes of each scale range) per range."""
    bands, lower = [], 1.0
    for upper in BANDS:
        sizes = band_sizes(results, data, lower, upper)
        lower = upper or lower
        means = band_means(results, data, model, sizes, metric)
        if means:
            best = min(means, key=means.get)
            bands.append(
                make_band(
                    upper,
                    best,
                    f"mean {METRIC_NAMES[metric]} {means[best]:.1f} over "
                    f"{', '.join(sizes)} against {means.get('none', float('nan')):.1f} for none",
                )
            )
    return bands


def band_label(lower: float, upper: float | None) -> str:
    return f"{lower:g}x to {upper:g}x" if upper else f"beyond {lower:g}x"


def fallback_ratios(results: Results) -> list[tuple[float, float | None, dict[str, dict[str, float]]]]:
    """Per scale range (lower, upper, ratios): ratios[method][data], the RoPE method's mean detail SWD over
    the range's sizes divided by the best method's there, for the methods measured on every image data kind
    that has sizes in the range."""
    ranges, lower = [], 1.0
    for upper in BANDS:
        ratios: dict[str, dict[str, float]] = defaultdict(dict)
        datas = set()
        for data in results.datas():
            means = band_means(results, data, "rope", band_sizes(results, data, lower, upper))
            datas |= {data} if means else set()
            for method, mean in means.items():
                ratios[method][data] = mean / min(means.values())
        ranges.append((lower, upper, {m: r for m, r in ratios.items() if len(r) == len(datas)}))
        lower = upper or lower
    return ranges


def fallback_bands(results: Results) -> list[dict]:
    """For a RoPE model of unknown data: per scale range, the method whose worst ratio over the data kinds
    (its mean SWD in the range over the best method's there) is smallest, the least-bad on every kind."""
    bands = []
    for _, upper, ratios in fallback_ratios(results):
        worst = {method: max(r.values()) for method, r in ratios.items()}
        if worst:
            best = min(worst, key=worst.get)
            bands.append(
                make_band(
                    upper,
                    best,
                    f"mean detail SWD at most {worst[best]:.2f}x the best method's on "
                    f"{', '.join(ratios[best])} (none: {worst.get('none', float('nan')):.2f}x)",
                )
            )
    return bands


def fallback_table(results: Results, out: Path) -> None:
    """extrapolation_fallback.md: per scale range, every RoPE method's ratio to the best on each data kind and
    its worst, lowest worst first; the chosen fallback (the first row) in bold."""
    lines = [
        "Ratio of each RoPE method's mean detail SWD over a range's sizes to the best method's, per data kind;",
        "the fallback is the method with the smallest worst ratio (bold). 1.00: the best on that kind.",
        "",
    ]
    for lower, upper, ratios in fallback_ratios(results):
        if not ratios:
            continue
        datas = list(next(iter(ratios.values())))
        sizes = {data: ", ".join(band_sizes(results, data, lower, upper)) for data in datas}
        lines += [
            f"### {band_label(lower, upper)} ({'; '.join(f'{d}: {s}' for d, s in sizes.items())})",
            "",
            "| method | " + " | ".join(datas) + " | worst |",
            "|" + "---|" * (len(datas) + 2),
        ]
        ranked = sorted(ratios, key=lambda m: max(ratios[m].values()))
        for rank, method in enumerate(ranked):
            cells = [f"{ratios[method][d]:.2f}" for d in datas] + [f"{max(ratios[method].values()):.2f}"]
            name = f"**{method}**" if rank == 0 else method
            lines.append(f"| {name} | " + " | ".join(cells) + " |")
        lines.append("")
    (out / "extrapolation_fallback.md").write_text("\n".join(lines))


def defaults(results: Results, out: Path, write: bool) -> dict[str, list[dict]]:
    chosen = {"fallback": fallback_bands(results)}
    for (data, model), name in BUNDLED.items():
        if any(k[0] == data and k[1] == model for k in results.values):
            chosen[name] = default_bands(results, data, model)
    if any(k[0] == "moving shapes" for k in results.values):
        chosen["moving-shapes-rope"] = default_bands(results, "moving shapes", "rope", "frame_swd")
    (out / "extrapolation_defaults.json").write_text(json.dumps(chosen, indent=2) + "\n")
    if write:
        for name, bands in chosen.items():
            if bands and name != "fallback":
                record_default(bundled_model_path(name), bands)
    return chosen


def record_default(folder: Path, bands: list[dict]) -> None:
    """Writes `default_extrapolation` into a pipeline folder's model_index.json (checked by the pipeline)."""
    from axialrope.pipelines.dit.default_extrapolation import write_default_extrapolation

    print(f"recorded default_extrapolation in {write_default_extrapolation(folder, bands)}")


def report(out: Path, write_defaults: bool = False) -> None:
    results = Results(read_raw(out))
    image_tables(results, out)
    image_tables(results, out, "swd", "extrapolation_images_full", None)
    recognition_table(results, out)
    video_table(results, out)
    plot(results, out)
    fallback_table(results, out)
    chosen = defaults(results, out, write_defaults)
    for name, bands in chosen.items():
        print(
            name,
            ", ".join(
                f"<= {b['up_to_scale'] or 'any'}: {b['method']}{'+entropy' if b['entropy_scaling'] else ''}"
                for b in bands
            ),
        )

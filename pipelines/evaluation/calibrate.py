"""Calibration: which extrapolation method a model should use at each scale, measured on the user's own images.

    from axialrope.pipelines import calibrate
    result = calibrate(pipe, "photos/", scales=[1.5, 2, 3])    # measures, then sets pipe's default_extrapolation
    print(result.table()); pipe.save_pretrained("outputs/pipe")  # the default goes into model_index.json

    result = measure(pipe, references, scales=[1.5, 2, 3])      # measures only; references: `draw(size, seed, num)`

A pipeline samples; calibration calls it, here, and records its picks through `set_default_extrapolation`.

For each scale (the side's ratio to the trained size) and method, the cell of `cells` once per seed, the
same seeds as benchmarks/extrapolation.py; the floor (two real sets) per seed; the model's own cell at the
trained size for reference. The best method per scale (lowest mean detail SWD) becomes that scale's band
of `default_extrapolation`, whose bounds lie halfway between the scales; `clears` says whether its
interval over seeds lies below the runner-up's. docs/extrapolation.md, "Calibrate your own model".
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import torch
from tqdm.auto import tqdm

from axialrope import Extrapolation
from axialrope.validation import is_int, is_real

from ..limits import LARGEST_SIDE, check_count, check_guidance_scale
from ..memory import check_sampling_memory, check_steps
from .cells import Method, floor_distance, image_methods, measure_cell
from .intervals import Interval, best_of, seed_interval

DEFAULT_SCALES = (1.5, 2.0, 3.0)
DEFAULT_NUM, DEFAULT_STEPS, DEFAULT_SEEDS = 8, 10, 3  # minutes for a `mini` model on two CPU cores
MAX_SCALE = 16.0


@dataclass
class ScaleResult:
    """One scale: its size (h, w), images per set and images too small, and per-seed detail SWDs of the floor
    and of each method (label -> values); `pictures`: seed 0's samples per label, "real" first."""

    scale: float
    size: tuple[int, int]
    images: int
    too_small: int
    floor: list[float]
    values: dict[str, list[float]]
    pictures: dict[str, torch.Tensor] = field(default_factory=dict, repr=False)

    def interval(self, label: str) -> Interval:
        return seed_interval(self.values[label])

    @property
    def ranked(self) -> list[str]:
        """Method labels, best (lowest mean) first."""
        return sorted(self.values, key=lambda label: sum(self.values[label]))

    @property
    def best(self) -> tuple[str, bool]:
        """(the best label, whether its interval clears the runner-up's)."""
        return best_of({label: self.interval(label) for label in self.values})


@dataclass
class Calibration:
    """What `calibrate` measured: the scales, the model's own cell at its trained size, the settings, and
    the `default_extrapolation` bands of the picks."""

    scales: list[ScaleResult]
    trained_size: tuple[int, int]
    trained: list[float]  # the model at its trained size, per seed
    trained_floor: list[float]
    num: int
    steps: int
    seeds: int
    guidance: float
    source: str = ""

    @property
    def bands(self) -> list[dict]:
        """`default_extrapolation`: per scale its best method, up to halfway to the next scale (the last: beyond)."""
        bands = []
        for index, result in enumerate(self.scales):
            upper = None if index == len(self.scales) - 1 else (result.scale + self.scales[index + 1].scale) / 2
            label, clears = result.best
            method = Method.from_label(label)
            bands.append(
                {
                    "up_to_scale": upper,
                    "method": method.name,
                    "entropy_scaling": method.entropy_scaling,
                    "measured": self._note(result, label, clears),
                }
            )
        return bands

    def _note(self, result: ScaleResult, label: str, clears: bool) -> str:
        value = result.interval(label).value
        runner = next((other for other in result.ranked if other != label), None)
        versus = (
            (
                f"; {'clear of' if clears else 'not clear of'} the runner-up {runner} "
                f"({result.interval(runner).value:.1f})"
            )
            if runner
            else ""
        )
        none = f" against {result.interval('none').value:.1f} for none" if "none" in result.values else ""
        return (
            f"detail SWD {value:.1f} at {result.size[0]}x{result.size[1]} ({result.scale:g}x){none}, floor "
            f"{sum(result.floor) / len(result.floor):.1f}{versus}; {result.images} images of {self.source or 'the'}"
            f" references, {self.seeds} seeds, {self.steps} steps (axialrope calibrate)"
        )

    @property
    def unclear(self) -> list[ScaleResult]:
        """The scales whose best method's interval does not clear the runner-up's."""
        return [result for result in self.scales if len(result.values) > 1 and not result.best[1]]

    def table(self) -> str:
        """The Markdown table: a row per method, a column per size (mean detail SWD over seeds [95% interval]),
        the best of each column in bold, the floor last; then the picks."""

        def text(interval: Interval, bold: bool = False) -> str:
            shown = f"{interval.value:.1f} [{interval.low:.1f}, {interval.high:.1f}]"
            return f"**{shown}**" if bold else shown

        h, w = self.trained_size
        heads = [f"1x {h}x{w}"] + [f"{r.scale:g}x {r.size[0]}x{r.size[1]}" for r in self.scales]
        lines = ["| method | " + " | ".join(heads) + " |", "|" + "---|" * (1 + len(heads))]
        labels = list(dict.fromkeys(label for r in self.scales for label in r.values))
        for label in labels:
            cells = [text(seed_interval(self.trained)) if label == "none" else ""]
            cells += [text(r.interval(label), label == r.best[0]) if label in r.values else "" for r in self.scales]
            lines.append(f"| {label} | " + " | ".join(cells) + " |")
        floors = [self.trained_floor] + [r.floor for r in self.scales]
        lines.append("| real (floor) | " + " | ".join(text(seed_interval(f)) for f in floors) + " |")
        lines += [
            "",
            f"Detail SWD x1e3 (lower is better): mean over {self.seeds} seeds [95% bootstrap interval]; "
            f"{self.num} samples a seed against as many real images, {self.steps} sampler steps.",
            "",
        ]
        for result in self.scales:
            label, clears = result.best
            runner = next((other for other in result.ranked if other != label), None)
            verdict = (
                ""
                if runner is None
                else (
                    f", clear of the runner-up {runner}"
                    if clears
                    else f", NOT clear of the runner-up {runner}: within the seed spread"
                )
            )
            lines.append(
                f"- {result.scale:g}x ({result.size[0]}x{result.size[1]}, {result.images} images a set, "
                f"{result.too_small} too small): {label}{verdict}"
            )
        return "\n".join(lines) + "\n"

    def to_dict(self) -> dict:
        """Everything measured, per seed, for calibration.json."""
        return {
            "trained_size": list(self.trained_size),
            "num": self.num,
            "steps": self.steps,
            "seeds": self.seeds,
            "guidance": self.guidance,
            "source": self.source,
            "trained": {"none": self.trained, "floor": self.trained_floor},
            "scales": [
                {
                    "scale": r.scale,
                    "size": list(r.size),
                    "images": r.images,
                    "too_small": r.too_small,
                    "floor": r.floor,
                    "values": r.values,
                    "best": r.best[0],
                    "clears": r.best[1],
                }
                for r in self.scales
            ],
            "default_extrapolation": self.bands,
        }


def target_size(trained_size: Sequence[int], patch: Sequence[int], scale: float) -> tuple[int, int]:
    """The size (h, w) `scale` times the trained one, each side rounded to a whole number of patches."""
    return tuple(max(p, round(t * scale / p) * p) for t, p in zip(trained_size, patch, strict=True))


def target_sizes(
    trained_size: Sequence[int], patch: Sequence[int], scales: Sequence[float], argument: str = "scales"
) -> dict[float, tuple[int, int]]:
    """{scale: `target_size`} of checked `scales`; ValueError naming `argument` for a scale whose size is beyond
    `sizes.LARGEST_SIDE`, rounds to the trained size (a pick there would describe the trained size, not the
    scale), or rounds to the size of another scale (one size would get two results)."""
    sizes: dict[float, tuple[int, int]] = {}
    trained = tuple(trained_size)
    for scale in scales:
        if max(trained) * scale > LARGEST_SIDE:
            raise ValueError(
                f"{argument}: {scale:g} times {trained[0]}x{trained[1]} is beyond {LARGEST_SIDE} pixels a side"
            )
        size = target_size(trained, patch, scale)
        if size == trained:
            least = min((t + p) / t for t, p in zip(trained, patch, strict=True))
            raise ValueError(
                f"{argument}: {scale:g} rounds to {size[0]}x{size[1]}, the trained size, in whole patches of "
                f"{patch[0]}x{patch[1]}; give a scale of at least {least:.4g}"
            )
        same = next((other for other, seen in sizes.items() if seen == size), None)
        if same is not None:
            raise ValueError(
                f"{argument}: {same:g} and {scale:g} both round to {size[0]}x{size[1]} in whole patches of "
                f"{patch[0]}x{patch[1]}; give scales that reach different sizes"
            )
        sizes[scale] = size
    return sizes


def check_scales(scales, argument: str = "scales") -> list[float]:
    """`scales` as a sorted list of distinct floats, each above 1 and at most MAX_SCALE; ValueError if not."""
    if isinstance(scales, (int, float)) or not isinstance(scales, Sequence) or not scales:
        raise ValueError(f"{argument} must be a non-empty list of scales (e.g. 1.5 2 3), got {scales!r}")
    for scale in scales:
        if not is_real(scale) or not math.isfinite(scale) or not 1 < scale <= MAX_SCALE:
            raise ValueError(
                f"{argument}: each scale must be a number above 1 (the trained size) and at most "
                f"{MAX_SCALE:g}, got {scale!r}"
            )
    return sorted({float(s) for s in scales})


def check_methods(methods, rope: bool, argument: str = "methods") -> list[Method]:
    """Method labels ("pi", "yarn+entropy") or `Method`s, checked: known image methods, and only `none` (with
    or without entropy scaling) for a sin-cos model. None: every method, without and with entropy scaling."""
    if methods is None:
        return image_methods(rope)
    if isinstance(methods, str) or not isinstance(methods, Sequence) or not methods:
        raise ValueError(f"{argument} must be a non-empty list of method names, got {methods!r}")
    checked = []
    for method in methods:
        method = Method.from_label(method) if isinstance(method, str) else method
        if not isinstance(method, Method):
            raise TypeError(f"{argument}: expected method names such as 'pi' or 'yarn+entropy', got {method!r}")
        try:
            Extrapolation(method.name, entropy_scaling=method.entropy_scaling)
        except ValueError as error:
            raise ValueError(f"{argument}: {error}") from None
        if method.name == "riflex":
            raise ValueError(f"{argument}: riflex extrapolates video length; this is an image model")
        if not rope and method.name != "none":
            raise ValueError(
                f"{argument}: {method.label} changes RoPE frequencies, but this model uses absolute "
                "sin-cos positions; only none and none+entropy apply"
            )
        if method not in checked:
            checked.append(method)
    return checked


def check_counts(num, steps, seeds) -> None:
    """ValueError naming the first of num, steps (positive) and seeds (at least 2) that is not."""
    for name, value, least in (("num", num, 1), ("steps", steps, 1), ("seeds", seeds, 2)):
        if not is_int(value) or value < least:
            why = " (the interval is over seeds)" if name == "seeds" else ""
            raise ValueError(f"{name} must be an integer >= {least}{why}, got {value!r}")
        check_count(value, name)
    check_steps(steps, "steps")


def plan(
    pipe,
    references,
    scales,
    methods=None,
    num: int = DEFAULT_NUM,
    steps: int = DEFAULT_STEPS,
    seeds: int = DEFAULT_SEEDS,
    guidance: float | None = None,
) -> tuple[list[float], list[Method], float, dict]:
    """Everything `measure` checks before any work: (scales, methods, guidance, sizes {scale: (h, w)}).

    ValueError for a video model, bad scales, methods or counts, sizes the references cannot serve (when they
    can `check`), or sampling that needs more memory than is free."""
    model = pipe.transformer
    if pipe.is_video:
        raise ValueError("calibrate measures image models; this is a video model")
    scales, methods = check_scales(scales), check_methods(methods, model.rope is not None)
    check_counts(num, steps, seeds)
    conditional = model.null_class is not None
    guidance = (2.0 if conditional else 1.0) if guidance is None else guidance
    try:
        check_guidance_scale(guidance)
    except ValueError as error:
        raise ValueError(f"guidance: {error}") from None
    sizes = target_sizes(pipe.trained_size, model.patchify.patch, scales)
    if hasattr(references, "check"):
        references.check([pipe.trained_size, *sizes.values()])
    largest = max(sizes.values(), key=math.prod)
    check_sampling_memory(model, num, largest, conditional and guidance != 1.0, model.device, "num/scales", steps=steps)
    return scales, methods, guidance, sizes


def calibrate(
    pipe,
    reference_images,
    scales: Sequence[float] = DEFAULT_SCALES,
    methods=None,
    num: int = DEFAULT_NUM,
    steps: int = DEFAULT_STEPS,
    seeds: int = DEFAULT_SEEDS,
    guidance_scale: float | None = None,
    class_labels=None,
    progress: bool = True,
    **pipeline_settings,
) -> Calibration:
    """Measure every method at each scale on `reference_images` (a folder, as training reads one; a tensor
    (n, 3, H, W) in [0, 1]; or PIL images) and record the best per scale as `pipe`'s `default_extrapolation`.

    A diffusers pipeline of a registered family (Flux, Qwen-Image, Wan, ...) goes to
    `diffusers_calibration.calibration.calibrate_pipeline`: `calibrate(pipe, prompts, sizes=[...], out=...)`;
    scales, num, steps and seeds left at the values below take that function's defaults, as the CLI does.

    pipe: an image `AxialDiTPipeline`; scales: side ratios above 1; methods: labels such as "pi" or
    "yarn+entropy" (default: all, without and with entropy scaling); num, steps, seeds: samples a seed, sampler
    steps, seeds (at least 2); class_labels: ids of a tensor's images. Returns the `Calibration` (`table()`,
    `bands`); `pipe.save_pretrained` then writes the default. See docs/extrapolation.md.
    """
    from .diffusers_calibration.calibration import calibrate_pipeline, is_family_pipeline  # heavy: keeps --help fast
    from .references import ReferenceImages

    if is_family_pipeline(pipe):  # prompts in place of reference images; sizes or frames in place of the scales
        if class_labels is not None:
            raise TypeError("class_labels: a diffusers pipeline is calibrated on prompts, not class labels")
        # the shared arguments left at their defaults take the pipeline calibration's own
        given = dict(scales=scales if scales is None else tuple(scales), num=num, steps=steps, seeds=seeds)
        defaults = dict(scales=DEFAULT_SCALES, num=DEFAULT_NUM, steps=DEFAULT_STEPS, seeds=DEFAULT_SEEDS)
        shared = {name: value for name, value in given.items() if value != defaults[name]}
        shared.update(methods=methods, guidance_scale=guidance_scale, progress=progress)
        return calibrate_pipeline(pipe, reference_images, **shared, **pipeline_settings)
    if pipeline_settings:
        raise TypeError(f"calibrate() got unexpected keyword arguments {sorted(pipeline_settings)}")
    references = ReferenceImages(
        reference_images, pipe.config.class_names, pipe.transformer.config.num_classes, labels=class_labels
    )
    result = measure(pipe, references, scales, methods, num, steps, seeds, guidance_scale, progress)
    pipe.set_default_extrapolation(result.bands)
    return result


def measure(
    pipe,
    references,
    scales=DEFAULT_SCALES,
    methods=None,
    num: int = DEFAULT_NUM,
    steps: int = DEFAULT_STEPS,
    seeds: int = DEFAULT_SEEDS,
    guidance: float | None = None,
    progress: bool = True,
    source: str = "",
) -> Calibration:
    """Measure every method at every scale on `references` (see the module docstring); records nothing.

    Args:
        pipe: an image `AxialDiTPipeline`.
        references: a `references.ReferenceImages`, or any object whose draw(size, seed, num) gives
            `cells.References` (the benchmark's procedural renders).
        scales: ratios of the side to the trained side, each above 1.
        methods: labels ("pi", "yarn+entropy") or `Method`s; default every method without and with entropy
            scaling (none and none+entropy for a sin-cos model).
        num, steps, seeds: samples a seed and set, sampler steps, seeds (at least 2: the interval).
        guidance: classifier-free guidance (default 2 for a class-conditional model, else 1).
        progress: a progress bar with the time left. source: how the notes name the references.
    """
    scales, methods, guidance, sizes = plan(pipe, references, scales, methods, num, steps, seeds, guidance)
    cost = lambda size: math.prod(size) * steps  # noqa: E731  (work of a cell, roughly)
    total = seeds * (cost(pipe.trained_size) + sum(cost(size) * len(methods) for size in sizes.values()))
    bar = tqdm(
        total=total,
        disable=not progress,
        desc="calibrate",
        unit_scale=True,
        bar_format="{desc} {percentage:3.0f}%|{bar}| [{elapsed}<{remaining}]",
    )
    bar_config = dict(getattr(pipe, "_progress_bar_config", {}))
    pipe.set_progress_bar_config(disable=True)
    try:
        trained, trained_floor = [], []
        for seed in range(seeds):
            drawn = references.draw(pipe.trained_size, seed, num)
            bar.set_description(f"calibrate {pipe.trained_size[0]}x{pipe.trained_size[1]} none seed {seed}")
            trained.append(measure_cell(pipe, Method("none"), drawn, steps, guidance, seed).distance.detail)
            trained_floor.append(floor_distance(drawn).detail)
            bar.update(cost(pipe.trained_size))
        results = [
            _measure_scale(pipe, references, scale, size, methods, num, steps, seeds, guidance, bar, cost(size))
            for scale, size in sizes.items()
        ]
    finally:
        bar.close()
        pipe.set_progress_bar_config(**bar_config)
    return Calibration(results, tuple(pipe.trained_size), trained, trained_floor, num, steps, seeds, guidance, source)


def _measure_scale(
    pipe,
    references,
    scale: float,
    size: tuple[int, int],
    methods: list[Method],
    num: int,
    steps: int,
    seeds: int,
    guidance: float,
    bar,
    cell_cost: int,
) -> ScaleResult:
    """Every method at one size, every seed."""
    small = references.usable(*size)[1] if hasattr(references, "usable") else 0
    result = ScaleResult(scale, size, 0, small, [], {method.label: [] for method in methods})
    for seed in range(seeds):
        drawn = references.draw(size, seed, num)
        result.images = len(drawn.real)
        result.floor.append(floor_distance(drawn).detail)
        if seed == 0:
            result.pictures["real"] = drawn.real
        for method in methods:
            bar.set_description(f"calibrate {size[0]}x{size[1]} {method.label} seed {seed}")
            cell = measure_cell(pipe, method, drawn, steps, guidance, seed)
            result.values[method.label].append(cell.distance.detail)
            if seed == 0:
                result.pictures[method.label] = cell.samples
            bar.update(cell_cost)
    return result


__all__ = [
    "DEFAULT_NUM",
    "DEFAULT_SCALES",
    "DEFAULT_SEEDS",
    "DEFAULT_STEPS",
    "Calibration",
    "ScaleResult",
    "calibrate",
    "check_methods",
    "check_scales",
    "measure",
    "plan",
    "target_size",
    "target_sizes",
]

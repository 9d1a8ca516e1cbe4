"""Calibration: which extrapolation method a model should use at each scale, measured on the user's own images,
or, with none, by the reference-free score (`self_reference`) against the model's own samples at its trained size.

    from axialrope.pipelines import calibrate
    result = calibrate(pipe, "photos/", scales=[1.5, 2, 3])    # measures, then sets pipe's default_extrapolation
    print(result.table()); pipe.save_pretrained("outputs/pipe")  # the default goes into model_index.json
    result = calibrate(pipe, None, scales=[2])                  # no real images: the reference-free score

    result = measure(pipe, references, scales=[1.5, 2, 3])      # measures only; references: `draw(size, seed, num)`

A pipeline samples; calibration calls it, here, and records its picks through `set_default_extrapolation`.

For each scale (the side's ratio to the trained size) and method, the cell of `cells` once per seed, the
same seeds as benchmarks/extrapolation.py; the floor (two real sets) per seed; the model's own cell at the
trained size for reference. The best method per scale (lowest mean detail SWD) becomes that scale's band
of `default_extrapolation`, whose bounds lie halfway between the scales; `clears` says whether its
interval over seeds lies below the runner-up's. docs/extrapolation.md, "Calibrate your own model".

Without references (None) every cell is scored by `self_reference.self_reference_score` against the model's own
samples at its trained size (`cells.own_reference`, per seed), and the "floor" is that score of the model's own
samples at the trained size: what a method that extends the model perfectly would get. A video model is
calibrated this way only, in time: its scales lengthen the clip, the frame size stays.
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
from .cells import (
    OWN_FACTOR,
    Method,
    floor_distance,
    image_methods,
    measure_cell,
    measure_self_cell,
    own_reference,
    video_methods,
)
from .intervals import Interval, best_of, seed_interval

DEFAULT_SCALES = (1.5, 2.0, 3.0)
DEFAULT_NUM, DEFAULT_STEPS, DEFAULT_SEEDS = 8, 10, 3  # minutes for a `mini` model on two CPU cores
MAX_SCALE = 16.0
REAL, SELF = "real", "self"  # what a calibration scored against: real images, or the model's own samples
CALIBRATION_KIND, CALIBRATION_VERSION = "axialrope-calibration", 1  # calibration.json's "kind" and "version"


@dataclass
class ScaleResult:
    """One scale: its size (h, w) (or (t, h, w)), images per set and images too small, and per-seed values (detail
    SWDs, or reference-free scores) of the floor and of each method (label -> values); `pictures`: seed 0's
    samples per label, "real" (or "own") first; `parts`: per label and seed, the reference-free score's parts."""

    scale: float
    size: tuple[int, int]
    images: int
    too_small: int
    floor: list[float]
    values: dict[str, list[float]]
    pictures: dict[str, torch.Tensor] = field(default_factory=dict, repr=False)
    parts: dict[str, list[dict]] = field(default_factory=dict, repr=False)

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
    the `default_extrapolation` bands of the picks; `reference`: REAL (detail SWD against real images) or SELF
    (the reference-free score against the model's own samples)."""

    scales: list[ScaleResult]
    trained_size: tuple[int, int]
    trained: list[float]  # the model at its trained size, per seed
    trained_floor: list[float]
    num: int
    steps: int
    seeds: int
    guidance: float
    source: str = ""
    reference: str = REAL
    trained_grid: tuple[int, ...] = ()  # the trained size in tokens, (h, w) or (t, h, w): what the bands scale

    @property
    def bands(self) -> list[dict]:
        """`default_extrapolation`: per scale its best method, up to halfway to the next scale (the last: beyond);
        a size that is not square also records its "aspect" (h / w of the frame), which `auto` matches."""
        bands = []
        for index, result in enumerate(self.scales):
            upper = None if index == len(self.scales) - 1 else (result.scale + self.scales[index + 1].scale) / 2
            label, clears = result.best
            method = Method.from_label(label)
            height, width = result.size[-2:]
            aspect = {"aspect": height / width} if height != width else {}
            bands.append(
                {
                    "up_to_scale": upper,
                    "method": method.name,
                    "entropy_scaling": method.entropy_scaling,
                    **aspect,
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
        floor = sum(result.floor) / len(result.floor)
        where = f"at {size_text(result.size)} ({result.scale:g}x){none}"
        if self.reference == SELF:
            return (
                f"reference-free score {value:.1f} {where}, the model's own at its trained size {floor:.1f}{versus}; "
                f"no real images: {result.images} samples against {OWN_FACTOR * self.num} of the model's own, "
                f"{self.seeds} seeds, {self.steps} steps (axialrope calibrate)"
            )
        return (
            f"detail SWD {value:.1f} {where}, floor "
            f"{floor:.1f}{versus}; {result.images} images of {self.source or 'the'}"
            f" references, {self.seeds} seeds, {self.steps} steps (axialrope calibrate)"
        )

    @property
    def unclear(self) -> list[ScaleResult]:
        """The scales whose best method's interval does not clear the runner-up's."""
        return [result for result in self.scales if len(result.values) > 1 and not result.best[1]]

    def table(self) -> str:
        """The Markdown table: a row per method, a column per size (mean detail SWD, or reference-free score, over
        seeds [95% interval]), the best of each column in bold, the floor last; then the picks."""

        def text(interval: Interval, bold: bool = False) -> str:
            shown = f"{interval.value:.1f} [{interval.low:.1f}, {interval.high:.1f}]"
            return f"**{shown}**" if bold else shown

        heads = [f"1x {size_text(self.trained_size)}"] + [f"{r.scale:g}x {size_text(r.size)}" for r in self.scales]
        lines = ["| method | " + " | ".join(heads) + " |", "|" + "---|" * (1 + len(heads))]
        labels = list(dict.fromkeys(label for r in self.scales for label in r.values))
        for label in labels:
            cells = [text(seed_interval(self.trained)) if label == "none" else ""]
            cells += [text(r.interval(label), label == r.best[0]) if label in r.values else "" for r in self.scales]
            lines.append(f"| {label} | " + " | ".join(cells) + " |")
        floors = [self.trained_floor] + [r.floor for r in self.scales]
        floor_label = "own at 1x (floor)" if self.reference == SELF else "real (floor)"
        lines.append(f"| {floor_label} | " + " | ".join(text(seed_interval(f)) for f in floors) + " |")
        if self.reference == SELF:
            what = (
                "Reference-free score (lower is better; no real images: the samples against the model's own at its "
                f"trained size, axialrope.pipelines.evaluation.self_reference): mean over {self.seeds} seeds [95% "
                f"bootstrap interval]; {self.num} samples a seed against {OWN_FACTOR * self.num} of the model's own, "
                f"{self.steps} sampler steps. The floor: the model's own samples at its trained size, so scored."
            )
        else:
            what = (
                f"Detail SWD x1e3 (lower is better): mean over {self.seeds} seeds [95% bootstrap interval]; "
                f"{self.num} samples a seed against as many real images, {self.steps} sampler steps."
            )
        lines += ["", what, ""]
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
            sets = (
                f"{result.images} samples a seed"
                if self.reference == SELF
                else f"{result.images} images a set, {result.too_small} too small"
            )
            lines.append(f"- {result.scale:g}x ({size_text(result.size)}, {sets}): {label}{verdict}")
        lines += self._counted()
        return "\n".join(lines) + "\n"

    def _counted(self) -> list[str]:
        """For the reference-free score: per scale, the methods whose speckle, blur or repetition counted
        against them (their penalty's mean over seeds), largest first."""
        lines = []
        for result in self.scales:
            penalties = {
                label: sum(part["penalty"] for part in parts) / len(parts) for label, parts in result.parts.items()
            }
            counted = sorted((label for label in penalties if penalties[label] > 0), key=penalties.get, reverse=True)
            if counted:
                shown = ", ".join(f"{label} (x{1 + penalties[label]:.2f})" for label in counted)
                lines.append(
                    f"- {result.scale:g}x: speckle, blur or repetition beyond the model's own counted against {shown}"
                )
        return [""] + lines if lines else []

    def to_dict(self) -> dict:
        """Everything measured, per seed, for calibration.json (its keys: CALIBRATION_KIND, the version, what the
        values were scored against, the trained grid and size, the settings, every scale, the bands)."""
        return {
            "kind": CALIBRATION_KIND,
            "version": CALIBRATION_VERSION,
            "reference": self.reference,
            "trained_grid": list(self.trained_grid),
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
                    **({"parts": r.parts} if r.parts else {}),
                }
                for r in self.scales
            ],
            "default_extrapolation": self.bands,
        }


def size_text(size: Sequence[int]) -> str:
    """(h, w) -> "hxw", (t, h, w) -> "txhxw"."""
    return "x".join(str(side) for side in size)


def target_size(trained_size: Sequence[int], patch: Sequence[int], scale: float) -> tuple[int, ...]:
    """The size (h, w) `scale` times the trained one, each side rounded to a whole number of patches; for a video
    (t, h, w), the frames `scale` times the trained ones (rounded to whole temporal patches), the frame size kept."""
    if len(trained_size) == 3:
        frames, patch_t = trained_size[0], patch[0]
        return (max(patch_t, round(frames * scale / patch_t) * patch_t), *trained_size[1:])
    return tuple(max(p, round(t * scale / p) * p) for t, p in zip(trained_size, patch, strict=True))


def target_sizes(
    trained_size: Sequence[int], patch: Sequence[int], scales: Sequence[float], argument: str = "scales"
) -> dict[float, tuple[int, ...]]:
    """{scale: `target_size`} of checked `scales` ((h, w), or (t, h, w) of a video model); ValueError naming
    `argument` for a scale whose size is beyond `limits.LARGEST_SIDE`, rounds to the trained size (a pick there
    would describe the trained size, not the scale), or rounds to the size of another scale (one size would get
    two results)."""
    sizes: dict[float, tuple[int, ...]] = {}
    trained = tuple(trained_size)
    scaled = trained[:1] if len(trained) == 3 else trained  # the axes a scale stretches: frames, or the sides
    patches = "x".join(str(p) for p in patch)
    for scale in scales:
        if max(scaled) * scale > LARGEST_SIDE:
            raise ValueError(
                f"{argument}: {scale:g} times {size_text(trained)} is beyond {LARGEST_SIDE} pixels (frames) an axis"
            )
        size = target_size(trained, patch, scale)
        if size == trained:
            least = min((t + p) / t for t, p in zip(scaled, patch, strict=False))
            raise ValueError(
                f"{argument}: {scale:g} rounds to {size_text(size)}, the trained size, in whole patches of "
                f"{patches}; give a scale of at least {least:.4g}"
            )
        same = next((other for other, seen in sizes.items() if seen == size), None)
        if same is not None:
            raise ValueError(
                f"{argument}: {same:g} and {scale:g} both round to {size_text(size)} in whole patches of "
                f"{patches}; give scales that reach different sizes"
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


def check_methods(methods, rope: bool, argument: str = "methods", video: bool = False) -> list[Method]:
    """Method labels ("pi", "yarn+entropy") or `Method`s, checked: known image methods (and riflex for a video
    model), and only `none` (with or without entropy scaling) for a sin-cos model. None: every method, without and
    with entropy scaling."""
    if methods is None:
        return video_methods(rope) if video else image_methods(rope)
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
        if method.name == "riflex" and not video:
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
    """Everything `measure` checks before any work: (scales, methods, guidance, sizes {scale: (h, w) or (t, h, w)}).

    references None: the reference-free score. ValueError for real references of a video model, bad scales,
    methods or counts, sizes the references cannot serve (when they can `check`), or sampling that needs more
    memory than is free."""
    model = pipe.transformer
    if pipe.is_video and references is not None:
        raise ValueError(
            "reference_images: a video model is calibrated by the reference-free score only (real clips are not "
            "read); give None"
        )
    scales, methods = check_scales(scales), check_methods(methods, model.rope is not None, video=pipe.is_video)
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
    if references is None:  # the model's own samples: OWN_FACTOR times as many, at the trained size
        shape = tuple(pipe.trained_size)
        check_sampling_memory(
            model, OWN_FACTOR * num, shape, conditional and guidance != 1.0, model.device, "num", steps=steps
        )
    return scales, methods, guidance, sizes


def calibrate(
    pipe,
    reference_images=None,
    scales: Sequence[float] | None = None,
    methods=None,
    num: int | None = None,
    steps: int | None = None,
    seeds: int | None = None,
    guidance_scale: float | None = None,
    class_labels=None,
    progress: bool = True,
    **pipeline_settings,
) -> Calibration:
    """Measure every method at each scale on `reference_images` (a folder, as training reads one; a tensor
    (n, 3, H, W) in [0, 1]; or PIL images) or, with None, by the reference-free score against the model's own
    samples at its trained size; record the best per scale as `pipe`'s `default_extrapolation`.

    A diffusers pipeline of a registered family (Flux, Qwen-Image, Wan, ...) goes to
    `diffusers_calibration.calibration.calibrate_pipeline`: `calibrate(pipe, prompts, sizes=[...], out=...)`;
    scales, num, steps and seeds left at None take that function's defaults, as the CLI does.

    pipe: an `AxialDiTPipeline` (a video model only with reference_images None: in time, its scales lengthen the
    clip); scales: side (frame count) ratios above 1; methods: labels such as "pi" or "yarn+entropy" (default: all,
    without and with entropy scaling; riflex too for a video model); num, steps, seeds: samples a seed, sampler
    steps, seeds (at least 2); None: DEFAULT_SCALES, DEFAULT_NUM, DEFAULT_STEPS, DEFAULT_SEEDS; class_labels: ids
    of a tensor's images. Returns the `Calibration` (`table()`,
    `bands`, `to_dict()`: calibration.json); `pipe.save_pretrained` then writes the default. ValueError, before
    any sampling, naming the argument that is wrong. See docs/extrapolation.md.
    """
    from .diffusers_calibration.calibration import calibrate_pipeline, is_family_pipeline  # heavy: keeps --help fast
    from .references import ReferenceImages

    if is_family_pipeline(pipe):  # prompts in place of reference images; sizes or frames in place of the scales
        if class_labels is not None:
            raise TypeError("class_labels: a diffusers pipeline is calibrated on prompts, not class labels")
        # the shared arguments left at None take the pipeline calibration's own defaults
        given = dict(scales=scales, num=num, steps=steps, seeds=seeds)
        shared = {name: value for name, value in given.items() if value is not None}
        shared.update(methods=methods, guidance_scale=guidance_scale, progress=progress)
        return calibrate_pipeline(pipe, reference_images, **shared, **pipeline_settings)
    if pipeline_settings:
        raise TypeError(f"calibrate() got unexpected keyword arguments {sorted(pipeline_settings)}")
    if pipe.is_video and reference_images is not None:
        raise ValueError(
            "reference_images: a video model is calibrated by the reference-free score only (real clips are not "
            "read); give None"
        )
    if reference_images is None and class_labels is not None:
        raise ValueError(
            "class_labels: labels name the images of a tensor of reference_images; without reference images the "
            "model's classes take turns, give class_labels=None"
        )
    references = (
        None
        if reference_images is None
        else ReferenceImages(
            reference_images, pipe.config.class_names, pipe.transformer.config.num_classes, labels=class_labels
        )
    )
    scales, num = DEFAULT_SCALES if scales is None else scales, DEFAULT_NUM if num is None else num
    steps, seeds = DEFAULT_STEPS if steps is None else steps, DEFAULT_SEEDS if seeds is None else seeds
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
        pipe: an `AxialDiTPipeline` (a video model only with references None).
        references: a `references.ReferenceImages`, or any object whose draw(size, seed, num) gives
            `cells.References` (the benchmark's procedural renders); None: the reference-free score against the
            model's own samples at its trained size (`cells.own_reference`).
        scales: ratios of the side (of the frames, for a video model) to the trained one, each above 1.
        methods: labels ("pi", "yarn+entropy") or `Method`s; default every method without and with entropy
            scaling (none and none+entropy for a sin-cos model).
        num, steps, seeds: samples a seed and set, sampler steps, seeds (at least 2: the interval).
        guidance: classifier-free guidance (default 2 for a class-conditional model, else 1).
        progress: a progress bar with the time left. source: how the notes name the references.
    """
    scales, methods, guidance, sizes = plan(pipe, references, scales, methods, num, steps, seeds, guidance)
    cost = lambda size: math.prod(size) * steps  # noqa: E731  (work of a cell, roughly)
    own_cost = cost(pipe.trained_size) * (OWN_FACTOR if references is None else 0)  # the model's own samples
    total = seeds * (cost(pipe.trained_size) + own_cost + sum(cost(size) * len(methods) for size in sizes.values()))
    bar = tqdm(
        total=total,
        disable=not progress,
        desc="calibrate",
        unit_scale=True,
        bar_format="{desc} {percentage:3.0f}%|{bar}| [{elapsed}<{remaining}]",
    )
    bar_config = dict(getattr(pipe, "_progress_bar_config", {}))
    pipe.set_progress_bar_config(disable=True)
    trained_text, grid = size_text(pipe.trained_size), tuple(pipe.transformer.base_grid)
    settings = dict(num=num, steps=steps, seeds=seeds, guidance=guidance, trained_grid=grid)
    try:
        if references is None:
            owns, trained = [], []
            for seed in range(seeds):
                bar.set_description(f"calibrate {trained_text} the model's own, seed {seed}")
                owns.append(own_reference(pipe, seed, num, steps, guidance))
                trained.append(measure_self_cell(pipe, Method("none"), owns[-1], {}, steps, guidance, seed).score.value)
                bar.update(cost(pipe.trained_size) + own_cost)
            results = [
                _measure_scale_self(pipe, owns, trained, scale, size, methods, steps, guidance, bar, cost(size))
                for scale, size in sizes.items()
            ]
            own = "the model's own samples"
            return Calibration(
                results, tuple(pipe.trained_size), trained, list(trained), **settings, source=own, reference=SELF
            )
        trained, trained_floor = [], []
        for seed in range(seeds):
            drawn = references.draw(pipe.trained_size, seed, num)
            bar.set_description(f"calibrate {trained_text} none seed {seed}")
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
    return Calibration(results, tuple(pipe.trained_size), trained, trained_floor, **settings, source=source)


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


def _measure_scale_self(
    pipe,
    owns: list,
    trained: list[float],
    scale: float,
    size: tuple[int, ...],
    methods: list[Method],
    steps: int,
    guidance: float,
    bar,
    cell_cost: int,
) -> ScaleResult:
    """Every method at one size, every seed, by the reference-free score against seed s's own samples owns[s];
    the floor: the model's own score at its trained size (`trained`, per seed)."""
    num = owns[0].count
    labels = [method.label for method in methods]
    result = ScaleResult(scale, size, num, 0, list(trained), {label: [] for label in labels})
    result.parts = {label: [] for label in labels}
    keywords = dict(zip(("num_frames", "height", "width")[-len(size) :], size, strict=True))
    last_frame = (lambda clips: clips[:, :, -1]) if len(size) == 3 else (lambda images: images)  # noqa: E731
    result.pictures["own"] = last_frame(owns[0].own[:num])
    for seed, own in enumerate(owns):
        for method in methods:
            bar.set_description(f"calibrate {size_text(size)} {method.label} seed {seed}")
            cell = measure_self_cell(pipe, method, own, keywords, steps, guidance, seed)
            result.values[method.label].append(cell.score.value)
            result.parts[method.label].append(cell.score.parts)
            if seed == 0:
                result.pictures[method.label] = last_frame(cell.samples)
            bar.update(cell_cost)
    return result


__all__ = [
    "DEFAULT_NUM",
    "DEFAULT_SCALES",
    "DEFAULT_SEEDS",
    "DEFAULT_STEPS",
    "REAL",
    "SELF",
    "Calibration",
    "ScaleResult",
    "calibrate",
    "check_methods",
    "check_scales",
    "measure",
    "plan",
    "size_text",
    "target_size",
    "target_sizes",
]

"""Calibration of a diffusers pipeline (Flux, Qwen-Image, Wan, ...): which method to use beyond its trained size.

    from axialrope.pipelines import calibrate
    result = calibrate(pipe, ["a fox in the snow", "a harbour at dusk"], sizes=["1024x2048", "2048x2048"],
                       out="outputs/flux-calibration")          # calibration.json, .md, a picture per size
    apply_extrapolation(pipe, "auto", calibration="outputs/flux-calibration/calibration.json")

There are no real images at the target size. The model's own samples at its trained size (method none, the same
prompts and seeds) are the reference: each cell (a target size, a method variant, a seed) is scored against them
by `evaluation.self_reference.self_reference_score` (lower is better). Per target the variant with the lowest
mean over seeds wins; the bands of `default_extrapolation` (CALIBRATION_SCHEMA: per aspect, by scale, halfway
between the scales) record the picks.

A cell is on disk when it ends (`cell_store.CellStore`, OUT/cells): the same call again skips the finished cells,
and changed settings start afresh. Under `accelerate launch` each process takes every n-th pending cell (the own
samples first, then the targets), and the main process writes the result, the one a single process gives.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from tqdm.auto import tqdm

from axialrope.validation import is_int

from ...limits import check_guidance_scale
from ...paths import check_output_folder
from ...sampling import diffusers_families
from .result import PipelineCalibration, TargetResult, as_unit, write_results
from .targets import Geometry, Target, Variant, family_variants

DEFAULT_PIPELINE_SCALES = (1.5, 2.0)
DEFAULT_PIPELINE_SEEDS = 2
PREVIEW_SIDE = 256  # the pictures keep seed 0's samples at most this many pixels a side
SEED_STRIDE = 1_000_003  # sample i of seed s starts from the noise of seed s * SEED_STRIDE + i


@dataclass(frozen=True)
class Share:
    """This process's part of the work: every `count`-th cell from `index`; `wait()` holds until all arrive."""

    index: int = 0
    count: int = 1
    wait: Callable[[], None] = lambda: None
    device: torch.device | None = None

    @property
    def main(self) -> bool:
        return self.index == 0


def process_share() -> Share:
    """The share of this process under `accelerate launch` (torch.distributed), or the whole work alone."""
    if int(os.environ.get("WORLD_SIZE", "1")) <= 1:
        return Share()
    from accelerate import PartialState  # heavy: only under a launcher

    state = PartialState()
    return Share(state.process_index, state.num_processes, state.wait_for_everyone, state.device)


def is_family_pipeline(pipe) -> bool:
    """Whether `pipe` is a diffusers pipeline other than this project's `AxialDiTPipeline`."""
    from diffusers import DiffusionPipeline

    own = diffusers_families.OWN_PIPELINE_NAMES
    return isinstance(pipe, DiffusionPipeline) and not any(c.__name__ in own for c in type(pipe).__mro__)


@dataclass
class PipelineJob:
    """A checked calibration of a diffusers pipeline: what it samples, where it writes (see `plan_pipeline`)."""

    pipe: object
    family: object
    geometry: Geometry
    targets: list[Target]
    variants: list[Variant]
    prompts: list[str]
    num: int
    steps: int | None
    seeds: int
    guidance: float | None
    negative_prompt: str | None
    batch_size: int | None
    out: Path
    search: bool
    model: str = ""
    report: Callable[[str], None] = print

    @property
    def video(self) -> bool:
        return self.geometry.video

    def settings(self) -> dict:
        """Everything the cells depend on (not the batch size nor the processes: they change no sample)."""
        transformer = self.pipe.transformer
        return {
            "model": self.model,
            "pipeline": type(self.pipe).__name__,
            "transformer": type(transformer).__name__,
            "family": self.family.name,
            "dtype": str(transformer.dtype).removeprefix("torch."),
            "trained_grid": list(self.geometry.trained_grid),
            "targets": [t.name for t in self.targets],
            "variants": [v.label for v in self.variants],
            "prompts": self.prompts,
            "negative_prompt": self.negative_prompt,
            "num": self.num,
            "steps": self.steps,
            "seeds": self.seeds,
            "guidance": self.guidance,
            "score": "self_reference_score",
        }

    def own_key(self, seed: int) -> str:
        return f"own-{self.geometry.trained.name}-seed{seed}"

    def key(self, target: Target, variant: Variant, seed: int) -> str:
        return f"{target.name}-{re.sub(r'[^A-Za-z0-9.+=-]', '_', variant.label)}-seed{seed}"


def plan_pipeline(
    pipe,
    prompts,
    sizes: Sequence[str] | None = None,
    scales: Sequence[float] | None = None,
    frames: Sequence[int] | None = None,
    methods: Sequence[str] | None = None,
    trained_grid: Sequence[int] | None = None,
    search: bool = False,
    num: int = 1,
    steps: int | None = None,
    seeds: int = DEFAULT_PIPELINE_SEEDS,
    guidance_scale: float | None = None,
    negative_prompt: str | None = None,
    batch_size: int | None = None,
    out: str | Path | None = None,
    model: str | None = None,
    report: Callable[[str], None] = print,
) -> PipelineJob:
    """Every check of a pipeline calibration, before any sampling (ValueError or TypeError naming the argument as
    the CLI spells it): the family, prompts, sizes, frames, methods, counts. Arguments: see `calibrate_pipeline`."""
    from axialrope.models import apply_extrapolation  # heavy: keeps --help fast
    from axialrope.models.integrations.registry import family_of

    if getattr(pipe, "transformer", None) is None:
        raise TypeError(f"pipe: {type(pipe).__name__} has no transformer to calibrate")
    try:
        family = family_of(pipe.transformer)
    except TypeError as error:
        raise TypeError(f"pipe: {error}") from None
    prompts = check_prompts(prompts)
    for name, value, least in (("--num", num, 1), ("--seeds", seeds, 2)):
        if not is_int(value) or value < least:
            raise ValueError(f"{name} must be an integer >= {least}, got {value!r}")
    for name, value in (("--steps", steps), ("--batch-size", batch_size)):
        if value is not None and (not is_int(value) or value < 1):
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    if len(prompts) * num < 2:
        raise ValueError(
            "--prompt: the reference needs at least 2 samples at the trained size a seed; give two prompts or --num 2"
        )
    if guidance_scale is not None:
        try:
            check_guidance_scale(guidance_scale)
        except ValueError as error:
            raise ValueError(f"--guidance: {error}") from None
    if out is None or not str(out).strip():
        raise ValueError("--out must name a folder for the cells and the results")
    out = check_output_folder(out, "--out")
    video = diffusers_families.is_video_pipeline(pipe)
    geometry = Geometry.of(pipe, trained_grid, video, family)
    if sizes is None and scales is None and frames is None:
        scales = DEFAULT_PIPELINE_SCALES
    targets = geometry.targets(sizes, scales, frames)
    riflex_k = None
    if family.temporal_axis is not None and (methods is None or any("riflex" in str(m) for m in methods)):
        with apply_extrapolation(pipe, "riflex", trained_grid=geometry.trained_grid) as handle:
            riflex_k = handle.extrapolation.riflex_index  # the model's own k, which --search brackets
    variants = []
    for variant in family_variants(family, methods, search, riflex_k):
        try:
            apply_extrapolation(pipe, variant.extrapolation, trained_grid=geometry.trained_grid).remove()
        except (TypeError, ValueError) as error:
            if variant.options:  # a searched setting the model has no room for (k beyond its pairs): not tried
                continue
            raise ValueError(f"--methods {variant.label}: {error}") from None
        variants.append(variant)
    for target in (geometry.trained, *targets):  # what the pipeline's call refuses, before any sampling
        diffusers_families.call_kwargs(
            pipe, prompts[0], target.height, target.width, target.frames, steps, guidance_scale, 0, 1, negative_prompt
        )
    model = model or str(getattr(pipe, "name_or_path", "") or "")
    return PipelineJob(
        pipe, family, geometry, targets, variants, prompts, num, steps, seeds, guidance_scale, negative_prompt,
        batch_size, Path(out), search, model, report,
    )  # fmt: skip


def check_prompts(prompts) -> list[str]:
    """`prompts` (a string or a list of them) as a list of non-blank strings; ValueError naming --prompt."""
    prompts = [prompts] if isinstance(prompts, str) else prompts
    if not isinstance(prompts, Sequence) or not prompts:
        raise ValueError(f"--prompt: give at least one text prompt, got {prompts!r}")
    for prompt in prompts:
        if not isinstance(prompt, str) or not prompt.strip():
            raise ValueError(f"--prompt: each prompt must be non-blank text, got {prompt!r}")
    return list(prompts)


def read_prompts_file(path: str | Path) -> list[str]:
    """The non-blank lines of a text file; ValueError naming --prompts-file for a missing or empty one."""
    from ...limits import read_small_file

    try:
        text = read_small_file(path, "--prompts-file").decode("utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise ValueError(f"--prompts-file {str(path)!r}: cannot read it ({error})") from None
    prompts = [line.strip() for line in text.splitlines() if line.strip()]
    if not prompts:
        raise ValueError(f"--prompts-file {str(path)!r} holds no prompt (one a line)")
    return prompts


# -- the cells ----------------------------------------------------------------------------------------------------


def sample(job: PipelineJob, target: Target, variant: Variant, seed: int) -> torch.Tensor:
    """The samples of one cell, (n, c, h, w) or clips (n, c, t, h, w), uint8: every prompt `num` times, sample i
    from the noise of seed * SEED_STRIDE + i (the own reference and every method start alike), at most
    `batch_size` a call."""
    flat = [prompt for prompt in job.prompts for _ in range(job.num)]
    batch = job.batch_size or len(flat)
    parts = []
    for start in range(0, len(flat), batch):
        chunk = flat[start : start + batch]
        kwargs = diffusers_families.call_kwargs(
            job.pipe, chunk, target.height, target.width, target.frames, job.steps, job.guidance, 0, 1, None
        )
        kwargs["generator"] = [torch.Generator().manual_seed(seed * SEED_STRIDE + start + i) for i in range(len(chunk))]
        if job.negative_prompt is not None:
            kwargs["negative_prompt"] = [job.negative_prompt] * len(chunk)
        parts.append(diffusers_families.generate(job.pipe, variant.extrapolation, job.geometry.trained_grid, **kwargs))
    samples = torch.cat(parts)
    if job.video:
        samples = samples.transpose(1, 2)  # (n, t, c, h, w) -> (n, c, t, h, w), as the score takes clips
    return (samples * 255).round().to(torch.uint8)


def preview(samples: torch.Tensor) -> torch.Tensor:
    """(n, c, h, w) uint8 pictures of samples (a clip's middle frame), at most PREVIEW_SIDE a side."""
    pictures = samples[:, :, samples.shape[2] // 2] if samples.ndim == 5 else samples
    factor = max(pictures.shape[-2:]) / PREVIEW_SIDE
    if factor <= 1:
        return pictures
    size = [max(1, round(side / factor)) for side in pictures.shape[-2:]]
    shrunk = F.interpolate(pictures.float() / 255, size=size, mode="bilinear", antialias=True, align_corners=False)
    return (shrunk.clamp(0, 1) * 255).round().to(torch.uint8)


def _own_cell(job: PipelineJob, store, seed: int) -> None:
    samples = sample(job, job.geometry.trained, Variant("none"), seed)
    store.write(job.own_key(seed), {"seed": seed}, {"samples": samples, "preview": preview(samples)})


def _target_cell(job: PipelineJob, store, target: Target, variant: Variant, seed: int) -> None:
    from ..self_reference import self_reference_score

    samples = sample(job, target, variant, seed)
    score = self_reference_score(as_unit(samples), as_unit(store.tensor(job.own_key(seed), "samples")), seed=seed)
    tensors = {"preview": preview(samples)} if seed == 0 else {}
    store.write(job.key(target, variant, seed), {"value": score.value, "parts": score.parts}, tensors)


def run_pipeline_job(job: PipelineJob, progress: bool = True, share: Share | None = None) -> PipelineCalibration:
    """Samples and scores every cell not yet on disk (this process's share of them), then collects the result;
    the main process writes it to `job.out` (calibration.json, calibration.md, a picture per target)."""
    from .cell_store import CellStore

    share = share or process_share()
    store = CellStore(job.out / "cells", report=job.report)
    if share.main:
        kept = store.open(job.settings())
        if kept:
            job.report(f"calibrate: continuing: {kept} finished cells in {store.folder} are kept")
    share.wait()
    seeds = range(job.seeds)
    own = [seed for seed in seeds if not store.done(job.own_key(seed))]
    cells = [
        (target, variant, seed)
        for target in job.targets
        for variant in job.variants
        for seed in seeds
        if not store.done(job.key(target, variant, seed))
    ]
    share.wait()  # every process has listed the pending cells before any writes one
    mine_own, mine = own[share.index :: share.count], cells[share.index :: share.count]
    bar = tqdm(total=len(mine_own) + len(mine), disable=not (progress and share.main), desc="calibrate", unit="cell")
    pipe_bar = dict(getattr(job.pipe, "_progress_bar_config", {}))
    job.pipe.set_progress_bar_config(disable=True)
    try:
        for seed in mine_own:
            bar.set_description(f"calibrate {job.geometry.trained.name} none (reference) seed {seed}")
            _own_cell(job, store, seed)
            bar.update(1)
        share.wait()  # the references of every seed are on disk
        for target, variant, seed in mine:
            bar.set_description(f"calibrate {target.name} {variant.label} seed {seed}")
            _target_cell(job, store, target, variant, seed)
            bar.update(1)
    finally:
        bar.close()
        job.pipe.set_progress_bar_config(**pipe_bar)
    share.wait()
    result = collect(job, store)
    if share.main:
        write_results(result, job.out)
    share.wait()
    return result


# -- the result ----------------------------------------------------------------------------------------------------


def collect(job: PipelineJob, store) -> PipelineCalibration:
    """The result from the finished cells on disk (every process reads the same)."""
    results = []
    for target in job.targets:
        values, parts, previews = {}, {}, {}
        for variant in job.variants:
            records = [store.read(job.key(target, variant, seed)) for seed in range(job.seeds)]
            values[variant.label] = [record["value"] for record in records]
            parts[variant.label] = [record["parts"] for record in records]
            previews[variant.label] = store.tensor(job.key(target, variant, 0), "preview")
        results.append(TargetResult(target, target.scale(job.geometry.trained_grid), values, parts, previews))
    return PipelineCalibration(job, results, store.tensor(job.own_key(0), "preview"))


def calibrate_pipeline(
    pipe,
    prompts,
    *,
    scales: Sequence[float] | None = None,
    num: int = 1,
    steps: int | None = None,
    seeds: int = DEFAULT_PIPELINE_SEEDS,
    progress: bool = True,
    **settings,
) -> PipelineCalibration:
    """Calibrate a diffusers pipeline of a registered family on `prompts` (the module docstring).

    Args:
        pipe: a diffusers pipeline whose transformer is of a registered family (Flux, Qwen-Image, Wan, ...).
        prompts: a prompt or a list of them; each sampled `num` times a seed.
        settings: sizes ("HxW", non-square ones calibrated as such) or scales (of the trained size; default 1.5
            and 2); frames (video: frame counts); methods (labels such as "yarn" or "pi+entropy"; default every
            method the family accepts, without and with entropy scaling); trained_grid (tokens; default the
            family's); search (also DyPE's exponent dype_lambda_t, YaRN's beta_fast/beta_slow and RIFLEx's k
            over a small grid); num; steps (default the pipeline's own); seeds (at least 2); guidance_scale;
            negative_prompt; batch_size (samples a pipeline call at most); out (the folder: cells, results).

    Returns the `PipelineCalibration`; its files are in `out`. Bad settings raise before any sampling.
    """
    job = plan_pipeline(pipe, prompts, scales=scales, num=num, steps=steps, seeds=seeds, **settings)
    return run_pipeline_job(job, progress=progress)


__all__ = [
    "DEFAULT_PIPELINE_SCALES",
    "DEFAULT_PIPELINE_SEEDS",
    "PipelineCalibration",
    "PipelineJob",
    "Share",
    "calibrate_pipeline",
    "check_prompts",
    "collect",
    "is_family_pipeline",
    "plan_pipeline",
    "process_share",
    "read_prompts_file",
    "run_pipeline_job",
    "write_results",
]

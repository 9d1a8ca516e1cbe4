"""The result of a diffusers pipeline's calibration: per target the scores per seed, the bands, the files.

    result = collect(job, store)          # calibration.py: from the finished cells on disk
    result.bands; print(result.table()); write_results(result, out)

Bands (CALIBRATION_SCHEMA): per aspect (recorded where any target is not square), per scale the variant whose
scores relative to each target's best are lowest, up to halfway to the next scale; "options" where --search picked
a setting.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import torch

from ..intervals import best_of, seed_interval
from .targets import Target, Variant


@dataclass
class TargetResult:
    """One target: per variant label, the score per seed and its parts per seed; seed 0's previews."""

    target: Target
    scale: float
    values: dict[str, list[float]]
    parts: dict[str, list[dict]]
    previews: dict[str, torch.Tensor] = field(default_factory=dict, repr=False)

    @property
    def best(self) -> tuple[str, bool]:
        """(the best label, whether its interval over seeds clears the runner-up's)."""
        return best_of({label: seed_interval(values) for label, values in self.values.items()})


@dataclass
class PipelineCalibration:
    """What a pipeline calibration measured (`table()`, `bands`, `to_dict()`); `variants` by label."""

    job: object  # the `calibration.PipelineJob` measured (its settings, prompts, variants, geometry)
    targets: list[TargetResult]
    own_preview: torch.Tensor

    @property
    def variants(self) -> dict[str, Variant]:
        return {v.label: v for v in self.job.variants}

    @property
    def square(self) -> bool:
        return all(r.target.height == r.target.width for r in self.targets)

    @property
    def bands(self) -> list[dict]:
        """`default_extrapolation`: per aspect (recorded where any target is not square), per scale the variant
        whose scores relative to each target's best are lowest (geometric mean over the targets of that scale:
        a clip longer in time and one larger in space may share a scale), up to halfway to the next scale."""
        groups: dict[float, dict[float, list[TargetResult]]] = {}
        for result in self.targets:
            aspect = round(result.target.aspect, 6)
            groups.setdefault(aspect, {}).setdefault(result.scale, []).append(result)
        bands = []
        for aspect in sorted(groups):
            scales = sorted(groups[aspect])
            for index, scale in enumerate(scales):
                results = groups[aspect][scale]
                label = min(self.variants, key=lambda lab: _relative(results, lab))
                variant = self.variants[label]
                band = {
                    "up_to_scale": None if index == len(scales) - 1 else (scale + scales[index + 1]) / 2,
                    "method": variant.method,
                    "entropy_scaling": variant.entropy_scaling,
                    "measured": self._note(results, label),
                }
                if not self.square:
                    band["aspect"] = aspect
                if variant.options:
                    band["options"] = dict(variant.options)
                bands.append(band)
        return bands

    def _note(self, results: list[TargetResult], label: str) -> str:
        def mean(values):
            return sum(values) / len(values)

        where = "; ".join(
            f"{mean(r.values[label]):.1f} at {r.target.name} ({r.scale:g}x)"
            + (f" against {mean(r.values['none']):.1f} for none" if "none" in r.values and label != "none" else "")
            for r in results
        )
        job = self.job
        return (
            f"{label}: self-reference score {where}; {len(job.prompts)} prompts x {job.num}, {job.seeds} seeds, "
            f"{job.steps or 'the pipeline default'} steps (axialrope calibrate)"
        )

    def table(self) -> str:
        """Markdown: a row per variant, a column per target (mean score over seeds [95% interval]), each column's
        best in bold; then the picks."""
        heads = [f"{r.target.name} ({r.scale:g}x)" for r in self.targets]
        lines = ["| method | " + " | ".join(heads) + " |", "|" + "---|" * (1 + len(heads))]
        for label in self.variants:
            cells = []
            for result in self.targets:
                interval = seed_interval(result.values[label])
                shown = f"{interval.value:.2f} [{interval.low:.2f}, {interval.high:.2f}]"
                cells.append(f"**{shown}**" if result.best[0] == label else shown)
            lines.append(f"| {label} | " + " | ".join(cells) + " |")
        job = self.job
        lines += [
            "",
            f"Self-reference score (lower is better; pipelines/evaluation/self_reference.py): mean over {job.seeds} "
            f"seeds [95% bootstrap interval], {len(job.prompts)} prompts x {job.num} a seed against the model's own "
            f"samples at its trained size {job.geometry.trained.name} (tokens {job.geometry.trained_grid}).",
            "",
        ]
        for result in self.targets:
            label, clears = result.best
            verdict = "clear of the runner-up" if clears else "NOT clear of the runner-up: within the seed spread"
            lines.append(f"- {result.target.name} ({result.scale:g}x): {label}, {verdict}")
        return "\n".join(lines) + "\n"

    def to_dict(self) -> dict:
        """calibration.json (CALIBRATION_SCHEMA): the bands and every value per seed, the settings."""
        job, geometry = self.job, self.job.geometry
        record = {
            "kind": "axialrope-calibration",
            "version": 1,
            "reference": "self",
            "trained_grid": list(geometry.trained_grid),
            "trained_size": list(geometry.trained_size),
            "default_extrapolation": self.bands,
            "family": job.family.name,
            "pipeline": type(job.pipe).__name__,
            "transformer": type(job.pipe.transformer).__name__,
            "model": job.model,
            "prompts": job.prompts,
            "settings": {
                **{k: v for k, v in job.settings().items() if k not in ("prompts", "targets", "variants")},
                "search": job.search,
                "batch_size": job.batch_size,
            },
            "variants": {label: variant.to_dict() for label, variant in self.variants.items()},
            "targets": [
                {
                    "name": r.target.name,
                    "size": [r.target.height, r.target.width],
                    "frames": r.target.frames,
                    "grid": list(r.target.grid),
                    "scale": r.scale,
                    "aspect": r.target.aspect,
                    "best": r.best[0],
                    "clears": r.best[1],
                    "values": r.values,
                    "parts": r.parts,
                }
                for r in self.targets
            ],
        }
        if geometry.video:
            record["trained_frames"] = geometry.trained_frames
        return record


def _relative(results: list[TargetResult], label: str) -> float:
    """The geometric mean over `results` of `label`'s mean score over the best mean of its target."""
    logs = []
    for result in results:
        means = {lab: sum(v) / len(v) for lab, v in result.values.items()}
        best = min(means.values())
        logs.append(math.log(max(means[label], 1e-12) / max(best, 1e-12)))
    return sum(logs) / len(logs)


def check_bands(calibration: PipelineCalibration) -> None:
    """The bands of each aspect as `check_default_extrapolation` checks a default (it knows no aspect or options:
    those are checked here)."""
    from ...dit.default_extrapolation import check_default_extrapolation

    by_aspect: dict = {}
    for band in calibration.bands:
        by_aspect.setdefault(band.get("aspect"), []).append(band)
        if not isinstance(band.get("options", {}), dict):
            raise ValueError(f"band {band!r}: options must be a dict")
    for bands in by_aspect.values():
        check_default_extrapolation(
            [{k: v for k, v in band.items() if k not in ("aspect", "options")} for band in bands],
            video=calibration.job.video,
        )


def write_results(result: PipelineCalibration, out: Path) -> None:
    """calibration.json, calibration.md and calibration-<target>.png in `out`, each written atomically."""
    from ...paths import write_atomically, write_text_atomically
    from ..grids import save_labelled_grid

    check_bands(result)
    out.mkdir(parents=True, exist_ok=True)
    job = result.job
    bands = "\n".join(
        f"- up to {b['up_to_scale'] or 'any scale'}"
        + (f" (aspect {b['aspect']:g})" if "aspect" in b else "")
        + f": {b['method']}{' + entropy scaling' if b['entropy_scaling'] else ''}"
        + (f" {b['options']}" if b.get("options") else "")
        for b in result.bands
    )
    title = f"# Calibration of {job.model or type(job.pipe).__name__} ({type(job.pipe).__name__}, {job.family.title})"
    write_text_atomically(out / "calibration.md", f"{title}\n\n{result.table()}\n## default_extrapolation\n\n{bands}\n")
    write_text_atomically(out / "calibration.json", json.dumps(result.to_dict(), indent=1) + "\n")
    own = f"none at {job.geometry.trained.name}"
    for target in result.targets:
        rows = {own: as_unit(result.own_preview), **{label: as_unit(p) for label, p in target.previews.items()}}
        name = (
            f"{target.target.name} ({target.scale:g}x) from {job.geometry.trained.name}, seed 0; best {target.best[0]}"
        )
        write_atomically(
            out / f"calibration-{target.target.name}.png",
            lambda path, t=name, r=rows: save_labelled_grid(path, t, r, per_row=min(8, len(job.prompts) * job.num)),
        )


def as_unit(samples: torch.Tensor) -> torch.Tensor:
    """uint8 samples as floats in [0, 1], any shape."""
    return samples.float() / 255


__all__ = ["PipelineCalibration", "TargetResult", "as_unit", "check_bands", "write_results"]

"""Benchmark cells over several seeds: the mean, a bootstrap interval, and the rule that names a best.

A cell (one model, method and size) is measured once per seed, each seed drawing its own
noise and its own real images, so the seeds are independent replicates of the whole
measurement. The interval is the percentile bootstrap of the mean over those replicates.

Why over seeds and not over images: resampling the images of one set with replacement
duplicates images, and a distance between two sets of duplicated points grows with the
duplicates, so such an interval sits above the value it should bracket (docs/extrapolation.md,
"How it is measured"). Seeds have no such bias. With few seeds the interval is
close to the range of the seed values (with 3 seeds, the smallest and largest mean of a
resample are the smallest and largest value), so "clears" then means that every seed of
one method beat every seed of the other.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch


@dataclass(frozen=True)
class Interval:
    """A mean over seeds with its bootstrap interval [low, high] (lower is better for a distance)."""

    value: float
    low: float
    high: float

    def clears(self, other: Interval) -> bool:
        """True when this interval lies wholly below the other's: lower beyond the seed-to-seed spread."""
        return self.high < other.low


def seed_interval(
    values: Sequence[float], confidence: float = 0.95, resamples: int = 10_000, seed: int = 0
) -> Interval:
    """The mean of per-seed values and the percentile bootstrap interval of that mean.

    Args:
        values: one value per seed (at least 2).
        confidence: coverage of the interval, in (0, 1).
        resamples: bootstrap resamples of the seeds.
        seed: seeds the resampling, so a table is reproducible.

    Returns:
        Interval(mean, low, high).
    """
    if len(values) < 2:
        raise ValueError(f"values must hold one value per seed, at least 2, got {len(values)}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence!r}")
    data = torch.tensor([float(v) for v in values], dtype=torch.float64)
    picks = torch.randint(0, len(data), (resamples, len(data)), generator=torch.Generator().manual_seed(seed))
    means = data[picks].mean(dim=1)
    low, high = torch.quantile(means, torch.tensor([(1 - confidence) / 2, (1 + confidence) / 2], dtype=torch.float64))
    return Interval(data.mean().item(), low.item(), high.item())


def best_of(cells: dict[str, Interval]) -> tuple[str, bool]:
    """The label with the lowest mean, and whether its interval clears the runner-up's."""
    ranked = sorted(cells, key=lambda label: cells[label].value)
    if len(ranked) == 1:
        return ranked[0], True
    return ranked[0], cells[ranked[0]].clears(cells[ranked[1]])

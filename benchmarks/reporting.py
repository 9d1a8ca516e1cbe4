"""Output helpers the benchmarks share: a table as CSV and Markdown, a labelled grid of samples, the CPU's name."""

from __future__ import annotations

import csv
import platform
from pathlib import Path

from axialrope.pipelines.evaluation.grids import save_labelled_grid  # noqa: F401  (the benchmarks import it here)


def write_table(path: Path, header: list[str], rows: list[list]) -> None:
    """The same rows as CSV (path.csv) and Markdown (path.md); floats get two decimals in Markdown."""
    with open(path.with_suffix(".csv"), "w", newline="") as f:
        csv.writer(f).writerows([header, *rows])
    cell = lambda v: f"{v:.2f}" if isinstance(v, float) else str(v)  # noqa: E731
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    path.with_suffix(".md").write_text("\n".join(lines) + "\n")


def cpu_model() -> str:
    """The CPU's model name (from /proc/cpuinfo where there is one), for the machine line of a table."""
    try:
        with open("/proc/cpuinfo") as f:
            return next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        return platform.processor() or platform.machine()

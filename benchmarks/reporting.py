"""Output helpers the benchmarks share: a table as CSV and Markdown, a labelled grid of samples, the CPU's name."""

from __future__ import annotations

import csv
import platform
from pathlib import Path

import PIL.Image
import PIL.ImageDraw
import torch
from torchvision.utils import make_grid


def write_table(path: Path, header: list[str], rows: list[list]) -> None:
    """The same rows as CSV (path.csv) and Markdown (path.md); floats get two decimals in Markdown."""
    with open(path.with_suffix(".csv"), "w", newline="") as f:
        csv.writer(f).writerows([header, *rows])
    cell = lambda v: f"{v:.2f}" if isinstance(v, float) else str(v)  # noqa: E731
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    path.with_suffix(".md").write_text("\n".join(lines) + "\n")


def save_labelled_grid(path: Path, title: str, rows: dict[str, torch.Tensor], per_row: int) -> None:
    """One row of samples per label at their own pixels; rows maps label -> (n, 3, h, w) in [0, 1]."""
    strips = [make_grid(images[:per_row], nrow=per_row, padding=2, pad_value=1.0) for images in rows.values()]
    label_width, title_height = 150, 18
    width = label_width + max(strip.shape[-1] for strip in strips)
    height = title_height + sum(strip.shape[-2] for strip in strips)
    canvas = PIL.Image.new("RGB", (width, height), "white")
    draw = PIL.ImageDraw.Draw(canvas)
    draw.text((4, 3), title, fill="black")
    top = title_height
    for label, strip in zip(rows, strips, strict=True):
        pixels = (strip.clamp(0, 1) * 255).round().to(torch.uint8).permute(1, 2, 0).numpy()
        canvas.paste(PIL.Image.fromarray(pixels), (label_width, top))
        draw.text((4, top + strip.shape[-2] // 2 - 5), label, fill="black")
        top += strip.shape[-2]
    canvas.save(path)


def cpu_model() -> str:
    """The CPU's model name (from /proc/cpuinfo where there is one), for the machine line of a table."""
    try:
        with open("/proc/cpuinfo") as f:
            return next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        return platform.processor() or platform.machine()

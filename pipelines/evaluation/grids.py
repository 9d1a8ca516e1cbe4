"""A labelled picture of samples: one row per label (a method, "real"), at the samples' own pixels.

save_labelled_grid(Path("grid.png"), "shapes at 64x64", {"real": real, "pi": samples}, per_row=8)
"""

from __future__ import annotations

from pathlib import Path

import PIL.Image
import PIL.ImageDraw
import torch
from torchvision.utils import make_grid


def save_labelled_grid(path: Path, title: str, rows: dict[str, torch.Tensor], per_row: int) -> None:
    """A PNG of one row of samples per label at their own pixels; rows maps label -> (n, 3, h, w) in [0, 1]."""
    strips = [make_grid(images[:per_row], nrow=per_row, padding=2, pad_value=1.0) for images in rows.values()]
    label_width, title_height = 150, 18
    width = max(label_width + max(strip.shape[-1] for strip in strips), 8 + 6 * len(title))
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
    canvas.save(path, format="PNG")


__all__ = ["save_labelled_grid"]

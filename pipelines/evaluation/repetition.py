"""Repetition: the same object repeated across a larger canvas, or the same motion across a longer clip.

Images. The detail of an image, d = x - blur(x) (what is left once the smooth background is gone), is compared
with itself moved by every shift s = (dy, dx) with max(|dy|, |dx|) >= min_shift and each |shift| at most half the
side (so the two copies overlap on at least a quarter of the picture). Over the overlap O(s),

    r(s) = sum_O <d(p), d(p + s)> / sqrt(sum_O |d(p)|^2 * sum_O |d(p + s)|^2)      (channels summed in <.,.>)

the correlation of the picture with its moved self, 1 where the overlap holds the same content twice. A picture's
repetition is its largest r(s), clamped to [0, 1]; a set's is the mean over its pictures. A canvas tiled with one
picture scores near 1; one object on a background scores low, since moved, its edges land on background.
Stationary textures (bricks) repeat by nature: compare a set with the model's own samples at its trained size, as
`self_reference` does, not with zero.

Clips. `metrics.repetition_score` (one minus the smallest mean squared difference between frames t and t + L,
over lags L >= min_lag, relative to what two unrelated frames differ by): 1 for a loop.

    image_repetition(images, min_shift=8)        # (n, c, h, w) -> float in [0, 1]
    clip_repetition(videos, min_lag=4)           # (n, c, t, h, w) -> float in [0, 1]
"""

from __future__ import annotations

import torch

from axialrope.validation import is_int

from .metrics import _blur, repetition_score


def _check(tensor, dims: int, shape: str, argument: str) -> None:
    if not isinstance(tensor, torch.Tensor) or tensor.ndim != dims or not tensor.is_floating_point():
        raise ValueError(
            f"{argument} must be a float tensor {shape}, got {getattr(tensor, 'shape', type(tensor).__name__)}"
        )


def shift_correlations(images: torch.Tensor) -> torch.Tensor:
    """r(s) of every image for every shift: (n, c, h, w) -> (n, 2h, 2w), shift (dy, dx) at index (dy mod 2h,
    dx mod 2w). Products over the overlap come from zero-padded FFTs (a linear, not a circular, correlation)."""
    detail = (images - _blur(images)).double()
    height, width = detail.shape[-2:]
    padded = (2 * height, 2 * width)

    def correlate(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        """sum_p a(p) b(p + s) for every shift s: (n, c, h, w) x2 -> (n, 2h, 2w), summed over channels."""
        spectrum = torch.fft.rfft2(a, s=padded).conj() * torch.fft.rfft2(b, s=padded)
        return torch.fft.irfft2(spectrum.sum(dim=1), s=padded)

    energy = detail.pow(2).sum(dim=1, keepdim=True)  # (n, 1, h, w)
    inside = torch.ones_like(energy)
    products = correlate(detail, detail)
    first, second = correlate(energy, inside), correlate(inside, energy)  # energies of d(p), d(p + s) over O(s)
    return products / (first * second).clamp_min(1e-20).sqrt()


def image_repetition(images: torch.Tensor, min_shift: int) -> float:
    """How much each picture repeats itself at shifts of at least `min_shift` pixels, in [0, 1], averaged
    (the module docstring). images: (n, c, h, w); min_shift: from 1 to half the smaller side."""
    _check(images, 4, "(n, c, h, w)", "images")
    height, width = images.shape[-2:]
    if not is_int(min_shift) or not 1 <= min_shift <= min(height, width) // 2:
        raise ValueError(
            f"min_shift must be an integer in [1, {min(height, width) // 2}] for {height}x{width} pictures, "
            f"got {min_shift!r}"
        )
    correlations = shift_correlations(images)
    dy, dx = (torch.arange(2 * n) for n in (height, width))
    dy, dx = torch.minimum(dy, 2 * height - dy), torch.minimum(dx, 2 * width - dx)  # |shift| per axis
    dy, dx = dy[:, None], dx[None, :]
    shifts = (dy <= height // 2) & (dx <= width // 2) & (torch.maximum(dy, dx) >= min_shift)
    return float(correlations[:, shifts].amax(dim=1).clamp(0, 1).mean())


def clip_repetition(videos: torch.Tensor, min_lag: int) -> float:
    """How closely each clip returns to earlier frames at lags >= min_lag, in [0, 1] (1: a loop):
    `metrics.repetition_score`. videos: (n, c, t, h, w)."""
    _check(videos, 5, "(n, c, t, h, w)", "videos")
    return repetition_score(videos, min_lag)


__all__ = ["clip_repetition", "image_repetition", "shift_correlations"]

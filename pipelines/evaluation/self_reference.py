"""A score of samples beyond the trained size that needs no real images there: the model's own samples at its
trained size are the picture of what it should make.

    own = ...                                              # (m, c, h, w): the model at its trained size, in [0, 1]
    score = self_reference_score(samples, own, seed=0)     # samples (n, c, H, W) or videos (n, c, T, H, W), [0, 1]
    score.value                                            # lower is better; score.parts: each term, to read

Values in [0, 1] (a pipeline's output_type="pt"); map [-1, 1] with (x + 1) / 2 first. `own` holds the model's
samples at its trained size (h, w) drawn as the samples are (the same classes or prompts, method `none`), as many
as can be afforded (they are cheap: the trained size is the smallest): the windows below are drawn m at a time.

The formula, for samples X at H x W from a model trained at h x w (s = min(H / h, W / w) >= 1, the zoom that keeps
the aspect), and the model's own samples Y at h x w:

1. What a larger picture is. A model of framed scenes (objects, photographs taken whole) makes at a larger size
   the same scene, finer: X shrunk by s should look like Y. A model of a stationary process (textures, crops of
   photographs at a fixed pixel scale) makes a wider window: an h x w window of X should look like Y. Which one
   is read off Y: the detail energy (x - blur x)^2 of Y, averaged over its pictures, in the border ring (the outer
   quarter of each side) over that in the centre, sigma. A framed scene has its objects inside (sigma well below
   1); a stationary one is alike everywhere (sigma near 1). The window weight a = clamp((sigma - 0.5) / 0.4, 0, 1).
2. The distance. D_window = detail SWD (`metrics.swd`: Laplacian pyramid, 7x7 patches, band-pass levels) between
   m random h x w windows of X and Y; D_zoom the same with X resized (antialiased) by 1 / s first. At another
   aspect than the trained one, the shrunk X is larger than h x w along one axis: a framed scene is then the
   same scene framed wider, so D_zoom compares whole shrunk pictures with Y centred on a canvas of their size,
   its edge rows and columns carried outwards (more background, no more objects; a window would find each
   copy of an object drawn twice side by side right). D = a D_window + (1 - a) D_zoom. For videos (frames of X
   against frames of Y, windows in space) D is the mean of that distance on the frames and on the frame
   differences (motion).
3. Speckle and blur. The detail spectrum of scale-free content (edges, natural images) looks alike at every
   scale: the mean band-pass energy of the finest pyramid level over the next, E0 / E1, is the same for a picture
   and for the same scene rendered finer. rho = log(E0/E1 of X) - log(E0/E1 of Y): above 0 grid or speckle noise,
   below 0 lost detail. It counts beyond a factor 2: spectrum = max(0, |rho| - log 2).
4. Repetition. `repetition.image_repetition` (the picture against its moved self, shifts of at least a quarter
   of the trained side) of X, r_X, against Y's, r_Y; for videos also `repetition.clip_repetition` (loops, lags
   of at least half the trained frames) of X against Y. It counts beyond half the way from the model's own
   self-similarity to an exact repeat: repetition = max(0, (r_X - r_Y) / (1 - r_Y) - 1/2) (the larger of the
   two for videos).
5. value = D * (1 + spectrum + repetition), in the units of the detail SWD (x1e3).

What it cannot see: whether the objects are the right ones (a blob with a triangle's edges), the layout of the
larger picture, or what real pictures at the larger size hold beyond the model's own; it trusts the model at its
trained size. docs/extrapolation.md, "Calibrating without real images", measures how often its pick agrees with
a real reference's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from axialrope.validation import is_int

from .metrics import _blur, laplacian_pyramid, swd
from .repetition import clip_repetition, image_repetition

WINDOW_LOW, WINDOW_HIGH = 0.5, 0.9  # sigma at or below: shrink (a framed scene); at or above: windows
SPECTRUM_TOLERANCE = math.log(2.0)  # |rho| up to a factor 2 is not counted
REPETITION_TOLERANCE = 0.5  # half the way from the model's own self-similarity to an exact repeat
MAX_WINDOWS = 256  # pictures (frames) of the model's own compared at most: the SWD's cost grows with them


@dataclass(frozen=True)
class SelfScore:
    """value: the score (lower is better, units of the detail SWD x1e3); distance: D; window, zoom: D_window,
    D_zoom; window_weight: a; spectrum: rho; repetition: r_X - r_Y (pictures); loop: the same of clips (None for
    images); penalty: spectrum + repetition terms, as counted."""

    value: float
    distance: float
    window: float
    zoom: float
    window_weight: float
    spectrum: float
    repetition: float
    loop: float | None
    penalty: float

    @property
    def parts(self) -> dict[str, float | None]:
        return {
            "distance": self.distance,
            "window": self.window,
            "zoom": self.zoom,
            "window_weight": self.window_weight,
            "spectrum": self.spectrum,
            "repetition": self.repetition,
            "loop": self.loop,
            "penalty": self.penalty,
        }


def check_unit_range(tensor, argument: str, shapes: str) -> None:
    """ValueError unless `tensor` is a finite float tensor of values in [0, 1]."""
    if not isinstance(tensor, torch.Tensor) or not tensor.is_floating_point() or tensor.ndim not in (4, 5):
        raise ValueError(
            f"{argument} must be a float tensor {shapes}, got {getattr(tensor, 'shape', type(tensor).__name__)}"
        )
    if not bool(torch.isfinite(tensor).all()) or tensor.min() < 0 or tensor.max() > 1:
        raise ValueError(f"{argument} must hold finite values in [0, 1] (map [-1, 1] with (x + 1) / 2)")


def stationarity(images: torch.Tensor) -> float:
    """sigma: the mean detail energy of (n, c, h, w) pictures in the border ring (the outer quarter of each side)
    over that in the centre; near 1 for a stationary process, well below 1 for framed scenes."""
    energy = (images - _blur(images)).double().pow(2).mean(dim=(0, 1))  # (h, w)
    height, width = energy.shape
    ring = torch.ones_like(energy, dtype=torch.bool)
    ring[height // 4 : height - height // 4, width // 4 : width - width // 4] = False
    return float(energy[ring].mean() / energy[~ring].mean().clamp_min(1e-20))


def window_weight(sigma: float) -> float:
    """a: 0 (shrink the samples: a framed scene) to 1 (windows: a stationary process), linear in between."""
    return min(1.0, max(0.0, (sigma - WINDOW_LOW) / (WINDOW_HIGH - WINDOW_LOW)))


def windows(images: torch.Tensor, size: tuple[int, int], count: int, generator: torch.Generator) -> torch.Tensor:
    """`count` random `size` windows of (n, c, H, W) pictures, picture i mod n for window i: (count, c, h, w)."""
    n, _, height, width = images.shape
    ys = torch.randint(0, height - size[0] + 1, (count,), generator=generator).tolist()
    xs = torch.randint(0, width - size[1] + 1, (count,), generator=generator).tolist()
    return torch.stack(
        [images[i % n, :, y : y + size[0], x : x + size[1]] for i, (y, x) in enumerate(zip(ys, xs, strict=True))]
    )


def shrink(images: torch.Tensor, factor: float) -> torch.Tensor:
    """(n, c, H, W) resized by 1 / factor (antialiased), each side rounded: (n, c, H / factor, W / factor)."""
    if factor == 1.0:
        return images
    size = [max(1, round(side / factor)) for side in images.shape[-2:]]
    return F.interpolate(images, size=size, mode="bilinear", antialias=True, align_corners=False).clamp(0, 1)


def fine_spectrum(images: torch.Tensor) -> float:
    """log(E0 / E1): the mean band-pass energy of the finest Laplacian level over the next, (n, c, h, w)."""
    levels = laplacian_pyramid(images, min_size=2)  # 8x8 pictures have two detail levels
    return math.log(
        levels[0].double().pow(2).mean().clamp_min(1e-20) / levels[1].double().pow(2).mean().clamp_min(1e-20)
    )


def _distance(samples: torch.Tensor, own: torch.Tensor, seed: int) -> tuple[float, float]:
    """(D_window, D_zoom) of pictures (n, c, H, W) against own (m, c, h, w) (MAX_WINDOWS of them at most, drawn
    at random: the frames of clips add up)."""
    if len(own) > MAX_WINDOWS:
        own = own[torch.randperm(len(own), generator=torch.Generator().manual_seed(seed))[:MAX_WINDOWS]]
    size = tuple(own.shape[-2:])
    factor = min(big / small for big, small in zip(samples.shape[-2:], size, strict=True))
    drawn = lambda images: windows(images, size, len(own), torch.Generator().manual_seed(seed))  # noqa: E731
    window = swd(drawn(samples), own, seed=seed).detail
    shrunk = shrink(samples, factor)
    if tuple(shrunk.shape[-2:]) == size:  # the trained aspect: the whole shrunk picture against own
        zoom = window if factor == 1.0 else swd(drawn(shrunk), own, seed=seed).detail
    else:  # another aspect: the whole picture against own framed wider, its border carried outwards
        zoom = swd(shrunk[torch.arange(len(own)) % len(shrunk)], framed(own, shrunk.shape[-2:]), seed=seed).detail
    return window, zoom


def framed(images: torch.Tensor, size) -> torch.Tensor:
    """(m, c, h, w) pictures centred on a (m, c, H, W) canvas, H >= h and W >= w, their edge rows and columns
    repeated outwards: the same framed scene with more of its background and no more objects."""
    (height, width), (h, w) = size, images.shape[-2:]
    top, left = (height - h) // 2, (width - w) // 2
    return F.pad(images, (left, width - w - left, top, height - h - top), mode="replicate")


def _excess(theirs: float, own: float) -> float:
    """The repetition term: how far `theirs` goes from `own` towards 1, beyond REPETITION_TOLERANCE."""
    return max(0.0, (theirs - own) / max(1.0 - own, 1e-6) - REPETITION_TOLERANCE)


def self_reference_score(samples: torch.Tensor, own: torch.Tensor, seed: int = 0) -> SelfScore:
    """The score of `samples` against the model's own samples at its trained size (the module docstring).

    Args:
        samples: pictures (n, c, H, W) or clips (n, c, T, H, W) in [0, 1], at or beyond the trained size.
        own: the model at its trained size, (m, c, h, w) or (m, c, t, h, w) in [0, 1], m >= 2; h, w >= 8.
        seed: seeds the windows and the SWD's random patches and directions.
    """
    check_unit_range(samples, "samples", "(n, c, H, W) or (n, c, T, H, W)")
    check_unit_range(own, "own", "(m, c, h, w) or (m, c, t, h, w)")
    if samples.ndim != own.ndim or samples.shape[1] != own.shape[1]:
        raise ValueError(
            f"samples {tuple(samples.shape)} and own {tuple(own.shape)} must both be pictures or both clips, "
            "with one channel count"
        )
    if len(own) < 2 or min(own.shape[-2:]) < 8:
        raise ValueError(f"own must hold at least 2 samples of 8x8 or more, got {tuple(own.shape)}")
    if any(big < small for big, small in zip(samples.shape[2:], own.shape[2:], strict=True)):
        raise ValueError(
            f"samples {tuple(samples.shape)} must be at least own's size {tuple(own.shape[2:])} on each axis"
        )
    if not is_int(seed):
        raise TypeError(f"seed must be an int, got {type(seed).__name__}")
    samples, own = samples.detach().float().cpu(), own.detach().float().cpu()
    video = samples.ndim == 5
    frames = (lambda clips: clips.transpose(1, 2).flatten(0, 1)) if video else (lambda images: images)  # noqa: E731
    pictures, own_pictures = frames(samples), frames(own)
    weight = window_weight(stationarity(own_pictures))
    window, zoom = _distance(pictures, own_pictures, seed)
    if video:
        motion = lambda clips: frames((clips[:, :, 1:] - clips[:, :, :-1] + 1) / 2)  # noqa: E731  (in [0, 1])
        if own.shape[2] < 2:
            raise ValueError(f"own clips must have at least 2 frames, got {own.shape[2]}")
        moving = _distance(motion(samples), motion(own), seed + 1)
        window, zoom = (window + moving[0]) / 2, (zoom + moving[1]) / 2
    distance = weight * window + (1 - weight) * zoom
    rho = fine_spectrum(pictures) - fine_spectrum(own_pictures)
    min_shift = max(1, min(own.shape[-2:]) // 4)
    own_repeat = image_repetition(own_pictures, min_shift)
    repeated = image_repetition(pictures, min_shift) - own_repeat
    penalty_repeat = _excess(own_repeat + repeated, own_repeat)
    loop = None
    if video and own.shape[2] >= 3:
        lag = max(1, own.shape[2] // 2)
        own_loop = clip_repetition(own, lag)
        loop = clip_repetition(samples, lag) - own_loop
        penalty_repeat = max(penalty_repeat, _excess(own_loop + loop, own_loop))
    penalty = max(0.0, abs(rho) - SPECTRUM_TOLERANCE) + penalty_repeat
    return SelfScore(distance * (1 + penalty), distance, window, zoom, weight, rho, repeated, loop, penalty)


__all__ = ["SelfScore", "self_reference_score", "stationarity", "window_weight"]

"""Sample quality without pretrained networks: sliced Wasserstein distance on Laplacian pyramids.

As in ProGAN (Karras et al. 2018): each image is split into a Laplacian pyramid; at
every level, random 7x7 patches become descriptors, normalised per channel over the
whole set; the sliced Wasserstein distance between the descriptor sets of generated and
real images is the mean, over random unit directions, of the 1D Wasserstein distance of
the projections (sorted projections, mean absolute difference). Values are reported x1e3.
Reporting SWD between two independent real sets gives the floor that noise alone reaches.

For video: SWD per frame, SWD of frame differences (motion), a repetition score, and shape
persistence (do the shapes' silhouettes move as rigid bodies or change form?).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
import torch.nn.functional as F
from einops import rearrange

_BINOMIAL_5 = torch.tensor([1.0, 4.0, 6.0, 4.0, 1.0]) / 16


@dataclass
class SWDResult:
    """per_level: SWD x1e3 per pyramid level, finest first (the low-pass residual last); mean: their average."""

    per_level: list[float]
    mean: float

    @property
    def detail(self) -> float:
        """The average over the band-pass levels only, without the low-pass residual: structure (edges,
        texture, shapes' outlines) rather than the colours and layout that the residual holds."""
        return sum(self.per_level[:-1]) / (len(self.per_level) - 1) if len(self.per_level) > 1 else self.mean


def _blur(images: torch.Tensor) -> torch.Tensor:
    """Separable 5-tap binomial blur, reflect-padded, (n, c, h, w) -> same."""
    c = images.shape[1]
    kernel = _BINOMIAL_5.to(images)
    horizontal = kernel.view(1, 1, 1, 5).repeat(c, 1, 1, 1)
    vertical = kernel.view(1, 1, 5, 1).repeat(c, 1, 1, 1)
    images = F.conv2d(F.pad(images, (2, 2, 0, 0), mode="reflect"), horizontal, groups=c)
    return F.conv2d(F.pad(images, (0, 0, 2, 2), mode="reflect"), vertical, groups=c)


def laplacian_pyramid(images: torch.Tensor, min_size: int = 16) -> list[torch.Tensor]:
    """Band-pass levels of (n, c, h, w) images, finest first, then the low-pass residual.

    Halves the size while the smaller side stays >= min_size, so a 32x32 image has
    levels at 32 and 16, a 96x96 image at 96, 48 and 24.
    """
    levels, current = [], images.float()
    while min(current.shape[-2:]) // 2 >= min_size:
        smaller = _blur(current)[..., ::2, ::2]
        upsampled = F.interpolate(smaller, size=current.shape[-2:], mode="bilinear", align_corners=False)
        levels.append(current - upsampled)
        current = smaller
    levels.append(current)
    return levels


def patch_descriptors(
    level: torch.Tensor, patches_per_image: int, generator: torch.Generator, patch_size: int = 7
) -> torch.Tensor:
    """Random patch_size^2 patches of (n, c, h, w) -> (n * patches_per_image, c * patch_size^2), normalised."""
    n, c, h, w = level.shape
    if min(h, w) < patch_size:
        raise ValueError(f"pyramid level {h}x{w} is smaller than the {patch_size}x{patch_size} patch")
    ys = torch.randint(0, h - patch_size + 1, (n, patches_per_image), generator=generator)
    xs = torch.randint(0, w - patch_size + 1, (n, patches_per_image), generator=generator)
    offsets = torch.arange(patch_size)
    rows = (ys[..., None] + offsets)[..., :, None]  # (n, p, size, 1)
    cols = (xs[..., None] + offsets)[..., None, :]  # (n, p, 1, size)
    batch = torch.arange(n)[:, None, None, None]
    patches = level.permute(0, 2, 3, 1)[batch, rows, cols]  # (n, p, size, size, c)
    # normalise each channel over the whole set, so the distance compares structure, not contrast
    mean = patches.mean(dim=(0, 1, 2, 3), keepdim=True)
    std = patches.std(dim=(0, 1, 2, 3), keepdim=True).clamp_min(1e-8)
    return rearrange((patches - mean) / std, "n p y x c -> (n p) (c y x)")


def sliced_wasserstein(
    a: torch.Tensor, b: torch.Tensor, directions: int = 512, repeats: int = 4, generator: torch.Generator | None = None
) -> float:
    """SWD between descriptor sets a (n, d) and b (n, d): mean over random unit directions
    of the 1D Wasserstein-1 distance of the projections."""
    a, b = a.detach().float().cpu(), b.detach().float().cpu()
    if a.ndim != 2 or a.shape != b.shape:
        raise ValueError(f"descriptor sets must both be (n, d) of one shape, got {tuple(a.shape)} and {tuple(b.shape)}")
    generator = generator or torch.Generator().manual_seed(0)
    distances = []
    for _ in range(repeats):
        projection = torch.randn(a.shape[1], directions, generator=generator, dtype=a.dtype)
        projection = projection / projection.norm(dim=0, keepdim=True)
        # (directions, n), sorted by numpy: torch's CPU sort is much slower at this size
        sorted_a = np.sort((projection.T @ a.T).numpy(), axis=-1)
        sorted_b = np.sort((projection.T @ b.T).numpy(), axis=-1)
        distances.append(float(np.abs(sorted_a - sorted_b).mean()))
    return sum(distances) / len(distances)


def swd(
    generated: torch.Tensor, real: torch.Tensor, patches_per_image: int = 128, seed: int = 0, min_size: int = 16
) -> SWDResult:
    """Laplacian-pyramid SWD (x1e3) between generated and real images, both (n, c, h, w) in one value range."""
    for name, images in (("generated", generated), ("real", real)):
        if not isinstance(images, torch.Tensor) or images.ndim != 4:
            raise ValueError(
                f"{name} must be a (n, c, h, w) tensor, got {getattr(images, 'shape', type(images).__name__)}"
            )
    if generated.shape != real.shape:
        raise ValueError(f"generated {tuple(generated.shape)} and real {tuple(real.shape)} must have one shape")
    per_level = []
    pyramids = zip(laplacian_pyramid(generated, min_size), laplacian_pyramid(real, min_size), strict=True)
    for index, (level_generated, level_real) in enumerate(pyramids):
        # the same patch positions and directions for both sets: the distance is symmetric
        descriptors = [
            patch_descriptors(level, patches_per_image, torch.Generator().manual_seed(seed + index))
            for level in (level_generated, level_real)
        ]
        distance = sliced_wasserstein(*descriptors, generator=torch.Generator().manual_seed(seed + 1000 + index))
        per_level.append(distance * 1e3)
    return SWDResult(per_level, sum(per_level) / len(per_level))


def frames_as_images(videos: torch.Tensor) -> torch.Tensor:
    """(n, c, t, h, w) -> (n * t, c, h, w)."""
    return rearrange(videos, "n c t h w -> (n t) c h w")


def video_swd(generated: torch.Tensor, real: torch.Tensor, **kwargs) -> dict[str, float]:
    """Per-frame SWD and SWD of frame differences (motion) for (n, c, t, h, w) videos."""
    motion = [v[:, :, 1:] - v[:, :, :-1] for v in (generated, real)]
    return {
        "frame_swd": swd(frames_as_images(generated), frames_as_images(real), **kwargs).mean,
        "motion_swd": swd(frames_as_images(motion[0]), frames_as_images(motion[1]), **kwargs).mean,
    }


def repetition_score(videos: torch.Tensor, min_lag: int) -> float:
    """How closely a video repeats itself at some lag >= min_lag, in [0, 1] (1: an exact loop).

    For each lag L, the mean squared difference between frames t and t + L, relative to
    twice the per-pixel variance over time (what two unrelated frames of the video
    differ by); the score is 1 minus the smallest such ratio, averaged over videos.
    RIFLEx's failure mode (the video returns to its first frames) scores near 1.
    """
    if videos.ndim != 5:
        raise ValueError(f"videos must be (n, c, t, h, w), got {tuple(videos.shape)}")
    frames = videos.shape[2]
    if not 1 <= min_lag < frames:
        raise ValueError(f"min_lag must be in [1, {frames - 1}] for {frames} frames, got {min_lag}")
    videos = videos.float()
    spread = 2 * videos.var(dim=2).mean(dim=(1, 2, 3)).clamp_min(1e-8)  # (n,)
    ratios = torch.stack(
        [
            (videos[:, :, lag:] - videos[:, :, :-lag]).pow(2).mean(dim=(1, 2, 3, 4)) / spread
            for lag in range(min_lag, frames)
        ]
    )  # (lags, n)
    return float((1 - ratios.min(dim=0).values).clamp(0, 1).mean())


def foreground_masks(videos: torch.Tensor, threshold: float = 0.1) -> torch.Tensor:
    """Silhouettes of the shapes: (n, c, t, h, w) in [0, 1] -> (n, t, h, w) bool.

    A pixel is foreground where some channel differs by more than `threshold` from the median
    of its row: the procedural backgrounds are vertical gradients (constant along a row) and
    shapes cover less than half of any row.
    """
    background = videos.median(dim=-1, keepdim=True).values
    return (videos - background).abs().amax(dim=1) > threshold


def shape_persistence(videos: torch.Tensor, lag: int, max_shift: int, threshold: float = 0.1) -> float:
    """How rigidly the shapes move, in [0, 1] (1: every silhouette is a moved copy of an earlier one).

    For each frame t, the intersection over union of the silhouettes (`foreground_masks`) of
    frames t and t + lag, at the shift of up to `max_shift` pixels per axis that matches them
    best, counted inside a margin of `max_shift` so no shift wraps around; averaged over
    frame pairs and videos. Shapes that change form score low. Real clips stay below 1 too:
    the shapes of a scene move in different directions, bounce and overlap.
    """
    if videos.ndim != 5:
        raise ValueError(f"videos must be (n, c, t, h, w), got {tuple(videos.shape)}")
    frames, height, width = videos.shape[2:]
    if not 1 <= lag < frames:
        raise ValueError(f"lag must be in [1, {frames - 1}] for {frames} frames, got {lag}")
    if not 0 <= max_shift < min(height, width) // 2:
        raise ValueError(
            f"max_shift must be in [0, {min(height, width) // 2 - 1}] for {height}x{width} frames, got {max_shift}"
        )
    masks = foreground_masks(videos.float(), threshold)
    earlier, later = masks[:, :-lag], masks[:, lag:]
    inside = (..., slice(max_shift, height - max_shift), slice(max_shift, width - max_shift))
    later = later[inside]
    best = torch.zeros(earlier.shape[:2])
    for dy in range(-max_shift, max_shift + 1):
        for dx in range(-max_shift, max_shift + 1):
            moved = torch.roll(earlier, (dy, dx), dims=(2, 3))[inside]
            union = (moved | later).sum(dim=(2, 3))
            overlap = torch.where(union > 0, (moved & later).sum(dim=(2, 3)) / union.clamp_min(1), 1.0)
            best = torch.maximum(best, overlap)
    return float(best.mean())

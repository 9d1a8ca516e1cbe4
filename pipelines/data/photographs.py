"""Crops of the natural photographs scikit-image ships, as windows at a fixed scale in pixels.

Each photograph (the class label indexes `PHOTOGRAPHS`; grey ones are repeated to RGB) is
downscaled once by `DOWNSCALE` with antialiasing, and a picture of h x w pixels is a window onto
it: its top-left corner is the crop's origin, so a larger window extends a smaller one to the
right and down, and every size up to `MAX_SIDE` has ground truth. Origins are drawn so that a
`MAX_SIDE` window fits inside the crop's region. The columns of every photograph are split in
two regions that never share a pixel: "train" (the left part) and "held_out" (the right part,
at least `MAX_SIDE` wide), so the benchmark's real sets never show what a model trained on.
Crop i of seed s comes from its own generator seeded from (s, i). Needs scikit-image
(`pip install axialrope[photos]`). See docs/extrapolation.md, "Photographs".
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from einops import rearrange, repeat

from .buckets import Bucket
from .procedural import ProceduralDataset
from .render import check_size
from .scenes import check_scene_request, scene_uniforms

# natural photographs only (no drawings, logos, text or microscopy); all load without pooch
PHOTOGRAPHS: tuple[str, ...] = (
    "astronaut",
    "camera",
    "chelsea",
    "coffee",
    "rocket",
    "coins",
    "moon",
    "brick",
    "grass",
    "gravel",
    "hubble_deep_field",
)
DOWNSCALE = 2  # every photograph is shown at half its pixel size, so a 32x32 window holds a recognisable patch
MAX_SIDE = 96  # the largest window (3x a 32x32 training size); both regions fit it
SPLITS = ("train", "held_out")
MISSING = "photographs need scikit-image, which is not installed: pip install axialrope[photos]"


@dataclass(frozen=True)
class Crops:
    """A batch of b crops: which photograph, which region, and the window's top-left corner."""

    photo: torch.Tensor  # (b,) long, index into PHOTOGRAPHS
    origin: torch.Tensor  # (b, 2) long (y, x) in the downscaled photograph's pixels
    split: str

    @property
    def labels(self) -> torch.Tensor:
        """(b,) long: the photograph."""
        return self.photo

    def __len__(self) -> int:
        return self.photo.shape[0]


def check_available() -> None:
    """ValueError (a line, not a traceback) if scikit-image, which holds the photographs, is not installed."""
    try:
        _skimage_data()
    except ImportError:
        raise ValueError(f"data=photographs: {MISSING}") from None


def _skimage_data():
    try:
        from skimage import data  # optional: absent unless installed
    except ImportError as error:
        raise ImportError(MISSING) from error
    return data


@functools.cache
def photograph(index: int) -> torch.Tensor:
    """Photograph `index` of PHOTOGRAPHS, downscaled: (3, H, W) float32 RGB in [0, 1] (loaded once)."""
    array = getattr(_skimage_data(), PHOTOGRAPHS[index])()
    pixels = torch.from_numpy(array).float() / 255
    pixels = repeat(pixels, "h w -> c h w", c=3) if pixels.ndim == 2 else rearrange(pixels[..., :3], "h w c -> c h w")
    size = (pixels.shape[1] // DOWNSCALE, pixels.shape[2] // DOWNSCALE)
    small = F.interpolate(pixels[None], size=size, mode="bilinear", antialias=True, align_corners=False)[0]
    return small.clamp(0, 1).contiguous()


def region(index: int, split: str) -> tuple[int, int]:
    """(first column, width) of a photograph's region `split`: held_out is the right third, at least MAX_SIDE."""
    width = photograph(index).shape[2]
    held_out = max(MAX_SIDE, width // 3)
    return (width - held_out, held_out) if split == "held_out" else (0, width - held_out)


def sample_crops(seed: int, indices: Sequence[int] | torch.Tensor, split: str = "train") -> Crops:
    """Crops number `indices` of seed `seed` in region `split` (the same triple, the same crop).

    Returns:
        Crops of b = len(indices) items.
    """
    indices = check_scene_request(seed, indices)
    if split not in SPLITS:
        raise ValueError(f"split must be one of {', '.join(SPLITS)}, got {split!r}")
    u = scene_uniforms(seed, indices, 3)
    photo = torch.floor(u[:, 0] * len(PHOTOGRAPHS)).long()
    origins = []
    for row, index in enumerate(photo.tolist()):
        first, width = region(index, split)
        height = photograph(index).shape[1]
        y = int(u[row, 1] * (height - MAX_SIDE + 1))
        x = first + int(u[row, 2] * (width - MAX_SIDE + 1))
        origins.append((y, x))
    return Crops(photo=photo, origin=torch.tensor(origins, dtype=torch.long), split=split)


def render_crops(crops: Crops, height: int, width: int) -> torch.Tensor:
    """The windows of b crops.

    Args:
        crops: b crops.
        height, width: the window in pixels, 1 to MAX_SIDE (a larger window extends a smaller one).

    Returns:
        (b, 3, height, width) float32 RGB in [0, 1].
    """
    height, width = check_size("height", height), check_size("width", width)
    if max(height, width) > MAX_SIDE:
        raise ValueError(f"height and width must be at most MAX_SIDE={MAX_SIDE} for photographs, got {height}x{width}")
    windows = [
        photograph(p)[:, y : y + height, x : x + width]
        for p, (y, x) in zip(crops.photo.tolist(), crops.origin.tolist(), strict=True)
    ]
    return torch.stack(windows)


class PhotographsDataset(ProceduralDataset):
    """Crops of the scikit-image photographs, one class per photograph, at any size up to MAX_SIDE.

    A larger bucket is a larger window onto the same crop. Fails at construction, with the
    install command, when scikit-image is missing.

    Args:
        num_items, seed, default_bucket: as in `ProceduralDataset`.
        split: "train" (what `axialrope train --data photographs` reads) or "held_out".
    """

    class_names = PHOTOGRAPHS

    def __init__(
        self, num_items: int = 1_000_000, seed: int = 0, default_bucket: Bucket = Bucket(32, 32), split: str = "train"
    ):
        if split not in SPLITS:
            raise ValueError(f"split must be one of {', '.join(SPLITS)}, got {split!r}")
        _skimage_data()
        super().__init__(num_items, seed, default_bucket)
        self.split = split

    def check_buckets(self, buckets: Sequence[Bucket]) -> None:
        super().check_buckets(buckets)
        for bucket in buckets:
            if max(bucket.height, bucket.width) > MAX_SIDE:
                raise ValueError(f"PhotographsDataset: a bucket's side must be at most {MAX_SIDE}, got {bucket}")

    def _draw(self, indices: list[int]) -> Crops:
        return sample_crops(self.seed, indices, self.split)

    def _render(self, crops: Crops, bucket: Bucket) -> torch.Tensor:
        return render_crops(crops, bucket.height, bucket.width)

"""Real images for calibration: a folder read as training reads it (or images in memory), prepared at any size.

    images = ReferenceImages("photos/", class_names=pipe.config.class_names, num_classes=6)
    images.usable(48, 48)                        # (indices of images large enough, how many were too small)
    references = images.draw((48, 48), seed=0, num=8)    # cells.References: real, floor, labels

An image serves a size when its centre crop to the size's aspect holds at least the size's pixels (a smaller
one would be enlarged, and its blur would count against every method). Each seed draws its own real and
floor sets, disjoint, from the images that serve the size.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import PIL.Image
import torch
import torchvision.transforms.v2.functional as TF

from ..data.buckets import Bucket
from ..data.folders import ImageFolderDataset, centre_crop_size, fit_to_bucket
from .cells import References


def serves(width: int, height: int, size: Sequence[int]) -> bool:
    """Whether a `width` x `height` image, centre-cropped to the aspect of `size` (h, w), holds its pixels."""
    crop_h, crop_w = centre_crop_size(height, width, *size)
    return crop_h >= size[0] and crop_w >= size[1]


class ReferenceImages:
    """Real images to score samples against, prepared at each size as training prepares them.

    Args:
        source: a folder (class subfolders or flat, as `axialrope train --data image_folder` reads it) or its
            `ImageFolderDataset`, a tensor (n, 3, H, W) in [0, 1], or a list of PIL images.
        class_names, num_classes: the model's; samples are drawn for the images' classes where the folder's
            class names are the model's, else for the model's classes in turn (num_classes 0: unconditional).
        labels: class ids (n,) of a tensor or list source (default: the model's classes in turn).
        argument: how errors name the source ("--reference-dir").
    """

    def __init__(
        self,
        source,
        class_names: Sequence[str] | None = None,
        num_classes: int = 0,
        labels: Sequence[int] | torch.Tensor | None = None,
        argument: str = "reference_images",
    ):
        self.argument, self.num_classes = argument, num_classes
        self.dataset, self.images, own_labels = None, None, None
        if isinstance(source, (str, Path, ImageFolderDataset)):
            if labels is not None:  # a folder's classes are its class folders: labels would be silently unused
                raise ValueError(
                    f"labels (class_labels) are for images in memory; the images of the folder {argument} take "
                    "their classes from its class folders (named as the model's classes)"
                )
            try:  # reading a folder reads every file: a bad one fails here, named
                self.dataset = source if isinstance(source, ImageFolderDataset) else ImageFolderDataset(source)
            except (ValueError, FileNotFoundError, NotADirectoryError) as error:
                raise type(error)(str(error).replace("data_dir", argument, 1)) from None
            self.sizes = self.dataset.sizes
            own_labels = self._folder_labels(class_names)
        else:
            self.images = _as_tensor(source, argument)
            self.sizes = [(image.shape[-1], image.shape[-2]) for image in self.images]
            own_labels = None if labels is None else torch.as_tensor(labels, dtype=torch.long)
            if own_labels is not None and own_labels.shape != (len(self.images),):
                raise ValueError(
                    f"labels must hold one class id per image ({len(self.images)}), got shape {tuple(own_labels.shape)}"
                )
        count = len(self.sizes)
        self.labels = (
            None if not num_classes else (own_labels if own_labels is not None else torch.arange(count) % num_classes)
        )

    def _folder_labels(self, class_names: Sequence[str] | None) -> torch.Tensor | None:
        """The folder's labels as the model's class ids, where its class folders are named as the model's classes."""
        names = self.dataset.class_names
        if self.dataset.labels is None or not class_names or not set(names) <= set(class_names):
            return None
        return torch.tensor([list(class_names).index(names[label]) for label in self.dataset.labels.tolist()])

    def __len__(self) -> int:
        return len(self.sizes)

    def usable(self, height: int, width: int) -> tuple[list[int], int]:
        """(indices of the images that serve height x width, how many are too small for it)."""
        indices = [i for i, (w, h) in enumerate(self.sizes) if serves(w, h, (height, width))]
        return indices, len(self.sizes) - len(indices)

    def check(self, sizes: Sequence[Sequence[int]]) -> dict[tuple[int, int], tuple[int, int]]:
        """(usable, too small) per size (h, w); ValueError naming the size if fewer than 2 images serve one
        (a real and a floor set need one each)."""
        counts = {}
        for height, width in sizes:
            indices, small = self.usable(height, width)
            if len(indices) < 2:
                raise ValueError(
                    f"{self.argument}: {len(indices)} of its {len(self)} images are large enough for "
                    f"{height}x{width} ({small} too small: an image must hold the size's pixels once "
                    "centre-cropped to its aspect); calibrating a size needs at least 2: add larger "
                    "images or choose smaller scales"
                )
            counts[(height, width)] = (len(indices), small)
        return counts

    def _prepared(self, index: int, height: int, width: int) -> torch.Tensor:
        """Image `index` at height x width, (3, h, w) in [0, 1], centre-cropped to the aspect and resized."""
        if self.dataset is not None:
            return (self.dataset[(index, Bucket(height, width))]["pixel_values"] + 1) / 2
        return fit_to_bucket(self.images[index], height, width).clamp(0, 1)

    def draw(self, size: Sequence[int], seed: int, num: int) -> References:
        """Seed `seed`'s real and floor sets at `size` (h, w): min(num, half the usable images) each, disjoint,
        drawn by a generator seeded with `seed`; the real images' labels."""
        height, width = size
        indices, _ = self.usable(height, width)
        count = min(num, len(indices) // 2)
        order = torch.randperm(len(indices), generator=torch.Generator().manual_seed(seed)).tolist()
        picked = [indices[i] for i in order[: 2 * count]]
        stack = lambda chosen: torch.stack([self._prepared(i, height, width) for i in chosen])  # noqa: E731
        real, floor = stack(picked[:count]), stack(picked[count:])
        labels = None if self.labels is None else self.labels[picked[:count]]
        return References(real, floor, labels)


def _as_tensor(source, argument: str) -> torch.Tensor:
    """Images in memory as a float tensor (n, 3, H, W) in [0, 1]; TypeError / ValueError naming `argument`."""
    if isinstance(source, (list, tuple)) and source and all(isinstance(i, PIL.Image.Image) for i in source):
        sizes = {image.size for image in source}
        if len(sizes) > 1:
            raise ValueError(f"{argument}: PIL images of several sizes ({sorted(sizes)}); give a folder instead")
        return torch.stack(
            [TF.to_dtype(TF.pil_to_tensor(image.convert("RGB")), torch.float32, scale=True) for image in source]
        )
    if not isinstance(source, torch.Tensor):
        raise TypeError(
            f"{argument} must be a folder, a tensor (n, 3, H, W) in [0, 1] or a list of PIL images, "
            f"got {type(source).__name__}"
        )
    if source.ndim != 4 or source.shape[1] != 3 or not source.is_floating_point() or len(source) < 2:
        raise ValueError(
            f"{argument} must be a float tensor (n, 3, H, W) in [0, 1] with n >= 2, "
            f"got {source.dtype} of shape {tuple(source.shape)}"
        )
    if not bool(torch.isfinite(source).all()) or source.min() < 0 or source.max() > 1:
        raise ValueError(f"{argument} must hold finite values in [0, 1]")
    return source.detach().float().cpu()


__all__ = ["ReferenceImages", "serves"]

"""Datasets of a user's own files: a folder of images, a folder of videos or of frame folders.

Layouts:
- images: class subfolders as torchvision's `ImageFolder` reads them (`root/<class>/<image>`,
  labels from the sorted class names), or a flat folder of images (no labels; a folder with
  images directly inside is read as flat and its subfolders are ignored);
- videos: animated image files (GIF, WebP) and, with PyAV installed, video files (MP4, WebM,
  MOV, ...) directly in `root`, and/or subfolders that each hold the frames of one video as
  images (sorted by name); no labels.

Every file is opened (header only) when the dataset is built, so a missing, empty or
unreadable folder fails before any training starts, naming the culprit. Items are keyed
like the procedural datasets: an index, or `(index, Bucket)`; each item is resized with
torchvision to cover the bucket (aspect kept) and centre-cropped to it.

Samples are dicts: "pixel_values" in [-1, 1], (3, h, w) for images and (3, t, h, w) for
video, plus "class_labels" when the folder has classes.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import torch
import torchvision.transforms.v2.functional as TF
from einops import rearrange
from PIL import Image, ImageSequence
from torch.utils.data import Dataset
from torchvision.datasets.folder import IMG_EXTENSIONS, find_classes, make_dataset

from .buckets import Bucket, check_buckets
from .video_io import CONTAINER_EXTENSIONS, av_available, probe_video, read_video_frames

ANIMATION_EXTENSIONS = (".gif", ".webp")  # animated images that PIL decodes; containers go through PyAV


def _is_image(path: Path) -> bool:
    return path.is_file() and path.suffix.lower() in IMG_EXTENSIONS


def _check_folder(root: str | Path, argument: str) -> Path:
    root = Path(root)
    if not root.exists():
        raise FileNotFoundError(f"{argument}: folder {str(root)!r} does not exist")
    if not root.is_dir():
        raise NotADirectoryError(f"{argument}: {str(root)!r} is not a folder")
    return root


def _open_header(path: Path) -> tuple[int, int, int]:
    """(width, height, frame count) of an image file, read from its header; ValueError if unreadable."""
    try:
        with Image.open(path) as image:
            return image.width, image.height, getattr(image, "n_frames", 1)
    except Exception as error:  # PIL raises several types for bad files
        raise ValueError(f"cannot read image {str(path)!r}: {error}") from error


def fit_to_bucket(pixels: torch.Tensor, height: int, width: int) -> torch.Tensor:
    """Resize to cover height x width keeping the aspect (antialiased), then centre-crop.

    Args:
        pixels: (..., c, H, W) uint8 or float.

    Returns:
        (..., c, height, width) of the same dtype.
    """
    source_h, source_w = pixels.shape[-2:]
    scale = max(height / source_h, width / source_w)
    covering = [max(height, math.ceil(source_h * scale - 1e-6)), max(width, math.ceil(source_w * scale - 1e-6))]
    return TF.center_crop(TF.resize(pixels, covering, antialias=True), [height, width])


def _to_model_range(pixels: torch.Tensor) -> torch.Tensor:
    """uint8 [0, 255] -> float32 [-1, 1]."""
    return TF.to_dtype(pixels, torch.float32, scale=True) * 2 - 1


class _FolderDataset(Dataset):
    """Shared keys, bucket checks and flipping; subclasses list items and load pixels."""

    is_video = False
    num_classes: int | None = None
    class_names: tuple[str, ...] | None = None

    def __init__(self, default_bucket: Bucket, random_flip: bool):
        self.random_flip = random_flip
        self.check_buckets([default_bucket])
        self.default_bucket = default_bucket

    def check_buckets(self, buckets: Sequence[Bucket]) -> None:
        """ValueError unless every bucket suits this dataset (frame count for video, none for images)."""
        check_buckets(buckets, self.is_video, type(self).__name__)

    def _load(self, index: int, bucket: Bucket) -> dict[str, torch.Tensor]:
        raise NotImplementedError

    def __getitem__(self, key: int | tuple[int, Bucket]) -> dict[str, torch.Tensor]:
        index, bucket = (key, self.default_bucket) if isinstance(key, int) else key
        if not 0 <= index < len(self):
            raise IndexError(f"index {index} out of range for a dataset of {len(self)} items")
        sample = self._load(index, bucket)
        if self.random_flip and torch.rand(()) < 0.5:  # global RNG: seeded, and saved in checkpoints
            sample["pixel_values"] = sample["pixel_values"].flip(-1)
        return sample


class ImageFolderDataset(_FolderDataset):
    """A folder of images: class subfolders (ImageFolder layout, labelled) or flat (unlabelled).

    Args:
        root: the folder.
        default_bucket: size of items asked for by a bare index.
        random_flip: flip each item horizontally with probability 1/2.
    """

    def __init__(self, root: str | Path, default_bucket: Bucket = Bucket(32, 32), random_flip: bool = False):
        self.root = _check_folder(root, "data_dir")
        flat = sorted(p for p in self.root.iterdir() if _is_image(p))
        if flat:
            self.paths, self.labels = flat, None
        else:
            try:
                classes, class_to_idx = find_classes(str(self.root))
                items = make_dataset(str(self.root), class_to_idx, extensions=IMG_EXTENSIONS, allow_empty=True)
            except FileNotFoundError:
                items = []
            if not items:
                raise ValueError(
                    f"data_dir: {str(self.root)!r} holds no images ({', '.join(IMG_EXTENSIONS)}), "
                    "neither directly nor in class subfolders"
                )
            counts = torch.bincount(torch.tensor([label for _, label in items]), minlength=len(classes))
            empty = [name for name, count in zip(classes, counts.tolist(), strict=True) if count == 0]
            if empty:  # a class without images would be a label the model never sees
                raise ValueError(
                    f"data_dir: class folder(s) {', '.join(repr(n) for n in empty)} of {str(self.root)!r} hold no "
                    f"images ({', '.join(IMG_EXTENSIONS)}); add images or remove the folder(s)"
                )
            self.paths = [Path(path) for path, _ in items]
            self.labels = torch.tensor([label for _, label in items])
            self.class_names, self.num_classes = tuple(classes), len(classes)
        self.sizes = [_open_header(path)[:2] for path in self.paths]  # (width, height), fails on a bad file
        super().__init__(default_bucket, random_flip)

    def __len__(self) -> int:
        return len(self.paths)

    @property
    def aspects(self) -> list[float]:
        """width / height of every image, for `buckets.nearest_buckets`."""
        return [w / h for w, h in self.sizes]

    def _load(self, index: int, bucket: Bucket) -> dict[str, torch.Tensor]:
        path = self.paths[index]
        try:
            with Image.open(path) as image:
                pixels = TF.pil_to_tensor(image.convert("RGB"))  # (3, H, W) uint8
        except Exception as error:
            raise ValueError(f"cannot read image {str(path)!r}: {error}") from error
        sample = {"pixel_values": _to_model_range(fit_to_bucket(pixels, bucket.height, bucket.width))}
        if self.labels is not None:
            sample["class_labels"] = self.labels[index]
        return sample


class VideoFolderDataset(_FolderDataset):
    """A folder of videos: animated GIF/WebP files, video files (PyAV) and/or subfolders of frame images.

    A clip of the bucket's frame count starts at a random frame (global RNG) of its video.

    Args:
        root: the folder.
        default_bucket: size of items asked for by a bare index (with a frame count).
        random_flip: flip each clip horizontally with probability 1/2.
    """

    is_video = True

    def __init__(
        self, root: str | Path, default_bucket: Bucket = Bucket(32, 32, frames=8), random_flip: bool = False
    ):
        self.root = _check_folder(root, "data_dir")
        self.videos: list[Path | list[Path]] = []  # a file, or the sorted frame files of a folder
        unsupported = []
        for entry in sorted(self.root.iterdir()):
            if entry.is_dir():
                frames = sorted(p for p in entry.iterdir() if _is_image(p))
                if frames:
                    self.videos.append(frames)
            elif entry.suffix.lower() in ANIMATION_EXTENSIONS:
                self.videos.append(entry)
            elif entry.suffix.lower() in CONTAINER_EXTENSIONS:
                (self.videos if av_available() else unsupported).append(entry)
        if not self.videos:
            hint = (f" ({', '.join(p.name for p in unsupported[:3])} need PyAV: pip install av, or convert them "
                    "to frame folders)" if unsupported else "")
            raise ValueError(
                f"data_dir: {str(self.root)!r} holds no videos: "
                f"expected {'/'.join(ANIMATION_EXTENSIONS + CONTAINER_EXTENSIONS)} "
                f"files or subfolders of frame images{hint}"
            )
        self.sizes, self.frame_counts = [], []
        for video in self.videos:
            if isinstance(video, list):
                headers = [_open_header(frame) for frame in video]
                if len({h[:2] for h in headers}) > 1:
                    raise ValueError(f"frames of {str(video[0].parent)!r} differ in size")
                (width, height, _), count = headers[0], len(headers)
            elif video.suffix.lower() in ANIMATION_EXTENSIONS:
                width, height, count = _open_header(video)
            else:
                width, height, count = probe_video(video)
            self.sizes.append((width, height))
            self.frame_counts.append(count)
        super().__init__(default_bucket, random_flip)

    def check_buckets(self, buckets: Sequence[Bucket]) -> None:
        super().check_buckets(buckets)
        shortest = min(self.frame_counts)
        for bucket in buckets:
            if bucket.frames > shortest:
                name = self.videos[self.frame_counts.index(shortest)]
                name = name[0].parent if isinstance(name, list) else name
                raise ValueError(f"bucket {bucket} needs {bucket.frames} frames but {str(name)!r} has only {shortest}")

    def __len__(self) -> int:
        return len(self.videos)

    @property
    def aspects(self) -> list[float]:
        """width / height of every video, for `buckets.nearest_buckets`."""
        return [w / h for w, h in self.sizes]

    def _read_frames(self, index: int, start: int, count: int) -> torch.Tensor:
        """(count, 3, H, W) uint8 frames start .. start + count - 1 of video `index`."""
        video = self.videos[index]
        try:
            if isinstance(video, Path) and video.suffix.lower() in CONTAINER_EXTENSIONS:
                frames = list(read_video_frames(video, start, count))
            elif isinstance(video, Path):
                with Image.open(video) as animation:
                    frames = [
                        TF.pil_to_tensor(frame.convert("RGB"))
                        for i, frame in enumerate(ImageSequence.Iterator(animation))
                        if start <= i < start + count
                    ]
            else:
                frames = []
                for path in video[start : start + count]:
                    with Image.open(path) as image:
                        frames.append(TF.pil_to_tensor(image.convert("RGB")))
        except Exception as error:
            raise ValueError(f"cannot read video {str(video)!r}: {error}") from error
        return torch.stack(frames)

    def _load(self, index: int, bucket: Bucket) -> dict[str, torch.Tensor]:
        spare = self.frame_counts[index] - bucket.frames
        if spare < 0:
            raise ValueError(f"bucket {bucket} needs {bucket.frames} frames, "
                             f"video {index} has {self.frame_counts[index]}")
        start = int(torch.randint(spare + 1, ()))
        frames = fit_to_bucket(self._read_frames(index, start, bucket.frames), bucket.height, bucket.width)
        return {"pixel_values": rearrange(_to_model_range(frames), "t c h w -> c t h w")}

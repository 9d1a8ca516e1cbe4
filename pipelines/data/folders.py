"""Datasets of a user's own files: a folder of images, a folder of videos or of frame folders.

Layouts: images in class subfolders (`root/<class>/.../<image>`, labels from the sorted class
names, as torchvision's `ImageFolder`) or flat (images directly in `root`: no labels; subfolders
without images ignored, images in both places refused); videos as animated GIF/WebP files, video
files (MP4, WebM, MOV, ... with PyAV) and/or subfolders of frame images, directly in `root`. Hidden
files and folders (".ipynb_checkpoints") are skipped, and no folder or file is read twice however
links lead to it (a link loop ends).

Every file is read whole when the dataset is built (a truncated image fails then, naming it,
not mid-run), within `limits.MAX_IMAGE_PIXELS`. Images are read as a photo library shows them:
turned upright by their EXIF orientation, 16-bit grey scaled to 8 bits. An item is centre-cropped
to its bucket's aspect, then resized (never more pixels than the file holds, or the bucket); an item
that would be enlarged more than MAX_ENLARGEMENT times a side is refused when the buckets are checked.
Samples: "pixel_values" in [-1, 1], (3, h, w) or (3, t, h, w), and "class_labels" with classes.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch
import torchvision.transforms.v2.functional as TF
from einops import rearrange
from PIL import Image, ImageOps, ImageSequence
from torch.utils.data import Dataset
from torchvision.datasets.folder import IMG_EXTENSIONS

from ..limits import MAX_ASPECT_MISMATCH, MAX_IMAGE_PIXELS
from .buckets import Bucket, check_buckets
from .video_io import CONTAINER_EXTENSIONS, av_available, probe_video, read_video_frames

ANIMATION_EXTENSIONS = (".gif", ".webp")  # animated images that PIL decodes; containers go through PyAV
# an item enlarged more than this many times a side to its bucket is blocks of that many pixels: a 1x1 icon
# trained at 32x32 teaches flat squares (calibration refuses any enlargement of its references)
MAX_ENLARGEMENT = 8
_TURNED = (5, 6, 7, 8)  # EXIF orientations that swap width and height


def _is_image(path: Path) -> bool:
    return path.is_file() and path.suffix.lower() in IMG_EXTENSIONS


def _check_folder(root: str | Path, argument: str) -> Path:
    root = Path(root)
    if not root.exists():
        raise FileNotFoundError(f"{argument}: folder {str(root)!r} does not exist")
    if not root.is_dir():
        raise NotADirectoryError(f"{argument}: {str(root)!r} is not a folder")
    return root


class _Scan:
    """Lists folders once each: entries sorted by name, hidden ones skipped, and any folder or file already
    reached (through a link, a link loop or a bind) left out."""

    def __init__(self):
        self.seen: set[tuple[int, int]] = set()

    def first_visit(self, path: Path) -> bool:
        try:
            status = path.stat()
        except OSError:  # a broken link
            return False
        key = (status.st_dev, status.st_ino)
        if key in self.seen:
            return False
        self.seen.add(key)
        return True

    def entries(self, folder: Path) -> list[Path]:
        return [p for p in sorted(folder.iterdir()) if not p.name.startswith(".") and self.first_visit(p)]

    def images_under(self, folder: Path) -> list[Path]:
        """Every image in `folder` and its subfolders, depth first, in name order."""
        found = []
        for entry in self.entries(folder):
            if entry.is_dir():
                found += self.images_under(entry)
            elif _is_image(entry):
                found.append(entry)
        return found


def _upright(image: Image.Image) -> Image.Image:
    """An image as a photo library shows it: turned by its EXIF orientation, 16-bit or float grey made
    8-bit (PIL's own conversion would clip it to white)."""
    image = ImageOps.exif_transpose(image)
    if image.mode.startswith("I"):  # "I;16", "I;16B", ...: 16-bit grey; "I": 32-bit, from 16-bit files
        grey = np.asarray(image).astype(np.float64) / 257
        image = Image.fromarray(np.clip(np.rint(grey), 0, 255).astype(np.uint8), "L")
    elif image.mode == "F":  # float grey, 0 to 1
        image = Image.fromarray(np.clip(np.rint(np.asarray(image) * 255), 0, 255).astype(np.uint8), "L")
    return image.convert("RGB")


def _open_image(path: Path) -> Image.Image:
    """PIL's image of `path`, its pixel count checked before decoding; the caller closes it."""
    with warnings.catch_warnings():  # the pixel bound is checked here as an error, not PIL's warning
        warnings.simplefilter("ignore", Image.DecompressionBombWarning)
        image = Image.open(path)
    if image.width * image.height > MAX_IMAGE_PIXELS:
        image.close()
        raise ValueError(
            f"{image.width}x{image.height} pixels, more than the {MAX_IMAGE_PIXELS} an image may "
            "have (a decompression bomb, or a scan to shrink first)"
        )
    return image


def _check_image(path: Path) -> tuple[int, int, int]:
    """(width, height as shown upright, frame count) of an image file, decoding all its pixels; ValueError
    naming the file if it cannot be read whole."""
    try:
        with _open_image(path) as image:
            image.load()  # every pixel: a truncated or corrupt file fails here
            turned = image.getexif().get(0x0112) in _TURNED
            frames = getattr(image, "n_frames", 1)
            return (image.height, image.width, frames) if turned else (image.width, image.height, frames)
    except Exception as error:  # PIL raises several types for bad files
        raise ValueError(f"cannot read image {str(path)!r}: {error}") from None


def _read_image(path: Path) -> torch.Tensor:
    """(3, H, W) uint8 pixels of an image file, upright (see `_upright`)."""
    try:
        with _open_image(path) as image:
            return TF.pil_to_tensor(_upright(image))
    except Exception as error:
        raise ValueError(f"cannot read image {str(path)!r}: {error}") from None


def centre_crop_size(source_h: int, source_w: int, height: int, width: int) -> tuple[int, int]:
    """(crop_h, crop_w): the largest centred crop of a source_h x source_w picture with the aspect of
    height x width (at least one pixel a side)."""
    return (
        max(1, min(source_h, round(source_w * height / width))),
        max(1, min(source_w, round(source_h * width / height))),
    )


def fit_to_bucket(pixels: torch.Tensor, height: int, width: int) -> torch.Tensor:
    """Centre-crop to the aspect of height x width, then resize to it (antialiased).

    Cropping first keeps the work within the source's pixels and the bucket's, whatever the aspect.

    Args:
        pixels: (..., c, H, W) uint8 or float.

    Returns:
        (..., c, height, width) of the same dtype.
    """
    crop = centre_crop_size(*pixels.shape[-2:], height, width)
    return TF.resize(TF.center_crop(pixels, list(crop)), [height, width], antialias=True)


def _to_model_range(pixels: torch.Tensor) -> torch.Tensor:
    """uint8 [0, 255] -> float32 [-1, 1]."""
    return TF.to_dtype(pixels, torch.float32, scale=True) * 2 - 1


class _FolderDataset(Dataset):
    """Shared keys, bucket checks and flipping; subclasses list items and load pixels."""

    is_video = False
    num_classes: int | None = None
    class_names: tuple[str, ...] | None = None

    sizes: list[tuple[int, int]]  # (width, height) of every item, as shown

    def __init__(self, default_bucket: Bucket, random_flip: bool):
        self.random_flip = random_flip
        check_buckets([default_bucket], self.is_video, type(self).__name__)
        self.default_bucket = default_bucket

    def _name(self, index: int) -> str:
        raise NotImplementedError

    def check_buckets(self, buckets: Sequence[Bucket]) -> None:
        """ValueError unless every bucket suits this dataset (frame count for video, none for images), and every
        item's aspect is within MAX_ASPECT_MISMATCH of its nearest bucket's (a 1 x 1000000 picture is refused)."""
        check_buckets(buckets, self.is_video, type(self).__name__)
        logs = [math.log(b.aspect) for b in buckets]
        limit = math.log(MAX_ASPECT_MISMATCH)
        for index, (width, height) in enumerate(self.sizes):
            if min(abs(math.log(width / height) - log) for log in logs) > limit:
                raise ValueError(
                    f"data_dir: {self._name(index)!r} is {width}x{height} pixels, an aspect more than "
                    f"{MAX_ASPECT_MISMATCH:g} times off every training size's ({', '.join(str(b) for b in buckets)}): "
                    "crop it, remove it, or add a --resolution of its shape"
                )
            self._check_enlargement(index, width, height, buckets)

    def _check_enlargement(self, index: int, width: int, height: int, buckets: Sequence[Bucket]) -> None:
        """ValueError naming the item if its crop would be enlarged more than MAX_ENLARGEMENT times a side to the
        largest bucket of its aspect (the bucket nearest its aspect, as `buckets.nearest_buckets` assigns it)."""
        nearest = min(abs(math.log(width / height / b.aspect)) for b in buckets)
        candidates = [b for b in buckets if abs(math.log(width / height / b.aspect)) == nearest]
        bucket = max(candidates, key=lambda b: b.height * b.width)
        crop_h, crop_w = centre_crop_size(height, width, bucket.height, bucket.width)
        factor = max(bucket.height / crop_h, bucket.width / crop_w)
        if factor > MAX_ENLARGEMENT:
            raise ValueError(
                f"data_dir: {self._name(index)!r} is {width}x{height} pixels: training at {bucket} would enlarge it "
                f"{factor:.3g} times a side, more than {MAX_ENLARGEMENT} (its pixels would be blocks, not a picture); "
                "remove it, or train at a smaller --resolution"
            )

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
        scan = _Scan()
        entries = scan.entries(self.root)
        flat = [p for p in entries if _is_image(p)]
        classes = [p for p in entries if p.is_dir()]
        images = [scan.images_under(folder) for folder in classes]
        if flat:
            holding = [folder.name for folder, found in zip(classes, images, strict=True) if found]
            if holding:  # flat would drop every class; classes would drop the loose images: neither is meant
                raise ValueError(
                    f"data_dir: {str(self.root)!r} mixes images at its top ({flat[0].name!r}"
                    f"{f' and {len(flat) - 1} more' if len(flat) > 1 else ''}) with class folders of images "
                    f"({', '.join(repr(n) for n in holding[:3])}{', ...' if len(holding) > 3 else ''}): move "
                    f"{flat[0].name!r} into a class folder (or out of the folder), or keep the images flat"
                )
            self.paths, self.labels = flat, None
        else:
            if not any(images):
                raise ValueError(
                    f"data_dir: {str(self.root)!r} holds no images ({', '.join(IMG_EXTENSIONS)}), "
                    "neither directly nor in class subfolders"
                )
            empty = [folder.name for folder, found in zip(classes, images, strict=True) if not found]
            if empty:  # a class without images would be a label the model never sees
                raise ValueError(
                    f"data_dir: class folder(s) {', '.join(repr(n) for n in empty)} of {str(self.root)!r} hold no "
                    f"images ({', '.join(IMG_EXTENSIONS)}); add images or remove the folder(s)"
                )
            self.paths = [path for found in images for path in found]
            self.labels = torch.tensor([label for label, found in enumerate(images) for _ in found])
            self.class_names, self.num_classes = tuple(folder.name for folder in classes), len(classes)
        self.sizes = [_check_image(path)[:2] for path in self.paths]  # reads every pixel: a bad file fails here
        super().__init__(default_bucket, random_flip)

    def __len__(self) -> int:
        return len(self.paths)

    def _name(self, index: int) -> str:
        return str(self.paths[index])

    @property
    def aspects(self) -> list[float]:
        """width / height of every image, for `buckets.nearest_buckets`."""
        return [w / h for w, h in self.sizes]

    def _load(self, index: int, bucket: Bucket) -> dict[str, torch.Tensor]:
        pixels = _read_image(self.paths[index])  # (3, H, W) uint8, upright
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

    def __init__(self, root: str | Path, default_bucket: Bucket = Bucket(32, 32, frames=8), random_flip: bool = False):
        self.root = _check_folder(root, "data_dir")
        self.videos: list[Path | list[Path]] = []  # a file, or the sorted frame files of a folder
        unsupported = []
        scan = _Scan()
        for entry in scan.entries(self.root):
            if entry.is_dir():
                frames = [p for p in scan.entries(entry) if _is_image(p)]
                if frames:
                    self.videos.append(frames)
            elif entry.suffix.lower() in ANIMATION_EXTENSIONS:
                self.videos.append(entry)
            elif entry.suffix.lower() in CONTAINER_EXTENSIONS:
                (self.videos if av_available() else unsupported).append(entry)
        if not self.videos:
            hint = (
                f" ({', '.join(p.name for p in unsupported[:3])} need PyAV: pip install av, or convert them "
                "to frame folders)"
                if unsupported
                else ""
            )
            kinds = "/".join(ANIMATION_EXTENSIONS + CONTAINER_EXTENSIONS)
            raise ValueError(
                f"data_dir: {str(self.root)!r} holds no videos: expected {kinds} files or subfolders of frame "
                f"images{hint}"
            )
        self.sizes, self.frame_counts = [], []
        for video in self.videos:
            if isinstance(video, list):
                headers = [_check_image(frame) for frame in video]
                if len({h[:2] for h in headers}) > 1:
                    raise ValueError(f"frames of {str(video[0].parent)!r} differ in size")
                (width, height, _), count = headers[0], len(headers)
            elif video.suffix.lower() in ANIMATION_EXTENSIONS:
                width, height, count = _check_image(video)
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

    def _name(self, index: int) -> str:
        video = self.videos[index]
        return str(video[0].parent if isinstance(video, list) else video)

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
                with _open_image(video) as animation:
                    frames = [
                        TF.pil_to_tensor(frame.convert("RGB"))
                        for i, frame in enumerate(ImageSequence.Iterator(animation))
                        if start <= i < start + count
                    ]
            else:
                frames = [_read_image(path) for path in video[start : start + count]]
        except Exception as error:
            raise ValueError(f"cannot read video {str(video)!r}: {error}") from None
        return torch.stack(frames)

    def _load(self, index: int, bucket: Bucket) -> dict[str, torch.Tensor]:
        spare = self.frame_counts[index] - bucket.frames
        if spare < 0:
            raise ValueError(
                f"bucket {bucket} needs {bucket.frames} frames, video {index} has {self.frame_counts[index]}"
            )
        start = int(torch.randint(spare + 1, ()))
        frames = fit_to_bucket(self._read_frames(index, start, bucket.frames), bucket.height, bucket.width)
        return {"pixel_values": rearrange(_to_model_range(frames), "t c h w -> c t h w")}

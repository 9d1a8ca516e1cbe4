"""Datasets of the built-in procedural data: shapes and textures (images), moving shapes (videos).

Item `index` is scene `index` of the dataset's seed, rendered at the size of the bucket
it is asked for: a key is an `index` (rendered at `default_bucket`) or an `(index, Bucket)`
pair as `BucketBatchSampler` yields. A batch of keys is rendered in one vectorised call
through `__getitems__`, which torch's DataLoader uses when a dataset has it.

Samples are dicts: "pixel_values" in [-1, 1], (3, h, w) for images and (3, t, h, w) for
video, and "class_labels", the kind of the scene's main shape (see `scenes.SHAPE_KINDS`) or the
texture's family (`textures.TEXTURE_KINDS`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

import torch
from torch.utils.data import Dataset

from axialrope.validation import is_int

from .buckets import Bucket, check_buckets
from .render import render_images, render_videos
from .scenes import SHAPE_KINDS, SceneConfig, sample_scenes
from .textures import TEXTURE_KINDS, render_textures, sample_textures

Key = int | tuple[int, Bucket]


class ProceduralDataset(Dataset):
    """Items drawn from a procedural distribution and rendered at the size each key asks for.

    Subclasses set `class_names` and `is_video` and say how to draw items (`_draw`) and
    render them (`_render`).

    Args:
        num_items: the dataset length (an epoch); items are unique per index.
        seed: selects the item family; the same (seed, index, bucket) always gives the same pixels.
        default_bucket: the size of items asked for by a bare index.
    """

    class_names: tuple[str, ...] = ()
    is_video = False

    def __init__(self, num_items: int, seed: int, default_bucket: Bucket):
        if not is_int(num_items) or num_items <= 0:
            raise ValueError(f"num_items must be a positive integer, got {num_items!r}")
        self.check_buckets([default_bucket])
        self.num_items, self.seed, self.default_bucket = num_items, seed, default_bucket

    @property
    def num_classes(self) -> int:
        return len(self.class_names)

    def _draw(self, indices: list[int]):
        """The parameters of items `indices`: an object with a (b,) long `labels`."""
        raise NotImplementedError

    def _render(self, items, bucket: Bucket) -> torch.Tensor:
        """(b, 3, h, w) or (b, 3, t, h, w) pixels in [0, 1] of drawn items at one bucket's size."""
        raise NotImplementedError

    def check_buckets(self, buckets: Sequence[Bucket]) -> None:
        """ValueError unless every bucket suits this dataset (frame count for video, none for images)."""
        check_buckets(buckets, self.is_video, type(self).__name__)

    def __len__(self) -> int:
        return self.num_items

    def __getitem__(self, key: Key) -> dict[str, torch.Tensor]:
        return self.__getitems__([key])[0]

    def __getitems__(self, keys: Sequence[Key]) -> list[dict[str, torch.Tensor]]:
        """Render a batch of keys, one vectorised call per distinct bucket among them."""
        by_bucket: dict[Bucket, list[int]] = defaultdict(list)  # bucket -> positions in keys
        indices = []
        for position, key in enumerate(keys):
            index, bucket = (key, self.default_bucket) if isinstance(key, int) else key
            if not 0 <= index < self.num_items:
                raise IndexError(f"index {index} out of range for a dataset of {self.num_items} items")
            self.check_buckets([bucket])
            by_bucket[bucket].append(position)
            indices.append(index)
        samples: list[dict[str, torch.Tensor] | None] = [None] * len(keys)
        for bucket, positions in by_bucket.items():
            scenes = self._draw([indices[p] for p in positions])
            pixels = self._render(scenes, bucket) * 2 - 1  # [0, 1] -> [-1, 1]
            for row, position in enumerate(positions):
                samples[position] = {"pixel_values": pixels[row], "class_labels": scenes.labels[row]}
        return samples


class ShapesDataset(ProceduralDataset):
    """Anti-aliased coloured shapes on a gradient background, at any size.

    Args:
        num_items, seed, default_bucket: as in `ProceduralDataset`.
        scene_config: ranges of the scene distribution.
    """

    class_names = SHAPE_KINDS

    def __init__(
        self,
        num_items: int = 1_000_000,
        seed: int = 0,
        default_bucket: Bucket = Bucket(32, 32),
        scene_config: SceneConfig = SceneConfig(),
    ):
        super().__init__(num_items, seed, default_bucket)
        self.scene_config = scene_config

    def _draw(self, indices: list[int]):
        return sample_scenes(self.seed, indices, self.scene_config)

    def _render(self, scenes, bucket: Bucket) -> torch.Tensor:
        return render_images(scenes, bucket.height, bucket.width)


class TexturesDataset(ProceduralDataset):
    """Stationary textures (bricks, stones, grass, clouds) at a fixed scale in pixels, at any size.

    A larger bucket is a larger window onto the same texture (see `textures.py`).

    Args:
        num_items, seed, default_bucket: as in `ProceduralDataset`.
    """

    class_names = TEXTURE_KINDS

    def __init__(self, num_items: int = 1_000_000, seed: int = 0, default_bucket: Bucket = Bucket(32, 32)):
        super().__init__(num_items, seed, default_bucket)

    def _draw(self, indices: list[int]):
        return sample_textures(self.seed, indices)

    def _render(self, textures, bucket: Bucket) -> torch.Tensor:
        return render_textures(textures, bucket.height, bucket.width)


class MovingShapesDataset(ShapesDataset):
    """The shapes of `ShapesDataset` moving at constant speed and bouncing off the frame edges.

    Frame 0 of item i is image i of a `ShapesDataset` with the same seed. Buckets carry a
    frame count; speed is per frame, so more frames show more motion.
    """

    is_video = True

    def __init__(
        self,
        num_items: int = 1_000_000,
        seed: int = 0,
        default_bucket: Bucket = Bucket(32, 32, frames=8),
        scene_config: SceneConfig = SceneConfig(),
    ):
        super().__init__(num_items, seed, default_bucket, scene_config)

    def _render(self, scenes, bucket: Bucket) -> torch.Tensor:
        return render_videos(scenes, bucket.frames, bucket.height, bucket.width)

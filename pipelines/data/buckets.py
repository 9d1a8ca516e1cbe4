"""Multi-resolution training: buckets of sizes and aspect ratios, each batch drawn from one bucket.

A batch sampler here yields lists of `(index, bucket)` keys; the datasets of this package
render or resize item `index` to the bucket's size, so a batch always stacks into one tensor.
Items that have an aspect of their own (photos) go to the bucket nearest their aspect
ratio; procedural items, which render at any size, get a bucket drawn per batch.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import torch
from torch.utils.data import Sampler

from axialrope.validation import is_int

from ..limits import check_side
from .scenes import mix_seed


@dataclass(frozen=True, order=True)
class Bucket:
    """One training size: height x width pixels, and a frame count for video (None for images)."""

    height: int
    width: int
    frames: int | None = None

    def __post_init__(self):
        for name in ("height", "width") + (("frames",) if self.frames is not None else ()):
            value = getattr(self, name)
            if not is_int(value) or value <= 0:
                raise ValueError(f"bucket {name} must be a positive integer, got {value!r}")
            check_side(value, f"bucket {name}")

    @classmethod
    def parse(cls, text: str | int, frames: int | None = None) -> Bucket:
        """'32' (32x32), '32x48' (height x width) or '8x32x48' (frames x height x width).

        `frames` applies to the one- and two-number forms (video buckets with a shared frame count).
        """
        text = str(text).strip().lower()
        if not re.fullmatch(r"\d+(x\d+){0,2}", text):
            raise ValueError(f"resolution must look like '32', 'HxW' or 'TxHxW', got {text!r}")
        numbers = [int(n) for n in text.split("x")]
        if len(numbers) == 1:
            numbers = numbers * 2
        if len(numbers) == 3:
            return cls(numbers[1], numbers[2], numbers[0])
        return cls(numbers[0], numbers[1], frames)

    @property
    def aspect(self) -> float:
        """width / height."""
        return self.width / self.height

    @property
    def size(self) -> tuple[int, ...]:
        """(frames, height, width) for video, (height, width) for images."""
        return (self.height, self.width) if self.frames is None else (self.frames, self.height, self.width)

    def __str__(self) -> str:
        return "x".join(str(n) for n in self.size)


def check_buckets(buckets: Sequence[Bucket], video: bool, owner: str) -> None:
    """TypeError/ValueError unless `buckets` is non-empty and all are video (with frames) or all images."""
    if not buckets:
        raise ValueError(f"{owner}: buckets must not be empty")
    for bucket in buckets:
        if not isinstance(bucket, Bucket):
            raise TypeError(f"{owner}: a bucket must be a Bucket, got {type(bucket).__name__}")
        if (bucket.frames is not None) != video:
            kind = "video buckets need a frame count" if video else "image buckets have no frame count"
            raise ValueError(f"{owner}: {kind}, got bucket {bucket}")


def nearest_buckets(aspects: Sequence[float], buckets: Sequence[Bucket]) -> list[int]:
    """For each item aspect ratio (width / height), the index of the bucket with the nearest aspect (in log ratio)."""
    if not buckets:
        raise ValueError("buckets must not be empty")
    log_bucket = torch.tensor([math.log(b.aspect) for b in buckets])
    log_items = torch.tensor([math.log(a) for a in aspects], dtype=log_bucket.dtype)
    return (log_items[:, None] - log_bucket[None, :]).abs().argmin(dim=1).tolist()


class BucketBatchSampler(Sampler[list[tuple[int, Bucket]]]):
    """Batches of `(index, bucket)` keys; every key of a batch has the same bucket.

    Each epoch (`set_epoch`) the items are shuffled by a generator seeded from (seed, epoch),
    cut into full batches per bucket, and the batches shuffled across buckets.

    Args:
        num_items, buckets, batch_size: dataset length, the sizes to train at, keys per batch.
        item_buckets: the bucket index of every item (see `nearest_buckets`); None draws a
            bucket per batch, uniformly, for datasets that render at any size.
        seed: base seed of the shuffles.
        shuffle: False keeps the item order (and draws no buckets at random: round-robin).
        num_replicas, rank: data-parallel sharding: every process computes the same epoch and
            takes every `num_replicas`-th batch from `rank` on, the same count each.
    """

    def __init__(
        self,
        num_items: int,
        buckets: Sequence[Bucket],
        batch_size: int,
        *,
        item_buckets: Sequence[int] | None = None,
        seed: int = 0,
        shuffle: bool = True,
        num_replicas: int = 1,
        rank: int = 0,
    ):
        if not is_int(batch_size) or batch_size <= 0:
            raise ValueError(f"batch_size must be a positive integer, got {batch_size!r}")
        if not buckets:
            raise ValueError("buckets must not be empty")
        if item_buckets is not None and len(item_buckets) != num_items:
            raise ValueError(f"item_buckets must have one entry per item ({num_items}), got {len(item_buckets)}")
        self.num_items, self.buckets, self.batch_size = num_items, list(buckets), batch_size
        self.item_buckets = None if item_buckets is None else torch.as_tensor(item_buckets, dtype=torch.long)
        if not 0 <= rank < num_replicas:
            raise ValueError(f"rank must be in [0, num_replicas), got rank {rank} of {num_replicas}")
        self.seed, self.shuffle, self.num_replicas, self.rank = seed, shuffle, num_replicas, rank
        self.epoch, self.start = 0, 0
        if len(self) == 0:
            raise ValueError(
                f"buckets {[str(b) for b in self.buckets]} hold too few full batches of {batch_size} items "
                f"for {num_replicas} process(es) (dataset of {num_items} items): lower batch_size or add data"
            )

    def set_epoch(self, epoch: int, start: int = 0) -> None:
        """Select the epoch to iterate, skipping its first `start` batches of this process (for resuming)."""
        self.epoch, self.start = epoch, start

    def _batches(self) -> list[tuple[torch.Tensor, int]]:
        generator = torch.Generator().manual_seed(mix_seed(self.seed, self.epoch))
        order = torch.randperm(self.num_items, generator=generator) if self.shuffle else torch.arange(self.num_items)
        if self.item_buckets is None:
            chunks = list(order[: len(order) // self.batch_size * self.batch_size].split(self.batch_size))
            if self.shuffle:
                picks = torch.randint(len(self.buckets), (len(chunks),), generator=generator).tolist()
            else:
                picks = [i % len(self.buckets) for i in range(len(chunks))]
            return list(zip(chunks, picks, strict=True))
        batches = []
        for bucket in range(len(self.buckets)):
            members = order[self.item_buckets[order] == bucket]
            full = len(members) // self.batch_size * self.batch_size
            batches += [(chunk, bucket) for chunk in members[:full].split(self.batch_size)]
        if self.shuffle:
            batches = [batches[i] for i in torch.randperm(len(batches), generator=generator).tolist()]
        return batches

    def __iter__(self) -> Iterator[list[tuple[int, Bucket]]]:
        mine = self._batches()[self.rank :: self.num_replicas][: len(self)]
        for chunk, bucket in mine[self.start :]:
            yield [(index, self.buckets[bucket]) for index in chunk.tolist()]

    def __len__(self) -> int:
        """Batches per epoch for this process (before any `start` skip)."""
        if self.item_buckets is None:
            total = self.num_items // self.batch_size
        else:
            counts = torch.bincount(self.item_buckets, minlength=len(self.buckets))
            total = int((counts // self.batch_size).sum())
        return total // self.num_replicas

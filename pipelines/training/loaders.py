"""The training data of a config: dataset, bucket batches sharded across processes, DataLoader."""

from __future__ import annotations

from torch.utils.data import DataLoader, Dataset

from ..data.buckets import BucketBatchSampler, nearest_buckets
from ..data.folders import ImageFolderDataset, VideoFolderDataset
from ..data.photographs import PhotographsDataset
from ..data.procedural import MovingShapesDataset, ShapesDataset, TexturesDataset
from ..data.scenes import SceneConfig
from ..evaluation.run_calibration import check_training_data
from .config import TrainConfig


def build_dataset(config: TrainConfig) -> Dataset:
    """The dataset `config.data` names, checked against every training bucket.

    Folders are scanned here, so a missing, empty or unreadable folder fails before training.
    """
    buckets = config.buckets
    scenes = SceneConfig(rotation=config.scene_rotation)
    if config.data == "shapes":
        dataset = ShapesDataset(config.dataset_size, config.seed, buckets[0], scenes)
    elif config.data == "textures":
        dataset = TexturesDataset(config.dataset_size, config.seed, buckets[0])
    elif config.data == "photographs":
        dataset = PhotographsDataset(config.dataset_size, config.seed, buckets[0])
    elif config.data == "moving_shapes":
        dataset = MovingShapesDataset(config.dataset_size, config.seed, buckets[0], scenes)
    elif config.data == "image_folder":
        dataset = ImageFolderDataset(config.data_dir, buckets[0], random_flip=config.random_flip)
    elif config.data == "video_folder":
        dataset = VideoFolderDataset(config.data_dir, buckets[0], random_flip=config.random_flip)
    else:
        raise ValueError(f"data: unknown kind {config.data!r}")
    dataset.check_buckets(buckets)
    if config.calibrate_scales:  # the calibration at the end needs images large enough
        check_training_data(dataset, config)
    return dataset


def build_loader(
    config: TrainConfig, dataset: Dataset, num_processes: int = 1, process_index: int = 0
) -> tuple[DataLoader, BucketBatchSampler]:
    """A DataLoader of this process's share of the batches, and its sampler (for `set_epoch`).

    Folder items go to the bucket nearest their aspect; procedural items get a bucket per batch.
    """
    buckets = config.buckets
    aspects = getattr(dataset, "aspects", None)
    item_buckets = nearest_buckets(aspects, buckets) if aspects is not None and len(buckets) > 1 else None
    sampler = BucketBatchSampler(
        len(dataset),
        buckets,
        config.batch_size,
        item_buckets=item_buckets,
        seed=config.seed,
        num_replicas=num_processes,
        rank=process_index,
    )
    loader = DataLoader(
        dataset,
        batch_sampler=sampler,
        num_workers=config.num_workers,
        persistent_workers=config.num_workers > 0,
    )
    return loader, sampler

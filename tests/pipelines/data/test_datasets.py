"""Datasets: procedural and folder items keyed by (index, bucket), in [-1, 1], bad folders fail early."""

from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image
from torch.utils.data import DataLoader

from axialrope.pipelines.data.buckets import Bucket, BucketBatchSampler, nearest_buckets
from axialrope.pipelines.data.folders import ImageFolderDataset, VideoFolderDataset, fit_to_bucket
from axialrope.pipelines.data.procedural import MovingShapesDataset, ShapesDataset, TexturesDataset


def _save_image(path: Path, height: int, width: int, value: int = 128) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    pixels = np.full((height, width, 3), value, dtype=np.uint8)
    pixels[:, : width // 2, 0] = 255  # left half red: shows flips and crops
    Image.fromarray(pixels).save(path)


# --- buckets -------------------------------------------------------------------------------


def test_bucket_parsing():
    assert Bucket.parse("32") == Bucket(32, 32)
    assert Bucket.parse("32x48") == Bucket(32, 48)
    assert Bucket.parse("8x32x48") == Bucket(32, 48, frames=8)
    assert Bucket.parse("16", frames=4) == Bucket(16, 16, frames=4)
    for bad in ("", "32x", "a", "0x16", "1x2x3x4"):
        with pytest.raises(ValueError, match="resolution|bucket"):
            Bucket.parse(bad)


def test_every_batch_comes_from_one_bucket_and_epochs_are_reproducible():
    buckets = [Bucket(16, 16), Bucket(16, 32), Bucket(32, 16)]
    sampler = BucketBatchSampler(100, buckets, 8, seed=3)
    batches = list(sampler)
    assert len(batches) == len(sampler) == 12
    assert all(len({bucket for _, bucket in batch}) == 1 for batch in batches)
    assert len({bucket for batch in batches for _, bucket in batch}) == 3
    assert batches == list(sampler)
    sampler.set_epoch(1)
    assert list(sampler) != batches


def test_items_with_an_aspect_go_to_the_nearest_bucket():
    buckets = [Bucket(32, 32), Bucket(32, 64)]
    assert nearest_buckets([1.0, 2.2, 1.3, 1.5], buckets) == [0, 1, 0, 1]
    item_buckets = [0] * 10 + [1] * 6
    sampler = BucketBatchSampler(16, buckets, 4, item_buckets=item_buckets)
    for batch in sampler:
        assert all(buckets[item_buckets[i]] == bucket for i, bucket in batch)
    assert len(sampler) == 2 + 1  # full batches only


def test_processes_get_disjoint_equal_shares_and_resume_skips_batches():
    shares = [list(BucketBatchSampler(50, [Bucket(8, 8)], 4, num_replicas=2, rank=r)) for r in range(2)]
    assert len(shares[0]) == len(shares[1]) == 6
    seen = [i for share in shares for batch in share for i, _ in batch]
    assert len(seen) == len(set(seen))
    sampler = BucketBatchSampler(50, [Bucket(8, 8)], 4, num_replicas=2, rank=1)
    sampler.set_epoch(0, start=4)
    assert list(sampler) == shares[1][4:]


def test_sampler_bad_inputs():
    with pytest.raises(ValueError, match="batch_size"):
        BucketBatchSampler(10, [Bucket(8, 8)], 0)
    with pytest.raises(ValueError, match="lower batch_size"):
        BucketBatchSampler(3, [Bucket(8, 8)], 4)
    with pytest.raises(ValueError, match="rank"):
        BucketBatchSampler(10, [Bucket(8, 8)], 2, num_replicas=2, rank=2)


# --- procedural datasets ---------------------------------------------------------------------


def test_shapes_dataset_items_and_batched_rendering_agree():
    data = ShapesDataset(num_items=50, seed=1)
    item = data[4]
    assert item["pixel_values"].shape == (3, 32, 32) and item["class_labels"].dtype == torch.long
    assert -1 <= item["pixel_values"].min() and item["pixel_values"].max() <= 1
    loader = DataLoader(data, batch_sampler=BucketBatchSampler(50, [Bucket(16, 24), Bucket(24, 16)], 5))
    batch = next(iter(loader))
    assert batch["pixel_values"].shape[0] == 5 and batch["pixel_values"].shape[2:] in ((16, 24), (24, 16))
    key = next(iter(loader.batch_sampler))[2]
    assert torch.equal(data[key]["pixel_values"], batch["pixel_values"][2])


def test_moving_shapes_dataset_first_frame_is_the_shapes_image():
    video = MovingShapesDataset(num_items=10, seed=2)[(3, Bucket(16, 16, frames=6))]["pixel_values"]
    image = ShapesDataset(num_items=10, seed=2)[(3, Bucket(16, 16))]["pixel_values"]
    assert video.shape == (3, 6, 16, 16)
    assert torch.equal(video[:, 0], image)


def test_textures_dataset_items_are_textures_of_their_family_at_the_bucket_size():
    from axialrope.pipelines.data.textures import TEXTURE_KINDS, render_textures, sample_textures

    data = TexturesDataset(num_items=20, seed=4)
    assert data.num_classes == 4 and data.class_names == TEXTURE_KINDS
    items = data.__getitems__([(2, Bucket(16, 24)), 7])
    assert items[0]["pixel_values"].shape == (3, 16, 24) and items[1]["pixel_values"].shape == (3, 32, 32)
    expected = render_textures(sample_textures(4, [2]), 16, 24)[0] * 2 - 1
    assert torch.equal(items[0]["pixel_values"], expected)
    assert items[0]["class_labels"] == sample_textures(4, [2]).labels[0]
    with pytest.raises(ValueError, match="frame count"):
        data[(0, Bucket(8, 8, frames=2))]


def test_a_training_config_sets_the_rotation_of_its_procedural_scenes():
    from axialrope.pipelines.training.config import TrainConfig
    from axialrope.pipelines.training.loaders import build_dataset

    for data, resolution in (("shapes", "16"), ("moving_shapes", "4x16x16")):
        dataset = build_dataset(TrainConfig(data=data, resolution=[resolution], scene_rotation=0.5))
        assert dataset.scene_config.rotation == 0.5
    assert build_dataset(TrainConfig(resolution=["16"])).scene_config.rotation == 0.0  # upright by default


def test_procedural_bad_keys():
    with pytest.raises(IndexError, match="out of range"):
        ShapesDataset(num_items=5)[5]
    with pytest.raises(ValueError, match="frame count"):
        ShapesDataset()[(0, Bucket(8, 8, frames=2))]
    with pytest.raises(ValueError, match="frame count"):
        MovingShapesDataset()[(0, Bucket(8, 8))]
    with pytest.raises(ValueError, match="num_items"):
        ShapesDataset(num_items=0)


# --- folders ---------------------------------------------------------------------------------


def test_fit_to_bucket_centre_crops_to_the_aspect_then_resizes():
    pixels = torch.zeros(3, 40, 80, dtype=torch.uint8)
    pixels[:, :, 20:60] = 255  # the middle half is white
    out = fit_to_bucket(pixels, 16, 16)  # crop the middle 40 x 40 (all white), resize to 16 x 16
    assert out.shape == (3, 16, 16) and out.dtype == torch.uint8
    assert (out[:, :, 1:-1] == 255).all()


def test_image_folder_with_classes(tmp_path):
    for name, count in (("cats", 3), ("dogs", 2)):
        for i in range(count):
            _save_image(tmp_path / name / f"{i}.png", 20, 30)
    data = ImageFolderDataset(tmp_path, default_bucket=Bucket(16, 16))
    assert len(data) == 5 and data.num_classes == 2 and data.class_names == ("cats", "dogs")
    assert data[4]["class_labels"] == 1
    sample = data[(0, Bucket(8, 12))]["pixel_values"]
    assert sample.shape == (3, 8, 12) and sample.min() >= -1 and sample.max() <= 1
    assert data.aspects == [1.5] * 5


def test_flat_image_folder_and_flips(tmp_path):
    for i in range(4):
        _save_image(tmp_path / f"{i}.jpg", 16, 16)
    data = ImageFolderDataset(tmp_path, default_bucket=Bucket(16, 16), random_flip=True)
    assert data.num_classes is None and "class_labels" not in data[0]
    torch.manual_seed(0)
    red_left = [bool(data[0]["pixel_values"][0, 8, 2] > 0.9) for _ in range(20)]
    assert 0 < sum(red_left) < 20


def test_video_folder_of_gifs_and_frame_folders(tmp_path):
    frames = [Image.fromarray(np.full((20, 20, 3), 20 * i, dtype=np.uint8)) for i in range(6)]
    frames[0].save(tmp_path / "a.gif", save_all=True, append_images=frames[1:], duration=40)
    for i in range(5):
        _save_image(tmp_path / "clip" / f"{i:03d}.png", 24, 32, value=40 * i)
    data = VideoFolderDataset(tmp_path, default_bucket=Bucket(16, 16, frames=4))
    assert len(data) == 2 and data.frame_counts == [6, 5]
    clip = data[1]["pixel_values"]
    assert clip.shape == (3, 4, 16, 16)
    # consecutive frames of the folder: the blue channel rises by 40 / 255 per frame
    steps = clip[2, 1:, 0, -1] - clip[2, :-1, 0, -1]
    assert torch.allclose(steps, torch.full_like(steps, 2 * 40 / 255), atol=0.02)
    with pytest.raises(ValueError, match="has only 5"):
        data.check_buckets([Bucket(16, 16, frames=6)])


def test_missing_empty_and_unreadable_folders_fail_at_construction(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        ImageFolderDataset(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="holds no images"):
        ImageFolderDataset(tmp_path / "empty")
    with pytest.raises(ValueError, match="holds no videos"):
        VideoFolderDataset(tmp_path / "empty")
    (tmp_path / "movies").mkdir()
    (tmp_path / "movies" / "x.mp4").write_bytes(b"\0" * 16)
    with pytest.raises(ValueError, match="x.mp4"):  # unreadable with PyAV, undecodable without it
        VideoFolderDataset(tmp_path / "movies")
    _save_image(tmp_path / "bad" / "good.png", 8, 8)
    (tmp_path / "bad" / "broken.png").write_bytes(b"not a png")
    with pytest.raises(ValueError, match="broken.png"):
        ImageFolderDataset(tmp_path / "bad")

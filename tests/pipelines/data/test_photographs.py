"""Crops of scikit-image's photographs: windows at a fixed pixel scale, deterministic, held out by region."""

import sys

import pytest
import torch

from axialrope.pipelines.data import photographs
from axialrope.pipelines.data.buckets import Bucket
from axialrope.pipelines.data.photographs import (
    MAX_SIDE,
    PHOTOGRAPHS,
    PhotographsDataset,
    photograph,
    region,
    render_crops,
    sample_crops,
)


def test_a_crop_is_the_same_alone_and_in_a_batch_and_on_every_call():
    alone = render_crops(sample_crops(7, [5]), 24, 24)
    in_batch = render_crops(sample_crops(7, [3, 5, 9]), 24, 24)[1:2]
    assert torch.equal(alone, in_batch)
    assert torch.equal(alone, render_crops(sample_crops(7, [5]), 24, 24))


def test_other_seeds_and_indices_give_other_crops():
    a = render_crops(sample_crops(0, range(16)), 32, 32)
    b = render_crops(sample_crops(1, range(16)), 32, 32)
    assert (a - b).abs().mean() > 0.05
    assert (a[0] - a[1]).abs().mean() > 0.02


def test_a_larger_window_extends_a_smaller_one_at_the_same_pixel_scale():
    crops = sample_crops(3, range(40))
    small = render_crops(crops, 32, 32)
    large = render_crops(crops, MAX_SIDE, 64)
    assert large.shape == (40, 3, MAX_SIDE, 64) and large.min() >= 0 and large.max() <= 1
    assert torch.equal(large[:, :, :32, :32], small)  # the same photograph, not a zoom


def test_every_photograph_is_drawn_and_is_a_natural_rgb_picture():
    crops = sample_crops(0, range(400))
    counts = torch.bincount(crops.labels, minlength=len(PHOTOGRAPHS))
    assert (counts > 15).all()  # about 36 each
    for index in range(len(PHOTOGRAPHS)):
        pixels = photograph(index)
        assert pixels.shape[0] == 3 and min(pixels.shape[1:]) >= MAX_SIDE and pixels.std() > 0.05


@pytest.mark.parametrize("seed", [0, 1, 12345])
def test_held_out_windows_never_share_a_pixel_with_training_windows(seed):
    for split in ("train", "held_out"):
        crops = sample_crops(seed, range(300), split)
        for photo, (y, x) in zip(crops.photo.tolist(), crops.origin.tolist(), strict=True):
            first, width = region(photo, split)
            assert first <= x and x + MAX_SIDE <= first + width  # even the largest window stays inside
            assert 0 <= y and y + MAX_SIDE <= photograph(photo).shape[1]
    for index in range(len(PHOTOGRAPHS)):
        train_first, train_width = region(index, "train")
        held_first, held_width = region(index, "held_out")
        assert train_first + train_width <= held_first and held_first + held_width == photograph(index).shape[2]


def test_the_dataset_serves_pixels_in_minus_one_to_one_with_the_photograph_as_label():
    dataset = PhotographsDataset(num_items=10, seed=2, default_bucket=Bucket(16, 16))
    items = dataset.__getitems__([0, (1, Bucket(32, 48))])
    assert items[0]["pixel_values"].shape == (3, 16, 16) and items[1]["pixel_values"].shape == (3, 32, 48)
    assert items[1]["pixel_values"].min() >= -1 and items[1]["pixel_values"].max() <= 1
    assert int(items[0]["class_labels"]) == int(sample_crops(2, [0]).labels[0])
    assert dataset.num_classes == len(PHOTOGRAPHS)


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: render_crops(sample_crops(0, [0]), MAX_SIDE + 1, 8), "at most MAX_SIDE"),
        (lambda: sample_crops(0, [0], "test"), "split must be one of"),
        (lambda: PhotographsDataset(split="val"), "split must be one of"),
        (lambda: PhotographsDataset(default_bucket=Bucket(128, 128)), "at most 96"),
        (lambda: sample_crops(-1, [0]), "seed must be"),
    ],
)
def test_bad_requests_name_what_was_expected(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_without_scikit_image_the_error_names_the_extra_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "skimage", None)  # makes `from skimage import data` raise ImportError
    photographs.photograph.cache_clear()
    try:
        with pytest.raises(ImportError, match=r"pip install axialrope\[photos\]"):
            PhotographsDataset()
        with pytest.raises(ImportError, match=r"pip install axialrope\[photos\]"):
            photograph(0)
    finally:
        photographs.photograph.cache_clear()

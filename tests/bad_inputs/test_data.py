"""Bad inputs of the data: folders of images and videos, as a dataset and through `axialrope train`."""

import io
from pathlib import Path

import pytest
from PIL import Image

from axialrope.pipelines.data.buckets import Bucket
from axialrope.pipelines.data.folders import ImageFolderDataset, VideoFolderDataset
from axialrope.pipelines.training.config import TrainConfig
from axialrope.pipelines.training.loop import train


def train_config(tmp: Path, **overrides) -> TrainConfig:
    return TrainConfig.from_dict({"resolution": ["16"], "output_dir": str(tmp / "run"), **overrides})


def empty_class(tmp: Path) -> Path:
    (tmp / "data" / "circle").mkdir(parents=True)
    (tmp / "data" / "empty").mkdir()
    Image.new("RGB", (8, 8)).save(tmp / "data" / "circle" / "0.png")
    return tmp / "data"


def images(tmp: Path, *odd: tuple[str, bytes]) -> Path:
    """tmp/data: four good 16x16 PNGs and the `odd` (name, bytes) files."""
    folder = tmp / "data"
    folder.mkdir()
    for i in range(4):
        Image.new("RGB", (16, 16), (60 * i, 90, 200)).save(folder / f"{i}.png")
    for name, data in odd:
        (folder / name).write_bytes(data)
    return folder


def truncated_png() -> bytes:
    """A PNG cut short in its pixel data: its header reads, its pixels do not."""
    buffer = io.BytesIO()
    Image.effect_noise((64, 64), 50).convert("RGB").save(buffer, format="PNG")
    return buffer.getvalue()[: len(buffer.getvalue()) * 2 // 3]


def folder_run(tmp: Path, folder: Path, *extra: str) -> list[str]:
    return ["train", "--data", "image_folder", "--data-dir", str(folder), "--resolution", "16", "--output-dir",
            str(tmp / "run"), *extra]


# (id, make(kit) -> the call, error type, a word of the message)
CASES = [
    ("empty-class-folder",
     lambda k: (d := empty_class(k.tmp), lambda: ImageFolderDataset(d))[-1], ValueError, "'empty'"),
    ("train-empty-class-folder",
     lambda k: (d := empty_class(k.tmp), lambda: train(train_config(k.tmp, data="image_folder", data_dir=str(d))))[-1],
     ValueError, "class folder"),
    ("truncated-png",
     lambda k: (d := images(k.tmp, ("cut.png", truncated_png())), lambda: ImageFolderDataset(d))[-1],
     ValueError, "cut.png"),
    ("image-of-1-by-1000000-pixels",
     lambda k: (d := images(k.tmp, ("line.png", k.png(1, 1_000_000, "1"))),
                lambda: ImageFolderDataset(d).check_buckets([Bucket(16, 16)]))[-1], ValueError, "line.png"),
    ("image-past-the-decompression-bomb-limit",
     lambda k: (d := images(k.tmp, ("bomb.png", k.png(9500, 9500, "1"))), lambda: ImageFolderDataset(d))[-1],
     ValueError, "decompression bomb"),
    ("frame-folder-with-a-truncated-frame",
     lambda k: (d := images(k.tmp), (d / "clip").mkdir(), *[(d / "clip" / f"{i}.png").write_bytes(k.png(8, 8))
                                                               for i in range(3)],
                (d / "clip" / "3.png").write_bytes(truncated_png()), lambda: VideoFolderDataset(d))[-1],
     ValueError, "3.png"),
]


# pytest.param(make(kit) -> argv, a word of the message, id=...)
CLI_CASES = [
    pytest.param(lambda k: folder_run(k.tmp, images(k.tmp, ("cut.png", truncated_png()))), "cut.png",
                 id="train-truncated-png"),
    pytest.param(lambda k: folder_run(k.tmp, images(k.tmp, ("line.png", k.png(1, 1_000_000, "1")))), "aspect",
                 id="train-image-of-1-by-1000000-pixels"),
    pytest.param(lambda k: folder_run(k.tmp, k.tmp / "missing"), "does not exist", id="train-missing-data-folder"),
    pytest.param(lambda k: folder_run(k.tmp, images(k.tmp), "--batch-size", "8"), "lower batch_size",
                 id="train-batch-larger-than-the-data"),
]


@pytest.mark.parametrize("make, word", CLI_CASES)
def test_a_bad_command_line_is_a_one_line_usage_error_before_any_output(expect_usage_error, make, word):
    expect_usage_error(make, word)


# the hostile sizes, each in a process of its own under `ulimit -v 8000000`: pytest.param(make(kit) -> argv, word)
HOSTILE_SIZES = [
    pytest.param(lambda k: folder_run(k.tmp, images(k.tmp, ("line.png", k.png(1, 1_000_000, "1")))), "aspect",
                 id="png-of-1-by-1000000-pixels"),
    pytest.param(lambda k: folder_run(k.tmp, images(k.tmp, ("bomb.png", k.png(9500, 9500, "1")))), "decompression bomb",
                 id="png-past-the-decompression-bomb-limit"),
]


@pytest.mark.slow
@pytest.mark.parametrize("make, word", HOSTILE_SIZES)
def test_a_hostile_size_is_refused_before_work_under_ulimit(expect_refused_under_ulimit, make, word):
    expect_refused_under_ulimit(make, word)


@pytest.mark.parametrize("make, error, word", [pytest.param(*case[1:4], id=case[0], marks=case[4:]) for case in CASES])
def test_a_bad_input_raises_a_clear_error_and_writes_nothing(expect_clear_error, make, error, word):
    expect_clear_error(make, error, word)

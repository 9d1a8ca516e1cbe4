"""Bad inputs of the data: folders of images and videos, as a dataset and through `axialrope train`."""

import io
from pathlib import Path

import numpy as np
import pytest
import torch
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


def classes(tmp: Path, *names: str) -> Path:
    """tmp/data: a class folder of one 16x16 PNG for each name (hidden ones included)."""
    for name in names:
        (tmp / "data" / name).mkdir(parents=True)
        Image.new("RGB", (16, 16), (200, 90, 60)).save(tmp / "data" / name / "0.png")
    return tmp / "data"


def link(path: Path, target: Path) -> Path:
    path.symlink_to(target, target_is_directory=target.is_dir())
    return path.parent


def grey_16_bit(tmp: Path) -> Path:
    """tmp/data: one 16-bit grey PNG at half scale."""
    (tmp / "data").mkdir()
    Image.fromarray(np.full((8, 8), 32768, dtype=np.uint16)).save(tmp / "data" / "grey16.png")
    return tmp / "data"


def turned_jpeg(tmp: Path) -> Path:
    """tmp/data: a JPEG stored 16 wide and 8 high, red on its left, whose EXIF orientation (6: turn 90 degrees
    clockwise to show) shows it 8 wide and 16 high, red on top."""
    (tmp / "data").mkdir()
    pixels = np.zeros((8, 16, 3), dtype=np.uint8)
    pixels[:, :8, 0] = 255
    exif = Image.Exif()
    exif[0x0112] = 6
    Image.fromarray(pixels).save(tmp / "data" / "turned.jpg", exif=exif, quality=100)
    return tmp / "data"


def red_on_top(data: ImageFolderDataset) -> bool:
    shown = data[(0, Bucket(16, 8))]["pixel_values"]  # (3, 16, 8)
    return data.sizes == [(8, 16)] and shown[0, :6].mean() > 0.9 and shown[0, 10:].mean() < -0.9


def folder_run(tmp: Path, folder: Path, *extra: str) -> list[str]:
    return [
        "train",
        "--data",
        "image_folder",
        "--data-dir",
        str(folder),
        "--resolution",
        "16",
        "--output-dir",
        str(tmp / "run"),
        *extra,
    ]


# (id, make(kit) -> the call, error type, a word of the message)
CASES = [
    (
        "empty-class-folder",
        lambda k: (d := empty_class(k.tmp), lambda: ImageFolderDataset(d))[-1],
        ValueError,
        "'empty'",
    ),
    (
        "train-empty-class-folder",
        lambda k: (d := empty_class(k.tmp), lambda: train(train_config(k.tmp, data="image_folder", data_dir=str(d))))[
            -1
        ],
        ValueError,
        "class folder",
    ),
    (
        "truncated-png",
        lambda k: (d := images(k.tmp, ("cut.png", truncated_png())), lambda: ImageFolderDataset(d))[-1],
        ValueError,
        "cut.png",
    ),
    (
        "image-of-1-by-1000000-pixels",
        lambda k: (
            d := images(k.tmp, ("line.png", k.png(1, 1_000_000, "1"))),
            lambda: ImageFolderDataset(d).check_buckets([Bucket(16, 16)]),
        )[-1],
        ValueError,
        "line.png",
    ),
    (
        "image-past-the-decompression-bomb-limit",
        lambda k: (d := images(k.tmp, ("bomb.png", k.png(9500, 9500, "1"))), lambda: ImageFolderDataset(d))[-1],
        ValueError,
        "decompression bomb",
    ),
    (
        "loose-image-beside-class-folders",  # flat would drop every class, classes the loose image
        lambda k: (
            d := classes(k.tmp, "cats", "dogs"),
            Image.new("RGB", (16, 16)).save(d / "stray.png"),
            lambda: ImageFolderDataset(d),
        )[-1],
        ValueError,
        "'stray.png'",
    ),
    (
        "image-of-1-by-1-pixel",
        lambda k: (
            d := images(k.tmp, ("dot.png", k.png(1, 1))),
            lambda: ImageFolderDataset(d).check_buckets([Bucket(16, 16)]),
        )[-1],
        ValueError,
        "dot.png",
    ),
    (
        "frame-folder-with-a-truncated-frame",
        lambda k: (
            d := images(k.tmp),
            (d / "clip").mkdir(),
            *[(d / "clip" / f"{i}.png").write_bytes(k.png(8, 8)) for i in range(3)],
            (d / "clip" / "3.png").write_bytes(truncated_png()),
            lambda: VideoFolderDataset(d),
        )[-1],
        ValueError,
        "3.png",
    ),
]


# (id, make(kit) -> the call, holds(its result)): folders read as a photo library reads them
HANDLED = [
    (
        "hidden-folder-is-no-class",
        lambda k: (d := classes(k.tmp, "cats", "dogs", ".ipynb_checkpoints"), lambda: ImageFolderDataset(d))[-1],
        lambda data: data.class_names == ("cats", "dogs") and len(data) == 2,
    ),
    (
        "hidden-file-is-no-image",
        lambda k: (
            d := classes(k.tmp, "cats"),
            (d / "cats" / "._0.png").write_bytes(b"macOS metadata"),
            lambda: ImageFolderDataset(d),
        )[-1],
        lambda data: len(data) == 1,
    ),
    (
        "link-loop-ends",
        lambda k: (
            d := classes(k.tmp, "cats", "dogs"),
            link(d / "cats" / "loop", d / "cats"),
            lambda: ImageFolderDataset(d),
        )[-1],
        lambda data: len(data) == 2,
    ),
    (
        "link-loop-to-the-root-ends",
        lambda k: (d := classes(k.tmp, "cats"), link(d / "cats" / "up", d), lambda: ImageFolderDataset(d))[-1],
        lambda data: data.class_names == ("cats",) and len(data) == 1,
    ),
    (
        "same-file-linked-twice",
        lambda k: (
            d := classes(k.tmp, "cats"),
            link(d / "cats" / "again.png", d / "cats" / "0.png"),
            lambda: ImageFolderDataset(d),
        )[-1],
        lambda data: len(data) == 1,
    ),
    (
        "flat-folder-beside-a-folder-without-images",  # a folder of notes is no class: the images stay flat
        lambda k: (
            d := images(k.tmp),
            (d / "notes").mkdir(),
            (d / "notes" / "a.txt").write_text("x"),
            lambda: ImageFolderDataset(d),
        )[-1],
        lambda data: data.labels is None and len(data) == 4,
    ),
    (
        "image-enlarged-twice",  # 8x8 at 16x16: enlarged, within MAX_ENLARGEMENT
        lambda k: (
            d := images(k.tmp, ("small.png", k.png(8, 8))),
            lambda: (data := ImageFolderDataset(d), data.check_buckets([Bucket(16, 16)]), data)[-1],
        )[-1],
        lambda data: len(data) == 5,
    ),
    (
        "class-folders-named-by-numbers",
        lambda k: (d := classes(k.tmp, "3", "1", "2"), lambda: ImageFolderDataset(d))[-1],
        lambda data: data.class_names == ("1", "2", "3") and data.labels.tolist() == [0, 1, 2],
    ),
    (
        "png-of-16-bit-grey",  # PIL's own conversion clips it to white
        lambda k: (d := grey_16_bit(k.tmp), lambda: ImageFolderDataset(d)[(0, Bucket(8, 8))]["pixel_values"])[-1],
        lambda pixels: torch.allclose(pixels, torch.full_like(pixels, 128 / 255 * 2 - 1), atol=0.01),
    ),
    (
        "jpeg-turned-by-its-exif-orientation",
        lambda k: (d := turned_jpeg(k.tmp), lambda: ImageFolderDataset(d, default_bucket=Bucket(16, 8)))[-1],
        red_on_top,
    ),
]


@pytest.mark.parametrize("make, holds", [pytest.param(*case[1:], id=case[0]) for case in HANDLED])
def test_an_input_that_must_be_taken_is_taken_right_and_writes_nothing(expect_handled, make, holds):
    expect_handled(make, holds)


# pytest.param(make(kit) -> argv, a word of the message, id=...)
CLI_CASES = [
    pytest.param(
        lambda k: folder_run(k.tmp, images(k.tmp, ("cut.png", truncated_png()))), "cut.png", id="train-truncated-png"
    ),
    pytest.param(
        lambda k: folder_run(k.tmp, images(k.tmp, ("line.png", k.png(1, 1_000_000, "1")))),
        "aspect",
        id="train-image-of-1-by-1000000-pixels",
    ),
    pytest.param(lambda k: folder_run(k.tmp, k.tmp / "missing"), "does not exist", id="train-missing-data-folder"),
    pytest.param(
        lambda k: (
            d := classes(k.tmp, "cats", "dogs"),
            Image.new("RGB", (16, 16)).save(d / "stray.png"),
            folder_run(k.tmp, d),
        )[-1],
        "stray.png",
        id="train-loose-image-beside-class-folders",
    ),
    pytest.param(
        lambda k: folder_run(k.tmp, images(k.tmp, ("dot.png", k.png(1, 1)))), "dot.png", id="train-image-of-1-by-1"
    ),
    pytest.param(
        lambda k: folder_run(k.tmp, images(k.tmp), "--output-dir", str(k.tmp / "data" / "run")),
        "inside data_dir",
        id="train-output-dir-inside-the-data",
    ),
    pytest.param(
        lambda k: folder_run(k.tmp, images(k.tmp), "--batch-size", "8"),
        "lower batch_size",
        id="train-batch-larger-than-the-data",
    ),
]


@pytest.mark.parametrize("make, word", CLI_CASES)
def test_a_bad_command_line_is_a_one_line_usage_error_before_any_output(expect_usage_error, make, word):
    expect_usage_error(make, word)


# the hostile sizes, each in a process of its own under `ulimit -v 8000000`: pytest.param(make(kit) -> argv, word)
HOSTILE_SIZES = [
    pytest.param(
        lambda k: folder_run(k.tmp, images(k.tmp, ("line.png", k.png(1, 1_000_000, "1")))),
        "aspect",
        id="png-of-1-by-1000000-pixels",
    ),
    pytest.param(
        lambda k: folder_run(k.tmp, images(k.tmp, ("bomb.png", k.png(9500, 9500, "1")))),
        "decompression bomb",
        id="png-past-the-decompression-bomb-limit",
    ),
]


@pytest.mark.slow
@pytest.mark.parametrize("make, word", HOSTILE_SIZES)
def test_a_hostile_size_is_refused_before_work_under_ulimit(expect_refused_under_ulimit, make, word):
    expect_refused_under_ulimit(make, word)


@pytest.mark.parametrize("make, error, word", [pytest.param(*case[1:4], id=case[0], marks=case[4:]) for case in CASES])
def test_a_bad_input_raises_a_clear_error_and_writes_nothing(expect_clear_error, make, error, word):
    expect_clear_error(make, error, word)

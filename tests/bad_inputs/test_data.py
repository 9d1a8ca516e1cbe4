"""Bad inputs of the data: folders of images and videos, as a dataset and through `axialrope train`."""

from pathlib import Path

import pytest
from PIL import Image

from axialrope.pipelines.data.folders import ImageFolderDataset
from axialrope.pipelines.training.config import TrainConfig
from axialrope.pipelines.training.loop import train


def train_config(tmp: Path, **overrides) -> TrainConfig:
    return TrainConfig.from_dict({"resolution": ["16"], "output_dir": str(tmp / "run"), **overrides})


def empty_class(tmp: Path) -> Path:
    (tmp / "data" / "circle").mkdir(parents=True)
    (tmp / "data" / "empty").mkdir()
    Image.new("RGB", (8, 8)).save(tmp / "data" / "circle" / "0.png")
    return tmp / "data"


# (id, make(kit) -> the call, error type, a word of the message)
CASES = [
    ("empty-class-folder",
     lambda k: (d := empty_class(k.tmp), lambda: ImageFolderDataset(d))[-1], ValueError, "'empty'"),
    ("train-empty-class-folder",
     lambda k: (d := empty_class(k.tmp), lambda: train(train_config(k.tmp, data="image_folder", data_dir=str(d))))[-1],
     ValueError, "class folder"),
]


@pytest.mark.parametrize("make, error, word", [pytest.param(*case[1:4], id=case[0], marks=case[4:]) for case in CASES])
def test_a_bad_input_raises_a_clear_error_and_writes_nothing(expect_clear_error, make, error, word):
    expect_clear_error(make, error, word)

"""The memory estimate of sampling: grows with the size, and the size it suggests fits."""

import re

import pytest

from axialrope.models import create_dit
from axialrope.pipelines import memory


@pytest.fixture(scope="module")
def model():
    return create_dit("tiny", sample_size=16, patch_size=2, in_channels=3, num_classes=2)


def test_the_estimate_grows_with_tokens_batch_and_guidance(model):
    one = memory.sampling_bytes(model, 1, (64, 64), guidance=False)
    assert memory.sampling_bytes(model, 1, (128, 128), False) > 3 * one
    assert memory.sampling_bytes(model, 2, (64, 64), False) > 1.5 * one
    assert memory.sampling_bytes(model, 1, (64, 64), True) > 1.5 * one


def test_a_size_that_does_not_fit_is_refused_with_one_that_does(model, monkeypatch):
    budget = memory.sampling_bytes(model, 4, (256, 128), True)
    monkeypatch.setattr(memory, "available_bytes", lambda device: int(budget / memory.HEADROOM) + 1)
    memory.check_sampling_memory(model, 4, (256, 128), True, "cpu")  # fits: no error
    with pytest.raises(ValueError, match=r"--height 2\d\d --width 1\d\d") as error:
        memory.check_sampling_memory(model, 4, (512, 256), True, "cpu", "--height/--width")
    height, width = map(int, re.search(r"--height (\d+) --width (\d+)", str(error.value)).groups())
    assert height % 2 == width % 2 == 0 and 250 <= height <= 256 and 124 <= width <= 128  # the aspect, whole patches
    assert memory.sampling_bytes(model, 4, (height, width), True) <= budget + 1


def test_an_unknown_amount_of_memory_skips_the_check(model, monkeypatch):
    monkeypatch.setattr(memory, "available_bytes", lambda device: None)
    memory.check_sampling_memory(model, 1, (1 << 16, 1 << 16), False, "cpu")

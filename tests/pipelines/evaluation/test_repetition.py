"""Repetition on constructed cases: a tiled canvas against one object, a looped clip against a continuing one."""

import pytest
import torch

from axialrope.pipelines.evaluation.repetition import clip_repetition, image_repetition, shift_correlations


def disc(side: int, centre: tuple[float, float], radius: float, colour=(0.9, 0.3, 0.2)) -> torch.Tensor:
    """A soft disc on a vertical gradient: (3, side, side) in [0, 1]; centre and radius in pixels."""
    y, x = torch.meshgrid(torch.arange(side) + 0.5, torch.arange(side) + 0.5, indexing="ij")
    inside = torch.sigmoid(2 * (radius - ((y - centre[0]) ** 2 + (x - centre[1]) ** 2).sqrt()))
    background = (0.2 + 0.3 * y / side).expand(3, side, side)
    paint = torch.tensor(colour).view(3, 1, 1)
    return background * (1 - inside) + paint * inside


def test_a_tiled_canvas_repeats_and_one_object_does_not():
    tile = torch.stack([disc(32, (14, 17), 8), disc(32, (18, 12), 10, (0.2, 0.8, 0.4))])  # (2, 3, 32, 32)
    tiled = tile.repeat(1, 1, 2, 2)  # each 64x64 canvas: the same picture four times
    single = torch.stack([disc(64, (28, 34), 16), disc(64, (36, 24), 20, (0.2, 0.8, 0.4))])  # one object, finer
    assert image_repetition(tiled, min_shift=8) > 0.95
    assert image_repetition(single, min_shift=8) < 0.3
    # the measure follows the objects, not the canvas: two copies of one disc sit between the two
    twice = torch.stack([torch.minimum(disc(64, (20, 16), 8), disc(64, (44, 44), 8))])
    assert image_repetition(single, 8) < image_repetition(twice, 8) < image_repetition(tiled, 8)


def test_a_shift_of_zero_correlates_fully_and_the_correlation_is_an_overlap_one():
    images = torch.rand(2, 3, 16, 16, generator=torch.Generator().manual_seed(0))
    correlations = shift_correlations(images)
    assert correlations.shape == (2, 32, 32)
    torch.testing.assert_close(correlations[:, 0, 0], torch.ones(2, dtype=torch.float64))
    # shift (0, 3) by hand: the detail against itself moved 3 pixels right, over the 16 x 13 overlap
    from axialrope.pipelines.evaluation.metrics import _blur

    detail = (images - _blur(images)).double()
    a, b = detail[..., :, :-3], detail[..., :, 3:]
    expected = (a * b).sum(dim=(1, 2, 3)) / (a.pow(2).sum(dim=(1, 2, 3)) * b.pow(2).sum(dim=(1, 2, 3))).sqrt()
    torch.testing.assert_close(correlations[:, 0, 3], expected)


def moving_square(frames: int, loop: int | None, side: int = 16) -> torch.Tensor:
    """A clip (1, 3, t, side, side): a square moving one pixel a frame to the right and down; with `loop`, back
    to its start every `loop` frames."""
    clip = torch.full((1, 3, frames, side, side), 0.1)
    for t in range(frames):
        step = t % loop if loop else t
        clip[0, :, t, 2 + step // 2 : 6 + step // 2, 1 + step : 5 + step] = 0.9
    return clip


def test_a_looped_clip_repeats_and_a_continuing_one_does_not():
    looped, continuing = moving_square(12, loop=4), moving_square(12, loop=None)
    assert clip_repetition(looped, min_lag=3) == pytest.approx(1.0)
    assert clip_repetition(continuing, min_lag=3) < 0.5


@pytest.mark.parametrize(
    "call, word",
    [
        (lambda: image_repetition(torch.rand(1, 3, 16, 16), min_shift=9), "min_shift"),
        (lambda: image_repetition(torch.rand(1, 3, 16, 16), min_shift=0), "min_shift"),
        (lambda: image_repetition(torch.rand(3, 16, 16), min_shift=4), "images"),
        (lambda: clip_repetition(torch.rand(1, 3, 16, 16), min_lag=1), "videos"),
    ],
)
def test_bad_arguments_are_named(call, word):
    with pytest.raises(ValueError, match=word):
        call()

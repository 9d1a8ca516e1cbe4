"""Metrics: SWD is 0 on itself, symmetric, grows with a known shift; repetition finds loops."""

import pytest
import torch

from axialrope.pipelines.data.procedural import MovingShapesDataset
from axialrope.pipelines.evaluation.metrics import (
    laplacian_pyramid,
    repetition_score,
    shape_persistence,
    swd,
    video_swd,
)


def textured(n, size=32, seed=0):
    g = torch.Generator().manual_seed(seed)
    base = torch.rand(n, 3, size // 4, size // 4, generator=g)
    return torch.nn.functional.interpolate(base, size=(size, size), mode="bilinear") + 0.05 * torch.randn(
        n, 3, size, size, generator=g
    )


def test_pyramid_levels_and_reconstruction():
    images = textured(4, 64)
    levels = laplacian_pyramid(images, min_size=16)
    assert [level.shape[-1] for level in levels] == [64, 32, 16]
    # collapsing the pyramid gives the image back
    image = levels[-1]
    for band in reversed(levels[:-1]):
        image = band + torch.nn.functional.interpolate(image, size=band.shape[-2:], mode="bilinear")
    torch.testing.assert_close(image, images, rtol=0, atol=1e-5)


def test_swd_of_a_set_with_itself_is_zero():
    images = textured(16)
    result = swd(images, images)
    assert result.mean == 0 and all(v == 0 for v in result.per_level)


def test_swd_is_symmetric():
    a, b = textured(16, seed=1), textured(16, seed=2)
    assert swd(a, b).mean == pytest.approx(swd(b, a).mean, rel=1e-6)


def test_swd_grows_with_a_known_shift_of_the_distribution():
    real, other_real = textured(32, seed=3), textured(32, seed=4)
    floor = swd(other_real, real).mean
    distances = [
        swd(
            textured(32, seed=4) + 0.5 * torch.randn(32, 3, 32, 32, generator=torch.Generator().manual_seed(9)) * s,
            real,
        ).mean
        for s in (0.25, 0.5, 1.0)
    ]
    assert floor < distances[0] < distances[1] < distances[2]


def test_video_metrics_and_repetition():
    g = torch.Generator().manual_seed(0)
    drifting = torch.cumsum(torch.randn(4, 3, 12, 32, 32, generator=g) * 0.3, dim=2)
    looped = torch.cat((drifting[:, :, :6], drifting[:, :, :6]), dim=2)  # returns to its first frames
    assert repetition_score(looped, min_lag=3) == pytest.approx(1.0)
    assert repetition_score(drifting, min_lag=3) < 0.9
    scores = video_swd(drifting, drifting)
    assert scores == {"frame_swd": 0.0, "motion_swd": 0.0}


def _square_clip(sizes, step=1):
    """(1, 3, t, 24, 24): a white square on a vertical gradient, moving `step` pixels right per frame."""
    clip = torch.linspace(0, 0.3, 24).view(1, 1, 1, 24, 1).expand(1, 3, len(sizes), 24, 24).clone()
    for t, size in enumerate(sizes):
        clip[:, :, t, 8 : 8 + size, 4 + step * t : 4 + step * t + size] = 1.0
    return clip


def test_shape_persistence_tells_moving_shapes_from_changing_ones():
    rigid = _square_clip([6] * 6)
    assert shape_persistence(rigid, lag=5, max_shift=5) == 1.0
    assert shape_persistence(rigid, lag=5, max_shift=2) < 0.5  # moved further than the allowed shift
    growing = _square_clip([3, 4, 5, 6, 7, 8])
    assert shape_persistence(growing, lag=5, max_shift=5) == pytest.approx(9 / 64)
    real = (MovingShapesDataset(8, seed=0)[0]["pixel_values"].unsqueeze(0) + 1) / 2  # moving shapes, 8x32x32
    assert shape_persistence(real, lag=1, max_shift=2) > 0.8


def test_bad_input():
    with pytest.raises(ValueError, match="must have one shape"):
        swd(textured(4), textured(5))
    with pytest.raises(ValueError, match="must be a \\(n, c, h, w\\) tensor"):
        swd(torch.zeros(3, 32, 32), torch.zeros(3, 32, 32))
    with pytest.raises(ValueError, match="min_lag must be in"):
        repetition_score(torch.zeros(1, 3, 4, 8, 8), min_lag=4)
    with pytest.raises(ValueError, match="lag must be in"):
        shape_persistence(torch.zeros(1, 3, 4, 8, 8), lag=0, max_shift=1)
    with pytest.raises(ValueError, match="max_shift must be in"):
        shape_persistence(torch.zeros(1, 3, 4, 8, 8), lag=1, max_shift=4)


def test_detail_swd_leaves_out_the_low_pass_residual():
    real = textured(16, seed=3)
    result = swd(textured(16, seed=4), real)  # 32x32: a band-pass level at 32, the residual at 16
    assert len(result.per_level) == 2 and result.detail == result.per_level[0]
    # other colours per image (a texture's palette) move the residual, not the band-pass levels
    palette = torch.rand(16, 3, 1, 1, generator=torch.Generator().manual_seed(5)) - 0.5
    shifted = swd(textured(16, seed=4) + palette, real)
    assert shifted.per_level[-1] > 2 * result.per_level[-1]
    assert abs(shifted.detail - result.detail) < 0.05 * result.detail

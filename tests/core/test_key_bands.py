"""Untwisting RoPE's per-pair magnitudes of reference keys (`axialrope.frequencies.KeyBands`, arXiv 2602.05013):
s_j(t) = high(t) + (low(t) - high(t)) (j / (n - 1))^beta, high and low linear in the progress 1 - t."""

import numpy as np
import pytest
import torch

from axialrope.frequencies import KeyBands


def written_out(pairs: int, t: float, high: tuple, low: tuple, beta: float) -> np.ndarray:
    """The paper's ramp in float64, its ends moved linearly from (start at t = 1) to (end at t = 0)."""
    progress = 1.0 - t
    h = high[0] + (high[1] - high[0]) * progress
    lo = low[0] + (low[1] - low[0]) * progress
    j = np.arange(pairs, dtype=np.float64)
    return h + (lo - h) * (j / (pairs - 1)) ** beta


@pytest.mark.parametrize("pairs", [2, 3, 28])
@pytest.mark.parametrize("t", [1.0, 0.6, 0.0])
@pytest.mark.parametrize("beta", [1.0, 2.0, 3.5])
def test_pair_scales_are_the_ramp_written_out(pairs, t, beta):
    bands = KeyBands(high_start=0.2, high_end=0.9, low_start=1.1, low_end=1.6, beta=beta)
    ours = bands.pair_scales(pairs, t)
    assert ours.dtype == torch.float64 and ours.shape == (pairs,)
    np.testing.assert_allclose(ours.numpy(), written_out(pairs, t, (0.2, 0.9), (1.1, 1.6), beta), rtol=0, atol=1e-15)


def test_the_fastest_pair_takes_high_and_the_slowest_low_at_every_time():
    bands = KeyBands()
    for t in (1.0, 0.5, 0.0):
        high, low = bands.ends(t)
        scales = bands.pair_scales(8, t)
        assert scales[0].item() == high and scales[-1].item() == pytest.approx(low, abs=1e-15)
    assert bands.ends(1.0) == (0.25, 1.0) and bands.ends(0.0) == (0.75, pytest.approx(1.4))
    assert torch.all(bands.pair_scales(28, 0.3).diff() > 0)  # weakest at the fastest pair, rising to the slowest


def test_one_pair_takes_high_and_all_ones_change_nothing():
    assert KeyBands().pair_scales(1, 0.0).tolist() == [0.75]
    ones = KeyBands(1.0, 1.0, 1.0, 1.0)
    assert torch.equal(ones.pair_scales(16, 0.37), torch.ones(16, dtype=torch.float64))


@pytest.mark.parametrize(
    "fields, match",
    [
        ({"high_start": -0.1}, "high_start"),
        ({"low_end": float("nan")}, "low_end"),
        ({"beta": 0.0}, "beta"),
        ({"beta": True}, "beta"),
    ],
)
def test_bad_settings_are_refused(fields, match):
    with pytest.raises(ValueError, match=match):
        KeyBands(**fields)


def test_bad_time_and_pairs_are_refused():
    with pytest.raises(ValueError, match="t must be"):
        KeyBands().pair_scales(4, 1.5)
    with pytest.raises(ValueError, match="pairs must be"):
        KeyBands().pair_scales(0, 0.5)

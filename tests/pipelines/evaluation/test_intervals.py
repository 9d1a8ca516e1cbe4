"""Cells over seeds: the mean with its bootstrap interval, and a best named only beyond the spread."""

import pytest

from axialrope.pipelines.evaluation.intervals import Interval, best_of, seed_interval


def test_the_interval_brackets_the_mean_within_the_seed_values():
    interval = seed_interval([3.0, 5.0, 4.0])
    assert interval.value == pytest.approx(4.0)
    assert 3.0 <= interval.low < interval.value < interval.high <= 5.0
    assert seed_interval([3.0, 5.0, 4.0]) == interval  # seeded: a table is reproducible


def test_more_seeds_narrow_the_interval():
    few = seed_interval([1.0, 2.0, 3.0])
    many = seed_interval([1.0, 2.0, 3.0] * 10)
    assert many.high - many.low < 0.5 * (few.high - few.low)


def test_equal_values_give_a_point():
    assert seed_interval([2.5, 2.5, 2.5]) == Interval(2.5, 2.5, 2.5)


def test_a_best_is_named_only_when_its_interval_clears_the_runner_up():
    clear = {"a": seed_interval([1.0, 1.1, 1.2]), "b": seed_interval([2.0, 2.2, 2.1]), "c": seed_interval([9.0, 9.5])}
    assert best_of(clear) == ("a", True)
    overlapping = {"a": seed_interval([1.0, 2.0, 1.5]), "b": seed_interval([1.8, 1.6, 1.9])}
    assert best_of(overlapping) == ("a", False)
    assert best_of({"only": seed_interval([1.0, 2.0])}) == ("only", True)


def test_bad_input():
    with pytest.raises(ValueError, match="at least 2"):
        seed_interval([1.0])
    with pytest.raises(ValueError, match="confidence"):
        seed_interval([1.0, 2.0], confidence=1.5)

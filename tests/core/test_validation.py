"""The shared argument checks: bools are never numbers, and positive_int names the argument."""

from fractions import Fraction

import numpy as np
import pytest

from axialrope.validation import is_int, is_real, positive_int


def test_is_int_takes_python_ints_only_never_bools():
    assert is_int(0) and is_int(-3) and is_int(10**30)
    for value in (True, False, 1.0, "1", None, np.int64(1)):
        assert not is_int(value), value


def test_is_real_takes_any_real_number_but_bools():
    for value in (0, -2.5, Fraction(1, 3), np.float32(1.5), float("inf")):
        assert is_real(value), value
    for value in (True, 1j, "1.0", None):
        assert not is_real(value), value


def test_positive_int_returns_the_value_or_names_the_argument():
    assert positive_int(7, "depth") == 7
    with pytest.raises(TypeError, match="depth must be an int, got bool"):
        positive_int(True, "depth")
    with pytest.raises(TypeError, match="depth must be an int, got float"):
        positive_int(2.0, "depth")
    with pytest.raises(ValueError, match="depth must be a positive integer, got 0"):
        positive_int(0, "depth")

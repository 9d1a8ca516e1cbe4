"""Argument checks shared by the whole project: one place for "is this a number?".

Python counts `True` as the int 1, so every check of a count, size or scale here refuses
bools explicitly: `depth=True` is a mistake, never a request for one block.

    if not is_int(steps) or steps < 1:
        raise ValueError(f"steps must be a positive int, got {steps!r}")
    depth = positive_int(depth, "depth")
"""

from __future__ import annotations

from numbers import Real


def is_int(value: object) -> bool:
    """True for a Python int that is not a bool."""
    return isinstance(value, int) and not isinstance(value, bool)


def is_real(value: object) -> bool:
    """True for a real number (int, float, Fraction, numpy float ...) that is not a bool."""
    return isinstance(value, Real) and not isinstance(value, bool)


def positive_int(value: int, name: str) -> int:
    """`value` if it is an int > 0; TypeError for a non-int (or a bool), ValueError for one <= 0."""
    if not is_int(value):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value <= 0:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return value

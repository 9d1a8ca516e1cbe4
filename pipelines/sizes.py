"""The largest side and count a command takes, checked before any arithmetic on them.

Sizes and counts reach float arithmetic (memory estimates, scales, schedules) and torch's int64.
A number beyond these bounds is no request any machine can serve, and would end in an OverflowError
instead of the one line naming its flag that every other bad number gets:

    check_side(args.height, "--height")       # pixels (or frames) of one side
    check_count(args.seed, "--seed")          # any other integer setting
"""

from __future__ import annotations

LARGEST_SIDE = 1 << 20  # pixels or frames along one axis: a million, far beyond any picture or clip sampled
LARGEST_COUNT = (1 << 63) - 1  # int64's largest, what torch holds (seeds, steps, counts)


def shown(value: int) -> str:
    """An integer as an error shows it: whole, or for a very long one its first digits and its length."""
    text = str(value)
    return text if len(text) <= 24 else f"{text[:6]}... (a number of {len(text)} digits)"


def check_side(value: int, argument: str) -> int:
    """`value` if it is at most LARGEST_SIDE; ValueError naming `argument` if not."""
    if value > LARGEST_SIDE:
        raise ValueError(f"{argument} must be at most {LARGEST_SIDE} pixels (frames) a side, got {shown(value)}")
    return value


def check_count(value: int, argument: str) -> int:
    """`value` if it is at most LARGEST_COUNT; ValueError naming `argument` if not."""
    if value > LARGEST_COUNT:
        raise ValueError(f"{argument} must be at most {LARGEST_COUNT} (2^63 - 1), got {shown(value)}")
    return value


__all__ = ["LARGEST_COUNT", "LARGEST_SIDE", "check_count", "check_side", "shown"]

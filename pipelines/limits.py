"""Bounds on what an input may hold, that every layer reads: files read whole, pictures, config values, guidance,
fps, and the largest side and count a flag may take.

    text = read_small_file(path, "--config")         # config files and JSON: bytes, not gigabytes
    check_guidance_scale(2.0)                         # ValueError outside [0, MAX_GUIDANCE_SCALE]
    check_side(args.height, "--height")               # pixels (or frames) of one side, at most LARGEST_SIDE

This module sits below data, training, sampling and evaluation and imports nothing of them,
so that each may read the same bound. What fits in memory, which depends on the model and the
machine, is in `memory`.
"""

from __future__ import annotations

import math
from pathlib import Path

from axialrope.validation import is_real

# files read whole into memory: config files, config.json, model_index.json, scheduler configs
MAX_TEXT_FILE_BYTES = 1 << 20
MAX_CONFIG_VALUES = 10_000  # the values a config file may expand to (YAML aliases repeat a value)
MAX_SAFETENSORS_HEADER = 100 << 20  # safetensors' own limit on a header
MAX_IMAGE_PIXELS = 89_478_485  # PIL's decompression-bomb threshold, as an error rather than a warning
MAX_ASPECT_MISMATCH = 16.0  # an image's aspect may differ from its bucket's by at most this factor
# Classifier-free guidance far beyond any useful scale (the bundled models are best near 2, benchmarks/guidance.py)
# only saturates the image, and huge scales overflow float32 into NaN: refused above this.
MAX_GUIDANCE_SCALE = 100.0
# a GIF's frame delay is whole hundredths of a second in 16 bits: above 100 fps it rounds to 0 (players
# then pick their own speed), below 0.0016 it overflows (guidance's bound: MAX_GUIDANCE_SCALE)
MIN_FPS, MAX_FPS = 0.01, 100.0


def read_small_file(path: str | Path, argument: str, limit: int = MAX_TEXT_FILE_BYTES) -> bytes:
    """The bytes of a file that must be small (a config, a JSON file); ValueError naming `argument` if it
    is larger than `limit` or not a regular file (a FIFO would block)."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"{argument}: {str(path)!r} is not a regular file")
    size = path.stat().st_size
    if size > limit:
        raise ValueError(f"{argument}: {str(path)!r} holds {size} bytes; a file of this kind is at most {limit}")
    with path.open("rb") as file:
        return file.read(limit + 1)


def check_guidance_scale(guidance_scale: float) -> None:
    """ValueError unless `guidance_scale` is a real number in [0, MAX_GUIDANCE_SCALE] (1: no guidance; below 1
    pushes towards the unconditional prediction)."""
    if not (is_real(guidance_scale) and math.isfinite(guidance_scale) and 0 <= guidance_scale <= MAX_GUIDANCE_SCALE):
        raise ValueError(
            f"guidance_scale must be a finite number in [0, {MAX_GUIDANCE_SCALE:g}] (1: no guidance), "
            f"got {guidance_scale!r}"
        )


# -- the largest side and count a command takes, checked before any arithmetic on them: beyond these an
# OverflowError (float arithmetic, torch's int64) would replace the one line naming the flag
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


__all__ = [
    "LARGEST_COUNT",
    "LARGEST_SIDE",
    "MAX_ASPECT_MISMATCH",
    "MAX_CONFIG_VALUES",
    "MAX_FPS",
    "MAX_GUIDANCE_SCALE",
    "MAX_IMAGE_PIXELS",
    "MAX_SAFETENSORS_HEADER",
    "MAX_TEXT_FILE_BYTES",
    "MIN_FPS",
    "check_count",
    "check_guidance_scale",
    "check_side",
    "read_small_file",
    "shown",
]

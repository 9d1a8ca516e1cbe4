"""What the sampling benchmarks share: a method as a table row and a pipeline's samples with it (from
`axialrope.pipelines.evaluation.cells`, which `axialrope calibrate` uses too), and the held-out real renders
the samples are measured against (extrapolation.py, shape_recognition.py, guidance.py, video_motion.py).

    samples = generate(pipe, Method("pi", entropy_scaling=True), labels, {"height": 64, "width": 64},
                       steps=12, guidance=2.0, seed=0)                      # (n, 3, 64, 64) in [0, 1]
    real, labels = real_images(12, 64, 64, REAL_SEED)                       # the same kind of scenes, held out
"""

from __future__ import annotations

import math

import torch

from axialrope.pipelines.data.photographs import render_crops, sample_crops
from axialrope.pipelines.data.render import render_images, render_videos
from axialrope.pipelines.data.scenes import SceneConfig, sample_scenes
from axialrope.pipelines.data.textures import render_textures, sample_textures
from axialrope.pipelines.evaluation.cells import Method, generate  # one implementation, shared with calibrate

REAL_SEED, FLOOR_SEED = 1_000_001, 2_000_002  # scene families disjoint from training (seed 0)
IMAGE_KINDS = ("shapes", "textures", "photographs")


def real_images(
    count: int, height: int, width: int, seed: int, kind: str = "shapes", first: int = 0
) -> tuple[torch.Tensor, torch.Tensor]:
    """Items first .. first + count - 1 of a data kind of IMAGE_KINDS: (count, 3, h, w) in [0, 1], and their labels.

    Photographs come from the photographs' held-out region, which no training crop touches.
    """
    indices = range(first, first + count)
    if kind == "shapes":
        scenes = sample_scenes(seed, indices)
        return render_images(scenes, height, width), scenes.labels
    if kind == "photographs":
        crops = sample_crops(seed, indices, "held_out")
        return render_crops(crops, height, width), crops.labels
    if kind != "textures":
        raise ValueError(f"kind must be one of {', '.join(IMAGE_KINDS)}, got {kind!r}")
    textures = sample_textures(seed, indices)
    return render_textures(textures, height, width), textures.labels


def real_videos(
    count: int, frames: int, height: int, width: int, seed: int, first: int = 0
) -> tuple[torch.Tensor, torch.Tensor]:
    """(count, 3, t, h, w) renders in [0, 1] of scenes first .. first + count - 1, and their labels."""
    scenes = sample_scenes(seed, range(first, first + count))
    return render_videos(scenes, frames, height, width), scenes.labels


def fastest_shift(lag: int, height: int, width: int) -> int:
    """Pixels the fastest procedural shape can move along an axis in `lag` frames (shape persistence's max_shift)."""
    return math.ceil(SceneConfig().speed[1] * lag * max(height, width))


__all__ = ["FLOOR_SEED", "REAL_SEED", "Method", "fastest_shift", "generate", "real_images", "real_videos"]

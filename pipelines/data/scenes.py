"""The procedural scene distribution: a few coloured shapes on a gradient background.

A scene is continuous parameters in relative units, independent of any pixel grid, so one
scene renders at any height x width and frame count (`render.py` turns scenes into pixels):
lengths are fractions of the frame's shorter side, a shape's place a fraction of its free
range on each axis (so it lies inside the frame whatever its aspect), velocities fractions of
the frame per frame (a longer video is longer, not slower). Slot 0 holds the main shape:
always present, the largest, painted first; its kind is the class label. Scene i of seed s
comes from its own generator, seeded from (s, i), so it does not depend on its batch, and
the image scene i is the first frame of the moving scene i. See docs/training.md, "Data".
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, fields

import torch

from axialrope.validation import is_int, is_real

# Class label = index of the main shape's kind in this tuple.
SHAPE_KINDS: tuple[str, ...] = ("circle", "triangle", "square", "pentagon", "ring", "cross")


@dataclass(frozen=True)
class SceneConfig:
    """Ranges of the scene distribution (relative units, see the module docstring)."""

    max_shapes: int = 3
    main_radius: tuple[float, float] = (0.2, 0.3)
    other_radius: tuple[float, float] = (0.08, 0.15)
    speed: tuple[float, float] = (0.01, 0.04)  # frame fractions per frame
    background_value: tuple[float, float] = (0.0, 0.35)  # dark backgrounds ...
    shape_value: tuple[float, float] = (0.3, 1.0)  # ... and brighter shapes, for contrast
    # largest rotation of a shape, in turns: 0 upright (angle 0: a vertex or an arm pointing down
    # the image, +y), 1 any angle. Upright by default: with any angle, the small bundled models
    # drew squares, pentagons and crosses as rounded or scattered shapes (docs/training.md, "Bundled models")
    rotation: float = 0.0

    def __post_init__(self):
        if not is_int(self.max_shapes) or self.max_shapes < 1:
            raise ValueError(f"max_shapes must be a positive integer, got {self.max_shapes!r}")
        for name in ("main_radius", "other_radius", "speed", "background_value", "shape_value"):
            low, high = getattr(self, name)
            if not 0 <= low <= high:
                raise ValueError(f"{name} must be a range (low, high) with 0 <= low <= high, got {(low, high)}")
        if not is_real(self.rotation) or not 0 <= self.rotation <= 1:
            raise ValueError(f"rotation must be a number of turns in [0, 1], got {self.rotation!r}")
        for name in ("main_radius", "other_radius"):
            if getattr(self, name)[1] >= 0.5:
                raise ValueError(f"{name} must stay below 0.5 (half the shorter side), got {getattr(self, name)}")

    @property
    def num_uniforms(self) -> int:
        """Uniform numbers drawn per scene: 6 for the background, 1 for the count, 10 per shape."""
        return 7 + 10 * self.max_shapes


@dataclass(frozen=True)
class ShapeScenes:
    """A batch of b scenes with up to k shapes each (k = SceneConfig.max_shapes)."""

    background: torch.Tensor  # (b, 2, 3) RGB at the top and at the bottom edge, in [0, 1]
    kind: torch.Tensor  # (b, k) long, index into SHAPE_KINDS
    place: torch.Tensor  # (b, k, 2) (y, x) fraction of the free range at frame 0, in [0, 1]
    radius: torch.Tensor  # (b, k) fraction of the shorter side
    angle: torch.Tensor  # (b, k) rotation in radians
    colour: torch.Tensor  # (b, k, 3) RGB in [0, 1]
    present: torch.Tensor  # (b, k) bool; slot 0 is always present
    velocity: torch.Tensor  # (b, k, 2) (y, x) frame fractions per frame

    @property
    def labels(self) -> torch.Tensor:
        """(b,) long: the kind of the main (largest) shape."""
        return self.kind[:, 0]

    def __len__(self) -> int:
        return self.kind.shape[0]


def _splitmix64(value: int) -> int:
    """One step of the splitmix64 mixer: spreads nearby seeds over the 64-bit range."""
    value = (value + 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF
    value = ((value ^ (value >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
    value = ((value ^ (value >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
    return value ^ (value >> 31)


def mix_seed(seed: int, index: int) -> int:
    """A 63-bit generator seed for item `index` of base seed `seed` (nearby pairs do not collide)."""
    return _splitmix64(_splitmix64(seed) ^ index) >> 1  # torch seeds must fit in int64


def scene_uniforms(seed: int, indices: Sequence[int], count: int) -> torch.Tensor:
    """(b, count) float64 uniforms in [0, 1), row i drawn from the generator of scene indices[i]."""
    rows = []
    generator = torch.Generator()
    for index in indices:
        generator.manual_seed(mix_seed(seed, index))
        rows.append(torch.rand(count, generator=generator, dtype=torch.float64))
    return torch.stack(rows)


def check_scene_request(seed, indices: Sequence[int] | torch.Tensor) -> list[int]:
    """The indices as a list of ints, or a ValueError naming a bad seed or index."""
    if not is_int(seed) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    indices = [int(i) for i in (indices.tolist() if isinstance(indices, torch.Tensor) else indices)]
    if not indices:
        raise ValueError("indices must name at least one scene")
    if min(indices) < 0:
        raise ValueError(f"indices must be non-negative, got {min(indices)}")
    return indices


def _lerp(u: torch.Tensor, bounds: tuple[float, float]) -> torch.Tensor:
    return bounds[0] + u * (bounds[1] - bounds[0])


def sample_scenes(seed: int, indices: Sequence[int] | torch.Tensor, config: SceneConfig = SceneConfig()) -> ShapeScenes:
    """Scenes number `indices` of the distribution with seed `seed`.

    Args:
        seed: dataset seed (a non-negative integer).
        indices: b non-negative scene numbers.
        config: ranges of the distribution.

    Returns:
        ShapeScenes of b scenes, float32 parameters; the same (seed, index) always gives the same scene.
    """
    indices = check_scene_request(seed, indices)
    k = config.max_shapes
    u = scene_uniforms(seed, indices, config.num_uniforms)
    background, count, per_shape = u[:, :6], u[:, 6], u[:, 7:].reshape(len(indices), k, 10)

    num_shapes = 1 + torch.floor(count * k).long()  # 1 .. k, uniform
    present = torch.arange(k) < num_shapes[:, None]
    radius = torch.cat(
        [_lerp(per_shape[:, :1, 3], config.main_radius), _lerp(per_shape[:, 1:, 3], config.other_radius)], dim=1
    )
    heading = per_shape[:, :, 8] * (2 * math.pi)
    speed = _lerp(per_shape[:, :, 9], config.speed)
    scenes = ShapeScenes(
        background=_lerp(background, config.background_value).reshape(-1, 2, 3),
        kind=torch.floor(per_shape[:, :, 0] * len(SHAPE_KINDS)).long(),
        place=per_shape[:, :, 1:3],
        radius=radius,
        angle=per_shape[:, :, 4] * (2 * math.pi * config.rotation),  # the same draws at every rotation
        colour=_lerp(per_shape[:, :, 5:8], config.shape_value),
        present=present,
        velocity=torch.stack([speed * torch.sin(heading), speed * torch.cos(heading)], dim=-1),
    )
    return ShapeScenes(
        **{
            f.name: value.float() if value.is_floating_point() else value
            for f in fields(ShapeScenes)
            for value in [getattr(scenes, f.name)]
        }
    )

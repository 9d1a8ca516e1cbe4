"""Render procedural scenes (`scenes.py`) into images and videos at any size, vectorised in torch.

Every shape is a signed distance function (negative inside), evaluated at pixel centres
in units of the frame's shorter side and converted to pixels; its coverage is a linear
ramp one pixel wide across the edge, `clamp(0.5 - distance_px, 0, 1)`, which is the area
a straight edge covers of a unit pixel. So edges are anti-aliased at every resolution
and a 96x96 rendering averaged down by 3 matches the 32x32 rendering of the same scene.
Shapes are painted over the background in slot order (the main shape first).
"""

from __future__ import annotations

import math

import torch
from einops import rearrange, repeat

from axialrope.validation import is_int

from .scenes import SHAPE_KINDS, ShapeScenes

_KIND = {name: i for i, name in enumerate(SHAPE_KINDS)}
# Sides of the regular-polygon kinds; the other kinds get a placeholder (their polygon distance is unused).
_POLYGON_SIDES = torch.tensor([{"triangle": 3, "square": 4, "pentagon": 5}.get(name, 4) for name in SHAPE_KINDS])


def check_size(name: str, value) -> int:
    """value, or a ValueError unless it is a positive integer (a size in pixels or frames)."""
    if not is_int(value) or value <= 0:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return value


def _circle(px: torch.Tensor, py: torch.Tensor, r: torch.Tensor) -> torch.Tensor:
    return torch.hypot(px, py) - r


def _regular_polygon(px: torch.Tensor, py: torch.Tensor, r: torch.Tensor, sides: torch.Tensor) -> torch.Tensor:
    """Exact distance to a regular polygon of circumradius r with a vertex on +y (after I. Quilez)."""
    half_sector = math.pi / sides
    # Fold the plane into the sector around +y, mirrored so the point lies on one side of the edge normal.
    folded = torch.remainder(torch.atan2(px, py), 2 * half_sector) - half_sector
    length = torch.hypot(px, py)
    qx = length * torch.cos(folded) - r * torch.cos(half_sector)  # along the edge normal
    qy = length * torch.sin(folded).abs() - r * torch.sin(half_sector)  # along the edge
    qy = qy + torch.clamp(-qy, min=torch.zeros_like(qy), max=r * torch.sin(half_sector))  # clamp to the edge
    return torch.hypot(qx, qy) * torch.sign(qx)


def _box(px: torch.Tensor, py: torch.Tensor, half_x: torch.Tensor, half_y: torch.Tensor) -> torch.Tensor:
    qx, qy = px.abs() - half_x, py.abs() - half_y
    return torch.hypot(qx.clamp(min=0), qy.clamp(min=0)) + torch.maximum(qx, qy).clamp(max=0)


def _shape_distance(px: torch.Tensor, py: torch.Tensor, r: torch.Tensor, kind: torch.Tensor) -> torch.Tensor:
    """Signed distance of every kind, picked per shape by `kind`; all inputs broadcast to (n, k, h, w)."""
    ring = (_circle(px, py, 0.75 * r)).abs() - 0.25 * r  # outer radius r, inner radius r / 2
    cross = torch.minimum(_box(px, py, r, 0.3 * r), _box(px, py, 0.3 * r, r))
    polygon = _regular_polygon(px, py, r, _POLYGON_SIDES.to(kind.device)[kind].to(px.dtype))
    distance = torch.where(kind == _KIND["circle"], _circle(px, py, r), polygon)
    distance = torch.where(kind == _KIND["ring"], ring, distance)
    return torch.where(kind == _KIND["cross"], cross, distance)


def _half_extent(radius: torch.Tensor, height: int, width: int) -> torch.Tensor:
    """(..., 2) a shape's (y, x) half-extent as a fraction of the frame height and width."""
    shorter = min(height, width)
    return torch.stack([radius * (shorter / height), radius * (shorter / width)], dim=-1)


def shape_centres(scenes: ShapeScenes, frames: torch.Tensor, height: int, width: int) -> torch.Tensor:
    """Centres of every shape at the given frame times, bouncing off the frame edges.

    Each coordinate moves at constant speed and reflects when the shape touches an edge:
    in units of the free range it follows a triangle wave of period 2.

    Args:
        scenes: b scenes with k shape slots.
        frames: (t,) frame times (0 is the scene as sampled; fractional times are allowed).
        height, width: frame size in pixels (only the aspect ratio matters).

    Returns:
        (b, t, k, 2) centres (y, x) as fractions of the frame height and width.
    """
    extent = _half_extent(scenes.radius, height, width)  # (b, k, 2)
    span = 1 - 2 * extent  # free range of the centre, > 0 because radius < 1/2
    travelled = scenes.velocity[:, None] * frames.to(scenes.velocity)[None, :, None, None] / span[:, None]
    phase = torch.remainder(scenes.place[:, None] + travelled, 2.0)  # (b, t, k, 2)
    return extent[:, None] + span[:, None] * (1 - (phase - 1).abs())


def _render_frames(
    background: torch.Tensor,
    kind: torch.Tensor,
    centre: torch.Tensor,
    radius: torch.Tensor,
    angle: torch.Tensor,
    colour: torch.Tensor,
    present: torch.Tensor,
    height: int,
    width: int,
) -> torch.Tensor:
    """n frames (n, 3, h, w) in [0, 1] from per-frame parameters shaped as in ShapeScenes with b -> n."""
    device = centre.device
    shorter = min(height, width)
    y = (torch.arange(height, device=device) + 0.5) / height  # pixel centres, frame fractions
    x = (torch.arange(width, device=device) + 0.5) / width
    # Offsets from each shape centre in units of the shorter side: (n, k, h, 1) and (n, k, 1, w).
    dy = (y[None, None, :, None] - centre[..., 0, None, None]) * (height / shorter)
    dx = (x[None, None, None, :] - centre[..., 1, None, None]) * (width / shorter)
    cos, sin = torch.cos(angle)[..., None, None], torch.sin(angle)[..., None, None]
    px, py = cos * dx + sin * dy, cos * dy - sin * dx  # rotate the point by -angle, i.e. the shape by +angle
    distance = _shape_distance(px, py, radius[..., None, None], kind[..., None, None])  # (n, k, h, w)
    coverage = (0.5 - distance * shorter).clamp(0.0, 1.0) * present[..., None, None]

    top, bottom = background[:, 0, :, None, None], background[:, 1, :, None, None]  # (n, 3, 1, 1)
    image = (top + (bottom - top) * y[:, None]).expand(-1, -1, -1, width)  # vertical gradient (n, 3, h, w)
    for slot in range(kind.shape[1]):  # painter's order: slot 0 (the main shape) at the bottom
        alpha = coverage[:, slot, None]  # (n, 1, h, w)
        image = image + alpha * (colour[:, slot, :, None, None] - image)
    return image


def render_images(scenes: ShapeScenes, height: int, width: int) -> torch.Tensor:
    """Render b scenes as images.

    Args:
        scenes: b scenes (frame 0 of their motion).
        height, width: output size in pixels, any positive integers.

    Returns:
        (b, 3, height, width) float32 RGB in [0, 1].
    """
    height, width = check_size("height", height), check_size("width", width)
    centre = shape_centres(scenes, torch.zeros(1), height, width)[:, 0]  # (b, k, 2)
    return _render_frames(
        scenes.background,
        scenes.kind,
        centre,
        scenes.radius,
        scenes.angle,
        scenes.colour,
        scenes.present,
        height,
        width,
    )


def render_videos(scenes: ShapeScenes, num_frames: int, height: int, width: int) -> torch.Tensor:
    """Render b scenes as videos of moving, bouncing shapes; frame f shows the scene at time f.

    Args:
        scenes: b scenes.
        num_frames, height, width: output size, any positive integers. Speed is per frame,
            so more frames show more of the motion, not the same motion slower.

    Returns:
        (b, 3, num_frames, height, width) float32 RGB in [0, 1]; frame 0 equals `render_images`.
    """
    num_frames = check_size("num_frames", num_frames)
    height, width = check_size("height", height), check_size("width", width)
    centre = shape_centres(scenes, torch.arange(num_frames, dtype=torch.float32), height, width)
    per_frame = {  # every scene parameter repeated over its frames, frames folded into the batch
        name: repeat(getattr(scenes, name), "b ... -> (b t) ...", t=num_frames)
        for name in ("background", "kind", "radius", "angle", "colour", "present")
    }
    frames = _render_frames(centre=rearrange(centre, "b t k yx -> (b t) k yx"), height=height, width=width, **per_frame)
    return rearrange(frames, "(b t) c h w -> b c t h w", t=num_frames)

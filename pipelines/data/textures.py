"""Procedural stationary textures: bricks, stones, grass and clouds, at any size.

A texture is an endless plane at a fixed scale in pixels, and a picture of h x w pixels is a
window onto it: a larger rendering shows more of it at the same scale, and its top-left
corner is the smaller rendering, so every size has ground truth. The families (the class
label indexes `TEXTURE_KINDS`) differ in their statistics: bricks (a slightly rotated
running-bond tiling), stones (Voronoi cells with dark gaps), grass (plane waves within a
narrow fan of directions) and clouds (isotropic band-limited noise). Texture i of seed s
comes from its own generator seeded from (s, i), and every per-cell value is an integer hash
of the cell and the texture, so a window depends neither on its batch nor on its size.
See docs/training.md, "Data".
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from .render import check_size
from .scenes import check_scene_request, mix_seed, scene_uniforms

TEXTURE_KINDS: tuple[str, ...] = ("bricks", "stones", "grass", "clouds")
WAVES = 24  # plane waves per grass or clouds texture
_MASK32 = 0xFFFFFFFF
_PER_TEXTURE = 12  # uniforms per texture besides the waves: kind, 6 colour values, 5 shape parameters


@dataclass(frozen=True)
class Textures:
    """A batch of b textures; lengths are in pixels, so they keep their size in any window."""

    kind: torch.Tensor  # (b,) long, index into TEXTURE_KINDS
    colours: torch.Tensor  # (b, 2, 3) the two colours of the texture's palette, RGB in [0, 1]
    shape: torch.Tensor  # (b, 5) uniforms in [0, 1) that set the family's sizes (see the renderers)
    origin: torch.Tensor  # (b, 2) (y, x) of the window's top-left corner on the plane, pixels
    angle: torch.Tensor  # (b,) rotation of the pattern, radians
    waves: torch.Tensor  # (b, WAVES, 3) uniforms for the plane waves: direction, frequency, phase
    salt: torch.Tensor  # (b,) int64 hash key of each texture's cells

    @property
    def labels(self) -> torch.Tensor:
        """(b,) long: the texture family."""
        return self.kind

    def __len__(self) -> int:
        return self.kind.shape[0]


def sample_textures(seed: int, indices: Sequence[int] | torch.Tensor) -> Textures:
    """Textures number `indices` of the distribution with seed `seed` (the same pair, the same texture).

    Returns:
        Textures of b = len(indices) items, float32 parameters.
    """
    indices = check_scene_request(seed, indices)
    u = scene_uniforms(seed, indices, _PER_TEXTURE + 3 * WAVES + 3)
    kind = torch.floor(u[:, 0] * len(TEXTURE_KINDS)).long()
    base = 0.15 + 0.7 * u[:, 1:4]  # any hue, never black or white
    # the second colour: the base made lighter or darker by 0.25 to 0.45, for contrast within the texture
    sign = torch.where(u[:, 4:5] < 0.5, -1.0, 1.0)
    second = base + sign * (0.25 + 0.2 * u[:, 5:6]) * torch.ones(3, dtype=u.dtype) + 0.1 * (u[:, 6:7] - 0.5)
    second = second.clamp(0, 1)
    rotation = {"bricks": 0.15, "stones": math.pi, "grass": math.pi, "clouds": math.pi}  # largest |angle|
    largest = torch.tensor([rotation[name] for name in TEXTURE_KINDS], dtype=u.dtype)[kind]
    salt = torch.tensor([mix_salt(seed, i) for i in indices], dtype=torch.int64)
    return Textures(
        kind=kind,
        colours=torch.stack([base, second], dim=1).float(),
        shape=u[:, 7:12].float(),
        origin=(u[:, -3:-1] * 4096).float(),
        angle=((2 * u[:, -1] - 1) * largest).float(),
        waves=u[:, _PER_TEXTURE : _PER_TEXTURE + 3 * WAVES].reshape(-1, WAVES, 3).float(),
        salt=salt,
    )


def mix_salt(seed: int, index: int) -> int:
    """A 31-bit hash key for the cells of texture `index` of seed `seed`."""
    return mix_seed(seed + 0x5EED, index) & 0x7FFFFFFF


def hash_uniform(cells_y: torch.Tensor, cells_x: torch.Tensor, salt: torch.Tensor, channel: int) -> torch.Tensor:
    """A uniform in [0, 1) per integer cell (y, x) of a texture, one independent value per `channel`.

    A 32-bit integer hash (multiply, xor-shift) in int64: the same cell always gives the same value.
    """
    h = (cells_y * 0x8DA6B343 + cells_x * 0xD8163841 + salt * 0xCB1AB31F + channel * 0x9E3779B1) & _MASK32
    for multiplier in (0x85EBCA6B, 0xC2B2AE35):
        h = ((h ^ (h >> 16)) * multiplier) & _MASK32
    h = h ^ (h >> 16)
    return (h & 0xFFFFFF).float() / float(1 << 24)


def _bricks(y, x, textures: Textures) -> tuple[torch.Tensor, torch.Tensor]:
    """(mix, shade) per pixel: mix 1 on a brick and 0 on mortar; the brick's own shade in [-1, 1]."""
    shape = textures.shape[:, :, None, None]
    height = 5 + 4 * shape[:, 0]  # 5 to 9 px
    width = height * (1.8 + 0.8 * shape[:, 1])
    mortar = 0.8 + 0.8 * shape[:, 2]  # px
    row = torch.floor(y / height)
    shifted = x + torch.remainder(row, 2) * width / 2  # running bond: every other row moves half a brick
    column = torch.floor(shifted / width)
    along, across = shifted - column * width, y - row * height
    edge = torch.minimum(torch.minimum(along, width - along), torch.minimum(across, height - across))
    mix = (edge - mortar / 2 + 0.5).clamp(0, 1)  # a one-pixel ramp at the mortar's edge
    salt = textures.salt[:, None, None]
    shade = 2 * hash_uniform(row.long(), column.long(), salt, 0) - 1
    return mix, shade


def _stones(y, x, textures: Textures) -> tuple[torch.Tensor, torch.Tensor]:
    """(mix, shade) per pixel: mix 1 inside a stone, 0 in the gaps; shade per stone, darker at its rim."""
    shape = textures.shape[:, :, None, None]
    cell = 7 + 5 * shape[:, 0]  # 7 to 12 px
    gap = 1.0 + 1.0 * shape[:, 1]  # px
    salt = textures.salt[:, None, None]
    cy, cx = torch.floor(y / cell), torch.floor(x / cell)
    nearest = torch.full_like(y, float("inf"))
    second = torch.full_like(y, float("inf"))
    owner = torch.zeros_like(y)
    for dy in (-1, 0, 1):  # a cell's point lies inside the cell, so the nearest two are in the 3x3 around
        for dx in (-1, 0, 1):
            ny, nx = (cy + dy).long(), (cx + dx).long()
            py = (ny + 0.1 + 0.8 * hash_uniform(ny, nx, salt, 1)) * cell
            px = (nx + 0.1 + 0.8 * hash_uniform(ny, nx, salt, 2)) * cell
            distance = torch.hypot(y - py, x - px)
            closer = distance < nearest
            second = torch.where(closer, nearest, torch.minimum(second, distance))
            owner = torch.where(closer, hash_uniform(ny, nx, salt, 3), owner)
            nearest = torch.where(closer, distance, nearest)
    border = second - nearest  # about twice the distance to the cell's edge
    mix = (border - gap + 0.5).clamp(0, 1)
    rim = (border / cell).clamp(0, 0.5) * 2  # 0 at the edge, 1 from a quarter cell inside
    return mix, (2 * owner - 1) * 0.6 - 0.4 * (1 - rim)


def _waves(y, x, textures: Textures, spread: torch.Tensor, low: torch.Tensor, high: torch.Tensor) -> torch.Tensor:
    """sum_k cos(2 pi f_k (n_k . p) + phase_k) / sqrt(WAVES / 2): about unit variance.

    Wave normals lie within +-spread of the texture's angle; frequencies in [low, high] cycles/px.
    """
    direction, frequency, phase = textures.waves.unbind(-1)  # (b, WAVES) each
    normal = textures.angle[:, None] + (2 * direction - 1) * spread[:, None]
    frequency = low[:, None] + frequency * (high - low)[:, None]
    ky, kx = frequency * torch.sin(normal), frequency * torch.cos(normal)
    argument = ky[:, :, None, None] * y[:, None] + kx[:, :, None, None] * x[:, None]
    total = torch.cos(2 * math.pi * argument + 2 * math.pi * phase[:, :, None, None]).sum(1)
    return total / math.sqrt(WAVES / 2)


def _grass(y, x, textures: Textures) -> tuple[torch.Tensor, torch.Tensor]:
    """(mix, shade): the two colours along oriented strokes, across which the value changes fast."""
    shape = textures.shape
    spread = 0.15 + 0.25 * shape[:, 0]  # radians either side
    low = 1 / (7 - 2 * shape[:, 1])  # strokes 3 to 7 px apart
    value = _waves(y, x, textures, spread, low, low * 1.6)
    return (torch.tanh(1.5 * value) + 1) / 2, torch.zeros_like(value)


def _clouds(y, x, textures: Textures) -> tuple[torch.Tensor, torch.Tensor]:
    """(mix, shade): the two colours over smooth isotropic blobs."""
    shape = textures.shape
    low = 1 / (20 - 8 * shape[:, 0])  # blobs 12 to 20 px across
    value = _waves(y, x, textures, torch.full_like(low, math.pi), low, 2 * low)
    return (torch.tanh(value) + 1) / 2, torch.zeros_like(value)


_RENDERERS = {"bricks": _bricks, "stones": _stones, "grass": _grass, "clouds": _clouds}


def render_textures(textures: Textures, height: int, width: int) -> torch.Tensor:
    """Render b textures as images.

    Args:
        textures: b textures.
        height, width: the window in pixels, any positive integers (its top-left corner is at
            each texture's origin, so a larger window extends a smaller one to the right and down).

    Returns:
        (b, 3, height, width) float32 RGB in [0, 1].
    """
    height, width = check_size("height", height), check_size("width", width)
    rows = torch.arange(height, dtype=torch.float32) + 0.5  # pixel centres
    columns = torch.arange(width, dtype=torch.float32) + 0.5
    cos, sin = torch.cos(textures.angle)[:, None, None], torch.sin(textures.angle)[:, None, None]
    # the plane's coordinates of every pixel: rotate the window by -angle about its corner, then move it
    y = cos * rows[:, None] - sin * columns[None, :] + textures.origin[:, 0, None, None]  # (b, h, w)
    x = sin * rows[:, None] + cos * columns[None, :] + textures.origin[:, 1, None, None]
    mix = torch.zeros_like(y)
    shade = torch.zeros_like(y)
    for index, name in enumerate(TEXTURE_KINDS):  # every family on the rows of its kind only
        rows_of_kind = (textures.kind == index).nonzero().flatten()
        if len(rows_of_kind):
            subset = _select(textures, rows_of_kind)
            mix[rows_of_kind], shade[rows_of_kind] = _RENDERERS[name](y[rows_of_kind], x[rows_of_kind], subset)
    first, second = textures.colours[:, 0, :, None, None], textures.colours[:, 1, :, None, None]
    # mix 1 is the first colour (a brick, a stone) varied by its shade; mix 0 the second (mortar, gaps)
    lit = (first * (1 + 0.25 * shade[:, None])).clamp(0, 1)
    return second + mix[:, None] * (lit - second)


def _select(textures: Textures, rows: torch.Tensor) -> Textures:
    return Textures(**{name: getattr(textures, name)[rows] for name in Textures.__dataclass_fields__})

"""Input embeddings of a DiT: patches to tokens (and back), timesteps, class labels."""

from __future__ import annotations

import math

import torch
from diffusers.models.embeddings import get_timestep_embedding
from einops import pack, rearrange, unpack
from torch import nn

# (t r) (h p) (w q): r, p, q are the patch sizes along t, y, x. Images have no t axis.
_TO_PATCHES = {
    2: "b c (h p) (w q) -> b h w (c p q)",
    3: "b c (t r) (h p) (w q) -> b t h w (c r p q)",
}
_FROM_PATCHES = {
    2: "b h w (c p q) -> b c (h p) (w q)",
    3: "b t h w (c r p q) -> b c (t r) (h p) (w q)",
}
_PATCH_AXES = {2: ("p", "q"), 3: ("r", "p", "q")}


class Patchify(nn.Module):
    """Cuts an image or video into patches and embeds each one linearly.

    Args:
        patch: patch size per axis, (p, p) for images, (r, p, p) for (t, y, x) video.
        in_channels: channels of the input.
        dim: token width.

    forward(x) with x (b, c, h, w) or (b, c, t, h, w) returns tokens (b, seq, dim), seq the
    product of the token grid, and the grid (tuple of per-axis token counts); the grid is
    flattened row-major with `einops.pack`, the order of `axialrope.grid_coords`.
    `unpatchify(tokens, grid, channels)` inverts the layout for any grid.
    """

    def __init__(self, patch: tuple[int, ...], in_channels: int, dim: int):
        super().__init__()
        self.patch = tuple(patch)
        self.in_channels = in_channels
        self.proj = nn.Linear(in_channels * math.prod(self.patch), dim)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, tuple[int, ...]]:
        n_axes = len(self.patch)
        sizes = dict(zip(_PATCH_AXES[n_axes], self.patch, strict=True))
        patches = rearrange(x, _TO_PATCHES[n_axes], **sizes)  # (b, *grid, c * patch volume)
        tokens, (grid,) = pack([self.proj(patches)], "b * d")  # (b, seq, dim)
        return tokens, tuple(int(n) for n in grid)

    def unpatchify(self, tokens: torch.Tensor, grid: tuple[int, ...], channels: int) -> torch.Tensor:
        """tokens (b, seq, channels * patch volume) -> (b, channels, *(grid * patch))."""
        n_axes = len(self.patch)
        (cells,) = unpack(tokens, [grid], "b * d")  # (b, *grid, channels * patch volume)
        return rearrange(
            cells, _FROM_PATCHES[n_axes], c=channels, **dict(zip(_PATCH_AXES[n_axes], self.patch, strict=True))
        )


class TimestepEmbedder(nn.Module):
    """Timesteps (b,) -> (b, dim): DiT's sinusoidal features (cos first) through an MLP.

    Timesteps are on the diffusers scale (0 .. 1000 for DDPM and flow-matching schedulers).
    """

    def __init__(self, dim: int, frequency_dim: int = 256):
        super().__init__()
        self.frequency_dim = frequency_dim
        self.mlp = nn.Sequential(nn.Linear(frequency_dim, dim), nn.SiLU(), nn.Linear(dim, dim))

    def forward(self, timestep: torch.Tensor) -> torch.Tensor:
        features = get_timestep_embedding(timestep, self.frequency_dim, flip_sin_to_cos=True, downscale_freq_shift=0)
        return self.mlp(features.to(self.mlp[0].weight.dtype))


class LabelEmbedder(nn.Module):
    """Class ids (b,) -> (b, dim). Id `num_classes` is the null class (no label), used by
    classifier-free guidance and by training's label dropout."""

    def __init__(self, num_classes: int, dim: int):
        super().__init__()
        self.num_classes = num_classes
        self.table = nn.Embedding(num_classes + 1, dim)

    @property
    def null_class(self) -> int:
        return self.num_classes

    def forward(self, labels: torch.Tensor) -> torch.Tensor:
        return self.table(labels)


__all__ = ["LabelEmbedder", "Patchify", "TimestepEmbedder"]

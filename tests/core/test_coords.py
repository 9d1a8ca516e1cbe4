"""Coordinates: grids flatten in einops order; text goes first."""

import torch
from einops import rearrange

from axialrope import grid_coords, text_and_grid_coords


def test_grid_rows_follow_the_einops_flattening_order():
    t, h, w = 3, 4, 5
    index = torch.arange(t * h * w).reshape(t, h, w)
    tt, yy, xx = torch.meshgrid(torch.arange(t), torch.arange(h), torch.arange(w), indexing="ij")
    video = torch.stack((tt, yy, xx), 0)[None]  # (b=1, c=3, t, h, w): each pixel holds its (t, y, x)
    tokens = rearrange(video, "b c t h w -> b (t h w) c")[0]
    coords = grid_coords(t, h, w)
    assert coords.shape == (60, 3) and coords.dtype == torch.float64
    assert torch.equal(coords, tokens.double())
    assert torch.equal(coords[index[2, 1, 3]], torch.tensor([2.0, 1.0, 3.0], dtype=torch.float64))


def test_offset_and_scale_per_axis():
    coords = grid_coords(2, 3, offset=(10, -1), scale=(0.5, 2))
    assert coords[:, 0].unique().tolist() == [10.0, 10.5]
    assert coords[:, 1].unique().tolist() == [-1.0, 1.0, 3.0]


def test_text_before_the_grid_on_the_first_axis():
    grid = grid_coords(2, 2, offset=5)
    joined = text_and_grid_coords(3, grid)
    assert joined.shape == (7, 2)
    assert joined[:3].tolist() == [[2.0, 0.0], [3.0, 0.0], [4.0, 0.0]]
    assert torch.equal(joined[3:], grid)


def test_text_at_zero():
    joined = text_and_grid_coords(4, grid_coords(2, 3, 3), text="zeros")
    assert joined.shape == (22, 3) and joined[:4].abs().sum() == 0

"""SPA's position bundles (axialrope.coords) and its plan (Extrapolation("spa")) against the port's rules."""

import numpy as np
import pytest
import torch

from axialrope import Extrapolation
from axialrope.coords import bundle_index, bundle_positions, bundle_slides, bundled_grid_coords, grid_coords


@pytest.mark.parametrize("size", [1, 2, 3, 5, 8])
def test_bundle_index_is_the_ports_map(spa_port, size):
    index = torch.arange(300)
    for first in range(1, size + 1):
        assert bundle_index(index, first, size).tolist() == spa_port.bundle(np.arange(300), first, size).tolist()


def test_bundle_slides_count_and_order():
    assert bundle_slides(2, 3) == [(3, 3), (1, 3), (2, 3), (3, 1), (3, 2)]
    assert len(bundle_slides(2, 5)) == 9 and len(bundle_slides(3, 4)) == 10
    assert bundle_slides(2, 1) == [(1, 1)]


@pytest.mark.parametrize("grid", [(66, 66), (128, 128), (192, 192), (256, 256), (130, 96), (96, 200)])
@pytest.mark.parametrize("requested", [0, 3, 5])
def test_variants_equal_the_ports_on_flux_ids(spa_port, grid, requested):
    """Flux's ids (index, row, column), text rows all 0: our variants' coordinates are the port's, in order,
    with the port's limit (largest index 79) and a trained 64 x 64 grid."""
    h, w = grid
    text = np.zeros((7, 3))
    image = np.concatenate([np.zeros((h * w, 1)), grid_coords(h, w).numpy()], axis=1)
    ids = np.concatenate([text, image])
    expected = spa_port.variants(ids, requested)
    plan = Extrapolation("spa", spa_bundle_size=requested, spa_max_position=79).plan((64, 64), grid)
    assert plan.bundle_size == spa_port.size(max(grid) - 1, requested)
    slides = bundle_slides(len(plan.bundled_axes), plan.bundle_size)
    assert len(slides) == len(expected) == 2 * plan.bundle_size - 1
    for first, want in zip(slides, expected, strict=True):
        coords = bundled_grid_coords(grid, plan.bundled_axes, first, plan.bundle_size)
        np.testing.assert_array_equal(coords.numpy(), want[7:, 1:])
        text_rows = bundle_positions(torch.zeros(7), 0.0, 1.0, first[0], plan.bundle_size)
        np.testing.assert_array_equal(text_rows.numpy(), want[:7, 1])  # text keeps its positions


def test_identity_at_and_inside_the_trained_grid():
    for grid in [(64, 64), (32, 64), (1, 1), (64, 10)]:
        plan = Extrapolation("spa").plan((64, 64), grid)
        assert plan.bundle_size == 1 and plan.bundled_axes == (0, 1) and plan.logit_scale == 1.0
        assert all(s is None for s in plan.scalings)
    # a requested N changes nothing inside either
    assert Extrapolation("spa", spa_bundle_size=4).plan((64, 64), (64, 64)).bundle_size == 1


def test_default_bundle_size_keeps_positions_within_the_trained_grid():
    """Default limit: the trained size - 1. It gives the paper's N = 3 at 2x and N = 5 at 4x a 64-token axis."""
    spa = Extrapolation("spa")
    assert spa.plan((64, 64), (128, 128)).bundle_size == 3
    assert spa.plan((64, 64), (256, 256)).bundle_size == 5
    for grid in [(65, 64), (100, 64), (128, 200), (300, 70)]:
        plan = spa.plan((64, 64), grid)
        for first in bundle_slides(2, plan.bundle_size):
            coords = bundled_grid_coords(grid, plan.bundled_axes, first, plan.bundle_size)
            assert coords.max() <= 63
    assert Extrapolation("spa", spa_max_bundle=3).plan((64, 64), (512, 512)).bundle_size == 3
    assert Extrapolation("spa", spa_bundle_size=1).plan((64, 64), (512, 512)).bundle_size == 1


def test_video_bundles_the_spatial_axes_only():
    plan = Extrapolation("spa").plan((8, 16, 16), (20, 32, 32))
    assert plan.bundled_axes == (1, 2) and plan.bundle_size == 3
    first = bundle_slides(2, 3)[1]
    coords = bundled_grid_coords((20, 32, 32), plan.bundled_axes, first, 3)
    np.testing.assert_array_equal(coords[:, 0].numpy(), grid_coords(20, 32, 32)[:, 0].numpy())
    # only time beyond the trained grid: nothing to align
    assert Extrapolation("spa").plan((8, 16, 16), (32, 16, 16)).bundle_size == 1


def test_offsets_and_spacing_are_kept():
    coords = bundled_grid_coords((6, 6), (0, 1), (2, 2), 2, offset=(-3.0, 10.0), scale=(0.5, 2.0))
    assert coords[:, 0].unique().tolist() == [-3.0, -2.5, -2.0]  # 6 tokens, bundles of 2
    assert coords[:, 1].unique().tolist() == [10.0, 12.0, 14.0]


@pytest.mark.parametrize(
    "options, match",
    [
        (dict(spa_bundle_size=-1), "spa_bundle_size"),
        (dict(spa_max_bundle=0), "spa_max_bundle"),
        (dict(spa_max_position=0), "spa_max_position"),
        (dict(spa_bundle_size=2.5), "spa_bundle_size"),
    ],
)
def test_bad_options(options, match):
    with pytest.raises(ValueError, match=match):
        Extrapolation("spa", **options)


def test_options_of_other_methods_are_refused():
    with pytest.raises(ValueError, match="spa_bundle_size"):
        Extrapolation("yarn", spa_bundle_size=3)
    with pytest.raises(ValueError, match="beta_fast"):
        Extrapolation("spa", beta_fast=16.0)
    assert Extrapolation.from_name("spa+entropy").plan((8, 8), (16, 16)).logit_scale > 1


def test_bad_bundle_arguments():
    with pytest.raises(ValueError, match="first"):
        bundle_index(torch.arange(4), 0, 3)
    with pytest.raises(ValueError, match="size"):
        bundle_index(torch.arange(4), 1, 0)
    with pytest.raises(ValueError, match="origin"):
        bundle_positions(torch.tensor([-1.0]), 0.0, 1.0, 1, 2)

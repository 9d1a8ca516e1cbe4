"""SPA on the project's DiT: identity at the trained grid, averaged attention outputs beyond it (float64)."""

import math

import numpy as np
import pytest
import torch

from axialrope import Extrapolation
from axialrope.coords import bundle_slides, bundled_grid_coords
from axialrope.models import RopeConfig
from axialrope.models.axial_dit.extrapolation import DiTExtrapolation

SPA = Extrapolation("spa")


def _run(model, grid, seed=1):
    x = torch.randn(2, 3, *(2 * n for n in grid), generator=torch.Generator().manual_seed(seed), dtype=model.dtype)
    return model(x, torch.full((2,), 500.0, dtype=model.dtype), class_labels=torch.tensor([0, 2])).sample


@pytest.mark.parametrize("grid", [(4, 4), (3, 4), (2, 1)])
def test_at_and_inside_the_trained_grid_the_model_is_untouched(make_model, grid):
    model = make_model()
    expected = _run(model, grid)
    with DiTExtrapolation(model, SPA).attach():
        assert torch.equal(_run(model, grid), expected)


def test_video_at_the_trained_grid_is_untouched(make_model):
    model = make_model(num_frames=4)
    x = torch.randn(1, 3, 4, 8, 8)
    expected = model(x, 10.0).sample
    with DiTExtrapolation(model, SPA).attach():
        assert torch.equal(model(x, 10.0).sample, expected)


def _angles(coords, axes_dims, theta=10000.0):
    """(seq, sum(dims) // 2) float64 angles: per axis, position times theta^(-2i/d_a), axis blocks in order."""
    parts = []
    for axis, dim in enumerate(axes_dims):
        inv = theta ** -(np.arange(0, dim, 2) / dim)
        parts.append(coords[:, axis : axis + 1] * inv)
    return np.concatenate(parts, axis=1)


@torch.no_grad()
def test_the_attention_is_the_average_of_its_outputs_over_the_variants(make_model, spa_port):
    """One block's attention at (8, 6) from a (4, 4) model: the mean over the 2N - 1 variants of softmax(q k^T) v,
    each variant's q, k rotated by its bundled positions, written out in float64."""
    model = make_model().double()
    grid = (8, 6)
    plan = SPA.plan(model.base_grid, grid)
    assert plan.bundle_size == 3
    config = RopeConfig(bundle_size=plan.bundle_size, bundled_axes=plan.bundled_axes)
    tables = model.rope.variant_tables(grid, config=config)
    attention = model.blocks[0].attn
    x = torch.randn(2, math.prod(grid), attention.qkv.in_features, dtype=torch.float64)
    got = attention(x, tables)

    q, k, v = (t.detach().numpy() for t in attention.project(x, None))  # normalised, not rotated
    angles = [
        _angles(
            bundled_grid_coords(grid, plan.bundled_axes, first, plan.bundle_size).numpy(),
            model.rope.embedding.axes_dims,
        )
        for first in bundle_slides(2, plan.bundle_size)
    ]
    assert len(angles) == 5
    mean = spa_port.averaged_attention(q, k, v, angles, layout="half")  # (b, heads, seq, head_dim)
    expected = attention.proj(torch.from_numpy(mean).transpose(1, 2).reshape(2, math.prod(grid), -1))
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-7)  # the tables are float32, as every table
    assert not torch.allclose(got, attention(x, tables[0]))  # not the first variant alone


def test_beyond_the_trained_grid_the_model_averages(make_model):
    model = make_model()
    grid = (8, 8)
    plain = _run(model, grid)
    with DiTExtrapolation(model, SPA).attach():
        spa = _run(model, grid)
    model.rope_config = RopeConfig(bundle_size=3, bundled_axes=(0, 1))
    assert torch.equal(_run(model, grid), spa)
    assert not torch.allclose(spa, plain)


def test_video_bundles_only_space(make_model):
    model = make_model(num_frames=4)
    plan = SPA.plan(model.base_grid, (8, 8, 8))
    assert plan.bundled_axes == (1, 2) and plan.bundle_size == 3
    config = RopeConfig(bundle_size=3, bundled_axes=(1, 2))
    tables = model.rope.variant_tables((8, 8, 8), config=config)
    base = model.rope.table((8, 8, 8))
    d_t = model.rope.embedding.axes_dims[0] // 2
    for cos, _ in tables:  # the time axis's channels are the trained grid's
        assert torch.equal(cos[:, :d_t], base[0][:, :d_t])


def test_text_tokens_keep_their_positions(make_model):
    model = make_model(text_dim=6)
    config = RopeConfig(bundle_size=2, bundled_axes=(0, 1))
    base = model.rope.table((8, 8), 5)
    for cos, sin in model.rope.variant_tables((8, 8), 5, config=config):
        assert torch.equal(cos[:5], base[0][:5]) and torch.equal(sin[:5], base[1][:5])


def test_a_sincos_model_refuses_spa(make_model):
    with pytest.raises(ValueError, match="sin-cos"):
        DiTExtrapolation(make_model(position_encoding="sincos"), SPA)


def test_bad_bundle_config():
    with pytest.raises(ValueError, match="bundled_axes"):
        RopeConfig(bundle_size=2)
    with pytest.raises(ValueError, match="bundle_size"):
        RopeConfig(bundle_size=0)

"""Rotary tables: axis blocks, attention factors, and caches that key on everything."""

import pytest
import torch

from axialrope import AxialRotaryEmbedding, RotaryEmbedding, grid_coords, rope_frequencies
from axialrope.tables import axial_cos_sin, axis_cos_sin

YARN = {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 32}


def test_axis_blocks_are_1d_tables_side_by_side():
    rope = AxialRotaryEmbedding((16, 24, 24), theta=(100.0, 1e4, 1e4))
    coords = grid_coords(4, 3, 5)
    cos, sin = rope(coords)
    assert cos.shape == sin.shape == (60, 32) and cos.dtype == torch.float32
    blocks = zip(torch.split(cos, (8, 12, 12), -1), (16, 24, 24), (100.0, 1e4, 1e4), strict=True)
    for axis, (block, dim, theta) in enumerate(blocks):
        torch.testing.assert_close(block, RotaryEmbedding(dim, theta)(coords[:, axis])[0], rtol=0, atol=0)


def test_attention_factor_is_folded_into_cos_and_sin():
    positions = torch.arange(10)
    cos, sin = RotaryEmbedding(16, scaling=YARN)(positions)
    _, factor = rope_frequencies(16, scaling=YARN)
    assert factor > 1
    torch.testing.assert_close(cos**2 + sin**2, torch.full_like(cos, factor**2))


def test_per_axis_scaling_changes_only_its_axis():
    plain = AxialRotaryEmbedding((8, 8))
    scaled = AxialRotaryEmbedding((8, 8), scaling=[None, {"rope_type": "linear", "factor": 2.0}])
    coords = grid_coords(5, 5, offset=1)
    (cos_plain, _), (cos_scaled, _) = plain(coords), scaled(coords)
    assert torch.equal(cos_plain[:, :4], cos_scaled[:, :4])
    torch.testing.assert_close(cos_scaled[:, 4:], plain(coords / 2)[0][:, 4:])


def test_cache_returns_the_same_table_for_the_same_coordinates():
    rope = AxialRotaryEmbedding((8, 8))
    coords = grid_coords(4, 4)
    first = rope(coords)
    assert rope(coords)[0] is first[0]
    assert rope.for_grid(4, 4)[0] is rope.for_grid(4, 4)[0]
    torch.testing.assert_close(rope.for_grid(4, 4)[0], first[0], rtol=0, atol=0)


def test_cache_misses_when_anything_the_table_depends_on_changes():
    rope = AxialRotaryEmbedding((8, 8))
    coords = grid_coords(4, 4)
    cos, _ = rope(coords)
    coords += 1  # in place: same tensor object, new values
    assert not torch.equal(rope(coords)[0], cos)
    cos, _ = rope(coords)
    rope.set_frequencies(theta=100.0)
    assert not torch.equal(rope(coords)[0], cos)
    cos, _ = rope(coords)
    rope.set_frequencies(theta=100.0, scaling={"rope_type": "ntk", "factor": 2.0})
    assert not torch.equal(rope(coords)[0], cos)
    assert not torch.equal(rope.for_grid(4, 4)[0], rope.for_grid(4, 4, offset=(0, 1))[0])
    assert not torch.equal(rope.for_grid(4, 4)[0], rope.for_grid(4, 4, scale=0.5)[0])


def test_cache_is_bounded():
    rope = AxialRotaryEmbedding((8,), cache_size=3)
    for n in range(1, 10):
        rope.for_grid(n)
    assert rope.cache_info().currsize == 3 and rope.cache_info().misses == 9


def test_dynamic_scaling_follows_the_current_length():
    scaling = {"rope_type": "dynamic", "factor": 2.0, "original_max_position_embeddings": 16}
    rope, plain = RotaryEmbedding(16, scaling=scaling), RotaryEmbedding(16)
    assert torch.equal(rope(torch.arange(16))[0], plain(torch.arange(16))[0])
    long = torch.arange(64)
    assert not torch.allclose(rope(long)[0], plain(long)[0])
    assert torch.equal(rope(long)[0], rope(long.clone(), seq_len=64)[0])


def test_module_dtype_casts_do_not_touch_the_tables():
    rope = AxialRotaryEmbedding((8, 8)).to(torch.bfloat16)
    assert rope(grid_coords(3, 3))[0].dtype == torch.float32


def test_the_table_builders_are_the_modules_tables():
    """axial_cos_sin and axis_cos_sin are what the modules cache; gain multiplies the float32 table."""
    coords = grid_coords(3, 4, 5, offset=0.5)
    dims, thetas, scalings = (8, 12, 12), (100.0, 1e4, 500.0), [None, YARN, {"rope_type": "ntk", "factor": 2.0}]
    module = AxialRotaryEmbedding(dims, theta=thetas, scaling=scalings)(coords)
    built = axial_cos_sin(coords, dims, thetas, scalings)
    assert all(torch.equal(a, b) for a, b in zip(module, built, strict=True))
    cos, sin = axis_cos_sin(torch.arange(7.0), 12, 1e4, YARN, gain=1.5)
    plain = RotaryEmbedding(12, scaling=YARN)(torch.arange(7.0))
    assert torch.equal(cos, plain[0] * 1.5) and torch.equal(sin, plain[1] * 1.5)


def test_the_table_builders_refuse_what_they_cannot_build():
    with pytest.raises(ValueError, match="one theta and one scaling per axis"):
        axial_cos_sin(grid_coords(2, 2), (8, 8), (1e4,), (None, None))
    with pytest.raises(ValueError, match="n_axes=2"):
        axial_cos_sin(grid_coords(2, 2, 2), (8, 8), (1e4, 1e4), (None, None))
    with pytest.raises(ValueError, match="finite"):
        axis_cos_sin(torch.tensor([0.0, float("nan")]), 8, 1e4)
    with pytest.raises(ValueError, match=r"shape \(n,\)"):
        axis_cos_sin(torch.zeros(2, 2), 8, 1e4)
    with pytest.raises(TypeError, match="positions must be a torch.Tensor"):
        axis_cos_sin([0.0, 1.0], 8, 1e4)

"""Positions in the DiT: the swappable RoPE config, its tables, joint text tokens, sin-cos."""

import math
from dataclasses import FrozenInstanceError, replace

import pytest
import torch
from diffusers.models.embeddings import get_2d_sincos_pos_embed

from axialrope import AxialRotaryEmbedding, RopeScaling, grid_coords, text_and_grid_coords
from axialrope.models import Attention, GridRope, RopeConfig, sincos_pos_embed, split_axes

# -- RopeConfig and split_axes -------------------------------------------------------------


def test_rope_config_normalises_to_hashable_values():
    config = RopeConfig(theta=[100, 1e4], scaling=[None, {"rope_type": "ntk", "factor": 2}], offset=[1, 2])
    assert config.theta == (100.0, 10000.0)
    assert config.scaling == (None, RopeScaling(rope_type="ntk", factor=2.0))
    assert config.offset == (1.0, 2.0)
    assert hash(config) == hash(RopeConfig(theta=(100.0, 1e4), scaling=(None, RopeScaling("ntk", 2.0)), offset=(1, 2)))
    with pytest.raises(FrozenInstanceError):
        config.theta = 5.0


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"attention_scale": 0.0}, ValueError, "attention_scale must be a finite number > 0"),
        ({"attention_scale": float("nan")}, ValueError, "attention_scale"),
        ({"theta": "big"}, TypeError, "theta must be a number or a sequence"),
        ({"offset": [1, "a"]}, TypeError, "offset entries must be real numbers"),
        ({"scaling": {"rope_type": "warp"}}, ValueError, "unknown rope_type"),
        ({"scaling": 2.0}, TypeError, "scaling must be None, a dict or a RopeScaling"),
    ],
)
def test_rope_config_rejects_bad_values(kwargs, error, match):
    with pytest.raises(error, match=match):
        RopeConfig(**kwargs)


@pytest.mark.parametrize("dim", [16, 64, 72, 96, 128])
@pytest.mark.parametrize("n_axes", [2, 3])
def test_split_axes_covers_the_dimension_with_even_blocks(dim, n_axes):
    dims = split_axes(dim, n_axes)
    assert len(dims) == n_axes and sum(dims) == dim
    assert all(d > 0 and d % 2 == 0 for d in dims)
    assert dims[-1] == dims[-2]  # y and x get the same share


def test_split_axes_known_values_and_errors():
    assert split_axes(64, 3) == (16, 24, 24)
    assert split_axes(72, 3) == (20, 26, 26)
    assert split_axes(64, 2) == (32, 32)
    with pytest.raises(ValueError, match="positive even integer"):
        split_axes(63, 2)
    with pytest.raises(ValueError, match="n_axes must be 1, 2 or 3"):
        split_axes(64, 4)


# -- GridRope: tables and swapping ---------------------------------------------------------


def _reference_table(axes_dims, config, coords):
    """The table straight from the core, for coordinates built by hand."""
    return AxialRotaryEmbedding(axes_dims, theta=config.theta, scaling=config.scaling)(coords)


@pytest.mark.parametrize(
    "config",
    [
        RopeConfig(),
        RopeConfig(theta=(100.0, 1e4, 1e4), offset=(2.0, -3.0, 0.5), scale=(1.0, 0.5, 0.5)),
        RopeConfig(scaling={"rope_type": "yarn", "factor": 2.0, "original_max_position_embeddings": 4}),
    ],
)
def test_grid_table_equals_the_core_table_of_the_grid_coordinates(config):
    rope = GridRope((4, 6, 6), config)
    cos, sin = rope.table((3, 4, 5))
    coords = grid_coords(3, 4, 5, offset=config.offset, scale=config.scale)
    ref_cos, ref_sin = _reference_table((4, 6, 6), config, coords)
    torch.testing.assert_close(cos, ref_cos, rtol=0, atol=0)
    torch.testing.assert_close(sin, ref_sin, rtol=0, atol=0)


@pytest.mark.parametrize(
    "config", [RopeConfig(), RopeConfig(scale=0.5), RopeConfig(offset=(4.0, 1.0), scale=(-0.5, 2.0))]
)
def test_text_prefix_has_the_coordinates_of_text_and_grid_coords_moved_by_the_offset(config):
    rope = GridRope((6, 6), config)
    cos, sin = rope.table((4, 3), num_text_tokens=5)
    coords = text_and_grid_coords(5, grid_coords(4, 3, scale=config.scale), text="before")
    coords = coords + torch.tensor(config.offset or (0.0, 0.0), dtype=coords.dtype)
    ref_cos, ref_sin = _reference_table((6, 6), config, coords)
    torch.testing.assert_close(cos, ref_cos, rtol=0, atol=1e-7)
    torch.testing.assert_close(sin, ref_sin, rtol=0, atol=1e-7)


def test_swapping_the_config_changes_the_table_and_swapping_back_restores_it():
    rope = GridRope((8, 8), RopeConfig())
    plain = rope.table((6, 6))
    rope.config = RopeConfig(scaling={"rope_type": "ntk", "factor": 3.0})
    scaled = rope.table((6, 6))
    assert not torch.allclose(scaled[0], plain[0])  # the cache key saw the new scaling
    ref = _reference_table((8, 8), rope.config, grid_coords(6, 6))
    torch.testing.assert_close(scaled[0], ref[0], rtol=0, atol=0)
    rope.config = replace(rope.config, scaling=None)
    assert torch.equal(rope.table((6, 6))[0], plain[0])
    # the same grid under the same config is one cached table, not a recomputation
    assert rope.table((6, 6))[0] is rope.table((6, 6))[0]


def test_the_model_builds_one_table_per_grid_and_config_across_blocks_and_steps(make_model):
    model = make_model()
    embedding = model.rope.embedding

    def builds():  # a lookup that finds no table builds one
        return embedding.cache_info().misses

    x = torch.randn(1, 3, 8, 8)
    for _ in range(3):  # three steps through two blocks
        model(x, 5)
    assert builds() == 1
    model.rope_config = RopeConfig(scaling={"rope_type": "linear", "factor": 2.0})
    model(x, 5)
    model(torch.randn(1, 3, 8, 12), 5)  # a new grid
    assert builds() == 3
    model.rope_config = RopeConfig()  # back to the first config: still cached
    model(x, 5)
    assert builds() == 3


def test_grid_rope_rejects_configs_of_the_wrong_axis_count():
    rope = GridRope((8, 8))
    with pytest.raises(ValueError, match=r"offset must be a number or have one entry per axis \(2\), got 3"):
        rope.config = RopeConfig(offset=(1.0, 2.0, 3.0))
    with pytest.raises(ValueError, match="theta must be a number or a sequence of 2"):
        rope.config = RopeConfig(theta=(10.0, 20.0, 30.0))
    with pytest.raises(TypeError, match="must be a RopeConfig"):
        rope.config = {"theta": 10.0}


# -- the model under a swapped config ------------------------------------------------------


@pytest.mark.parametrize("overrides", [{}, {"num_frames": 4, "text_dim": 6}])
def test_shifting_the_token_grid_leaves_the_model_output_unchanged(make_model, overrides):
    model = make_model(**overrides)
    video = "num_frames" in overrides
    x = torch.randn((2, 3, 3, 8, 6) if video else (2, 3, 8, 10))
    text = torch.randn(2, 4, 6) if "text_dim" in overrides else None
    base = model(x, 30, encoder_hidden_states=text).sample
    model.rope_config = RopeConfig(offset=(7.0, -5.0, 3.0) if video else (-9.0, 4.0))
    shifted = model(x, 30, encoder_hidden_states=text).sample
    torch.testing.assert_close(shifted, base, rtol=1e-4, atol=1e-5)
    model.rope_config = RopeConfig(scale=0.5)  # changing distances does change the output
    assert not torch.allclose(model(x, 30, encoder_hidden_states=text).sample, base, atol=1e-4)


def test_attention_scale_multiplies_the_logits():
    torch.manual_seed(0)
    attn = Attention(32, num_heads=4).double()
    x = torch.randn(2, 6, 32, dtype=torch.float64)
    rope = GridRope((4, 4)).table((2, 3))
    q, k, v = attn.project(x, rope)
    weights = torch.softmax(2.5 * q @ k.transpose(-1, -2) / math.sqrt(8), dim=-1)
    expected = attn.proj((weights @ v).transpose(1, 2).reshape(2, 6, 32))
    torch.testing.assert_close(attn(x, rope, attention_scale=2.5), expected)


def test_attention_scale_of_the_config_reaches_the_blocks(make_model):
    model = make_model()
    x = torch.randn(1, 3, 8, 8)
    base = model(x, 3).sample
    model.rope_config = RopeConfig(attention_scale=1.7)
    assert not torch.allclose(model(x, 3).sample, base, atol=1e-5)
    model.rope_config = RopeConfig()
    torch.testing.assert_close(model(x, 3).sample, base, rtol=0, atol=0)


def test_sincos_model_takes_only_the_attention_scale(make_model):
    model = make_model(position_encoding="sincos")
    model.rope_config = RopeConfig(attention_scale=1.2)
    assert model.rope_config.attention_scale == 1.2
    with pytest.raises(ValueError, match="uses only rope_config.attention_scale"):
        model.rope_config = RopeConfig(scaling={"rope_type": "linear", "factor": 2.0})


# -- sin-cos baseline ----------------------------------------------------------------------


@pytest.mark.parametrize("grid, interpolation_scale", [((8, 8), 1.0), ((16, 16), 1.0), ((8, 8), 2.0)])
def test_2d_sincos_matches_diffusers_patch_embed_up_to_the_axis_order(grid, interpolation_scale):
    dim, base = 32, (8, 8)
    ours = sincos_pos_embed(grid, base, (16, 16), interpolation_scale)
    theirs = get_2d_sincos_pos_embed(dim, grid, base_size=8, interpolation_scale=interpolation_scale).float()
    # diffusers puts x's channels first, we put y's (axis order (y, x))
    torch.testing.assert_close(ours, torch.cat((theirs[:, 16:], theirs[:, :16]), dim=1), rtol=0, atol=1e-6)


def test_sincos_squeezes_any_grid_onto_the_trained_range():
    table = sincos_pos_embed((2, 6, 4), (4, 3, 4), (8, 12, 12))  # t stretched, y squeezed, x trained
    by_cell = table.reshape(2, 6, 4, 32)
    trained = sincos_pos_embed((4, 3, 4), (4, 3, 4), (8, 12, 12)).reshape(4, 3, 4, 32)
    # t: 2 cells over 4 trained -> coordinates 0, 2; y: 6 cells over 3 -> 0, 0.5, 1, ...
    torch.testing.assert_close(by_cell[1, 0, 0, :8], trained[2, 0, 0, :8])
    torch.testing.assert_close(by_cell[0, 4, 0, 8:20], trained[0, 2, 0, 8:20])
    torch.testing.assert_close(by_cell[0, 0, 3, 20:], trained[0, 0, 3, 20:])
    # each axis's channel block depends on that axis only
    assert torch.equal(by_cell[:, :, 0, :8], by_cell[:, :, 3, :8].clone())
    assert torch.equal(by_cell[0, :, :, 8:20], by_cell[1, :, :, 8:20].clone())


def test_sincos_rejects_mismatched_axes():
    with pytest.raises(ValueError, match="one entry per axis"):
        sincos_pos_embed((4, 4), (4, 4, 4), (8, 8))

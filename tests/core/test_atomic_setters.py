"""A setter that refuses a value changes nothing: outputs after the failed call are bit-identical."""

import pytest
import torch

from axialrope import AxialRotaryEmbedding, RoPEAttention, RotaryEmbedding, grid_coords

BAD_SCALINGS = [  # each valid until the last check (of the one axis it does not fit, or the table)
    {"rope_type": "bogus", "factor": 2.0},
    [None, {"rope_type": "ntk", "factor": 2.0}, None],  # ntk on axis 1 of 2 channels: dim must be > 2
    [None, None, {"rope_type": "riflex", "factor": 2.0, "original_max_position_embeddings": 4, "riflex_index": 99}],
    {"rope_type": "ntk", "factor": 1e300},
]


def tables(rope):
    coords = grid_coords(2, 3, 4).clone()  # a new tensor: no cached table can answer
    return rope(coords), rope.for_grid(2, 3, 4)


@pytest.mark.parametrize("scaling", BAD_SCALINGS)
def test_a_failed_set_frequencies_keeps_theta_scaling_and_tables(scaling):
    rope = AxialRotaryEmbedding(
        (4, 2, 6), theta=(100.0, 1e4, 1e4), scaling=[None, None, {"rope_type": "linear", "factor": 2.0}]
    )
    before, state = tables(rope), (rope.thetas, rope.scalings)
    with pytest.raises(ValueError):
        rope.set_frequencies(500.0, scaling)
    assert (rope.thetas, rope.scalings) == state
    after = tables(rope)
    assert all(torch.equal(a, b) for pair in zip(before, after, strict=True) for a, b in zip(*pair, strict=True))


def test_a_failed_theta_or_cache_size_changes_nothing():
    rope = RotaryEmbedding(16, theta=500.0)
    positions = torch.arange(8)
    before = rope(positions)
    for bad in (0.5, float("nan"), (1e4, 1e4)):
        with pytest.raises(ValueError):
            rope.set_frequencies(bad)
    with pytest.raises(ValueError, match="cache_size"):
        rope.cache_size = -1
    assert rope.thetas == (500.0,) and rope.cache_size == 16
    assert all(torch.equal(a, b) for a, b in zip(before, rope(positions.clone()), strict=True))


def test_a_smaller_cache_size_drops_the_oldest_tables():
    rope = RotaryEmbedding(8)
    for n in range(1, 5):
        rope.for_grid(n)
    rope.cache_size = 2
    assert rope.cache_info() == (0, 4, 2, 2)  # (hits, misses, maxsize, currsize)
    rope.for_grid(3), rope.for_grid(4)  # the two newest were kept
    assert rope.cache_info().hits == 2
    rope.for_grid(2)  # an older one was dropped
    assert rope.cache_info().misses == 5


def test_attention_keeps_its_rope_after_a_failed_change():
    torch.manual_seed(0)
    attention = RoPEAttention(32, 4, 2)
    x = torch.randn(1, 5, 32)
    before, _ = attention(x)
    with pytest.raises(ValueError):
        attention.rope.set_frequencies(500.0, {"rope_type": "linear"})  # no factor
    after, _ = attention(x)
    assert torch.equal(before, after)

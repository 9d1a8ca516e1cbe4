"""The core under `torch.inference_mode()`: inference tensors have no version counter, so the caches key
them by their values (`axialrope.table_cache.tensor_key`)."""

import copy
import pickle

import torch

from axialrope import AxialRotaryEmbedding, RotaryEmbedding, apply_rotary_qk, grid_coords
from axialrope.table_cache import tensor_key


def test_the_readme_example_runs_under_inference_mode_with_the_same_tables():
    expected = AxialRotaryEmbedding((16, 24, 24))(grid_coords(4, 8, 8))
    rope = AxialRotaryEmbedding((16, 24, 24))
    with torch.inference_mode():
        coords = grid_coords(4, 8, 8)
        assert coords.is_inference()
        cos, sin = rope(coords)
        q, k = apply_rotary_qk(torch.ones(1, 2, 256, 64), torch.ones(1, 2, 256, 64), cos, sin)
    assert torch.equal(cos, expected[0]) and torch.equal(sin, expected[1])
    assert q.shape == k.shape == (1, 2, 256, 64)


def test_an_inference_tensor_met_again_finds_its_table():
    rope = RotaryEmbedding(16)
    with torch.inference_mode():
        positions = torch.arange(12)
        first = rope(positions)
        assert rope(positions)[0] is first[0]
        assert rope(torch.arange(12))[0] is first[0]  # keyed by its values: an equal tensor shares the table
    assert rope(positions)[0] is first[0]  # read outside inference_mode too
    assert rope.cache_info().misses == 1 and rope.cache_info().hits == 3


def test_an_inference_tensor_changed_in_place_gets_a_new_table():
    """Inside inference_mode an inference tensor can be changed in place, and nothing counts the change:
    the table must follow its values."""
    rope = AxialRotaryEmbedding((8, 8))
    with torch.inference_mode():
        coords = grid_coords(4, 4)
        before = rope(coords)[0]
        coords *= 2
        after = rope(coords)[0]
    assert not torch.equal(after, before)
    assert torch.equal(after, AxialRotaryEmbedding((8, 8))(grid_coords(4, 4) * 2)[0])


def test_an_ordinary_tensor_keys_by_identity_and_version_also_inside_inference_mode():
    coords = grid_coords(3, 3)
    key = tensor_key(coords)
    assert key == tensor_key(coords) and key != tensor_key(coords.clone())
    rope = AxialRotaryEmbedding((8, 8))
    with torch.inference_mode():
        cos = rope(coords)[0]
        coords += 1  # a normal tensor counts its versions even here
        assert tensor_key(coords) != key
        assert not torch.equal(rope(coords)[0], cos)


def test_keys_of_inference_tensors_tell_apart_what_their_tables_depend_on():
    with torch.inference_mode():
        a = torch.arange(6.0)
        keys = [tensor_key(t) for t in (a, a.clone(), a.double(), a.reshape(2, 3), a + 1)]
    assert keys[0] == keys[1]  # same values, dtype and shape
    assert len({keys[0], *keys[2:]}) == 4


def test_a_copied_module_starts_with_an_empty_cache():
    rope = AxialRotaryEmbedding((8, 8))
    coords = grid_coords(4, 4)
    table = rope(coords)
    for clone in (copy.deepcopy(rope), pickle.loads(pickle.dumps(rope))):
        assert clone.cache_info().currsize == 0 and clone.cache_size == rope.cache_size
        assert torch.equal(clone(coords)[0], table[0])

"""The table and the rotation trace into one graph: caches stay invisible to torch.compile."""

import pytest
import torch

from axialrope import AxialRotaryEmbedding, apply_rotary, grid_coords


def rotate(rope, x, coords, layout="half"):
    cos, sin = rope(coords)
    return apply_rotary(x, cos, sin, layout)


@pytest.mark.parametrize("layout", ["half", "interleaved"])
def test_fullgraph_trace_has_no_graph_break(layout):
    # the eager backend runs dynamo's full tracing (where graph breaks happen) without codegen
    rope = AxialRotaryEmbedding((16, 24, 24))
    coords, x = grid_coords(2, 4, 4), torch.randn(2, 3, 32, 64)
    rope(coords)  # warm the eager cache: compiled code must not read it
    compiled = torch.compile(rotate, fullgraph=True, backend="eager")
    torch.testing.assert_close(compiled(rope, x, coords, layout), rotate(rope, x, coords, layout))


@pytest.mark.slow
def test_inductor_compiled_matches_eager():
    rope = AxialRotaryEmbedding((16, 24, 24))
    coords, x = grid_coords(2, 4, 4), torch.randn(2, 3, 32, 64)
    compiled = torch.compile(rotate, fullgraph=True)
    torch.testing.assert_close(compiled(rope, x, coords), rotate(rope, x, coords))

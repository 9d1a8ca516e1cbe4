"""Kandinsky 6's image-to-video layout: the first frame appended again at time index 0 does not count as one
more frame of the grid, so at the trained length every method leaves the model as it is."""

import torch

from axialrope.models import apply_extrapolation


def _with_first_frame(tiny, model, grid, timestep):
    """Kandinsky6TI2VAPipeline's layout: the frames being made, then the first frame again at time 0."""
    small = tiny.TINY["kandinsky6"]
    inputs = small.inputs(model, (grid[0] + 1, *grid[1:]), timestep)
    inputs["visual_rope_pos"] = (
        torch.cat([torch.arange(grid[0]), torch.zeros(1, dtype=torch.long)]),
        torch.arange(grid[1]),
        torch.arange(grid[2]),
    )
    with torch.no_grad():
        return model(**inputs, return_dict=False)[0]


def test_the_appended_first_frame_keeps_the_trained_grid_exact(tiny):
    small = tiny.TINY["kandinsky6"]
    model = small.make()
    bigger = (small.trained[0], 2 * small.trained[1], 2 * small.trained[2])
    plain = {grid: _with_first_frame(tiny, model, grid, 600.0) for grid in (small.trained, bigger)}
    for method in ("pi", "riflex", "kappa-yarn"):
        with apply_extrapolation(model, method, trained_grid=small.trained):
            assert torch.equal(_with_first_frame(tiny, model, small.trained, 600.0), plain[small.trained]), method
            if method != "riflex":  # riflex acts on time only
                assert not torch.equal(_with_first_frame(tiny, model, bigger, 600.0), plain[bigger]), method

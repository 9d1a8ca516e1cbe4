"""Cosmos 3: the vision grid of the packed omni sequence takes the method about its own origin; the
text rows stay as trained; the time axis's spacing follows the call's frame rate; RIFLEx's k is one
of the time axis's pairs."""

import sys

import torch

from axialrope import Extrapolation
from axialrope.models import apply_extrapolation
from axialrope.models.integrations.ropes.base import RopeSetup
from axialrope.models.integrations.ropes.ideogram4 import pair_axes


def _omni():
    return sys.modules["tiny_omni"]  # loaded by tiny_families.py


def test_beyond_the_trained_grid_the_text_rows_keep_their_trained_table(tiny):
    family, small = tiny.FAMILY["cosmos3"], tiny.TINY["cosmos3"]
    model = small.make()
    grid, timestep, text = (6, 8, 8), family.time.timestep_at(0.6), _omni().COSMOS3_TEXT
    plain = tiny.rope_table(model, family, small, grid, timestep)
    with apply_extrapolation(model, "ntk", trained_grid=small.trained):
        ours = tiny.rope_table(model, family, small, grid, timestep)
    for a, b in zip(ours, plain, strict=True):
        assert torch.equal(a[:, :text], b[:, :text]) and not torch.equal(a[:, text:], b[:, text:])


def test_the_time_spacing_is_the_calls_own(tiny, monkeypatch):
    """At 12 fps the pipeline puts latent frames base_fps / fps = 2 position units apart: the plan gets that."""
    small = tiny.TINY["cosmos3"]
    model = small.make()
    spacings = []
    with apply_extrapolation(model, "yarn", trained_grid=small.trained) as handle:
        plan = handle.rope.plan

        def spy(grid, token_spacing=None):
            spacings.append(token_spacing)
            return plan(grid, token_spacing)

        monkeypatch.setattr(handle.rope, "plan", spy)
        with torch.no_grad():
            model(**_omni().cosmos3_inputs(model, (6, 4, 4), 600.0, fps=12.0), return_dict=False)
    assert spacings == [(2.0, 1.0, 1.0)]


def test_riflex_picks_a_pair_of_the_time_axis_at_the_default_config(tiny):
    family = tiny.FAMILY["cosmos3"]
    config = {"rope_axes_dim": [24, 20, 20]}  # Cosmos3OmniTransformer's default (head_dim 128, theta 5e6)
    setup = RopeSetup(family, Extrapolation("riflex"), family.trained[0].grid, (128,) * 3, (5e6,) * 3, config=config)
    k = family.kind.riflex_index(setup)
    assert pair_axes(64, config["rope_axes_dim"])[k - 1] == 0  # a pair that rotates with t
    inv_freq = 5e6 ** -(torch.arange(0, 128, 2, dtype=torch.float64) / 128)
    assert 2 * torch.pi / inv_freq[k - 1] > family.trained[0].grid[0]  # its period is longer than trained

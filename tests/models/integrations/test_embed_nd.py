"""EmbedND variants: HiDream's non-square latents (padded with zero ids to max_resolution's tokens) are planned
from the image's own extent; ERNIE-Image's table of angles refuses every method with a gain, by name."""

import pytest
import torch

from axialrope import Extrapolation
from axialrope.models import apply_extrapolation
from axialrope.models.integrations.registry import family_of


def test_hidream_non_square_latent_is_planned_from_its_own_extent(tiny, reference, authors):
    small = tiny.TINY["hidream"]
    model = small.make()
    family = family_of(model)
    grid = (4, 8)  # non-square: the model pads it to max_resolution's 256 tokens with zero ids
    inside = tiny.run(model, small, (3, 4), 600.0)
    handle = apply_extrapolation(model, "ntk", trained_grid=small.trained)
    assert torch.equal(tiny.run(model, small, (3, 4), 600.0), inside)
    (ours,) = tiny.rope_table(model, family, small, grid, 600.0)
    handle.remove()
    expected = reference.embed_nd_reference(
        family, model, small.inputs(model, grid, 600.0), grid, small.trained, "ntk", 600.0, authors
    )  # y as trained (s = 1), x at s = 2
    assert ours.shape[1] == 256 + 3 * 4  # the padded image rows, then the text's
    torch.testing.assert_close(ours, expected, rtol=0, atol=2e-6)


@pytest.mark.parametrize(
    "method, entropy", [("yarn", False), ("dype-yarn", False), ("kappa-yarn", False), ("pi", True)]
)
def test_ernie_image_refuses_a_gain_naming_the_methods_that_apply(tiny, method, entropy):
    model = tiny.TINY["ernie-image"].make()
    with pytest.raises(ValueError, match="table of angles.*its methods are none, pi, ntk, dype-ntk"):
        apply_extrapolation(model, Extrapolation(method, entropy_scaling=entropy))
    assert "_axialrope_extrapolation" not in vars(model)


def test_ernie_image_batch_with_different_text_lengths_is_its_formula_per_sample(tiny, reference, authors):
    """Each sample's image sits at its own text length on the index axis: one table over the batch's ids."""
    small = tiny.TINY["ernie-image"]
    model = small.make()
    family = family_of(model)
    grid = tuple(2 * n for n in small.trained)

    def inputs(*_):
        one = small.inputs(model, grid, 600.0)
        return {
            **one,
            "hidden_states": one["hidden_states"].repeat(2, 1, 1, 1),
            "text_bth": one["text_bth"].repeat(2, 1, 1),
            "text_lens": torch.tensor([1, 3]),
            "timestep": one["timestep"].repeat(2),
        }

    batched = type(small)(small.make, inputs, small.trained)
    handle = apply_extrapolation(model, "ntk", trained_grid=small.trained)
    (ours,) = tiny.rope_table(model, family, batched, grid, 600.0)
    handle.remove()
    expected = reference.embed_nd_reference(family, model, inputs(), grid, small.trained, "ntk", 600.0, authors)
    assert ours.shape[0] == 2 and not torch.equal(ours[0], ours[1])
    torch.testing.assert_close(ours, expected, rtol=0, atol=2e-6)

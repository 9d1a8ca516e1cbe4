"""Patched models under `torch.inference_mode()`, the usual way to call a pipeline: its tensors carry no
version counter, so the rope caches key them by their values (`axialrope.table_cache.tensor_key`)."""

import pytest
import torch

from axialrope.models import apply_extrapolation

# Flux: ids (`ids.storage_key`); CogVideoX: the pipeline's tables, LTX-2: coordinates (`tensor_key`)
FAMILIES = ("flux", "cogvideox", "ltx2")


@pytest.mark.parametrize("factor", [1, 2])
@pytest.mark.parametrize("name", FAMILIES)
def test_a_patched_model_gives_the_same_output_under_inference_mode(tiny, name, factor):
    spec = tiny.TINY[name]
    model = spec.make()
    handle = apply_extrapolation(model, "dype-yarn", trained_grid=spec.trained)
    grid, t = tuple(n * factor for n in spec.trained), 0.7 * tiny.FAMILY[name].time.at_noise
    expected = tiny.run(model, spec, grid, t)
    before = handle.rope.cache_info()
    with torch.inference_mode():  # the inputs are made inside: inference tensors
        first, again = tiny.run(model, spec, grid, t), tiny.run(model, spec, grid, t)
    assert torch.equal(first, expected) and torch.equal(again, expected)
    if factor > 1:  # beyond the trained grid the tables are the rope's own: the second call found them cached
        assert handle.rope.cache_info().hits > before.hits


def test_flux_ids_changed_in_place_under_inference_mode_get_their_own_table(tiny):
    model = tiny.make_flux()
    handle = apply_extrapolation(model, "dype-yarn", trained_grid=(4, 4))
    spec = tiny.TINY["flux"]
    with torch.inference_mode():
        inputs = spec.inputs(model, (8, 8), 700.0)
        before = model(**inputs, return_dict=False)[0]
        inputs["img_ids"][:, 1:] *= 2  # the same tensor, spread twice as far: a larger extent, another plan
        changed = model(**inputs, return_dict=False)[0]
        handle.rope.clear_cache()
        fresh = model(**{**inputs, "img_ids": inputs["img_ids"].clone()}, return_dict=False)[0]
    assert not torch.equal(changed, before)
    assert torch.equal(changed, fresh)

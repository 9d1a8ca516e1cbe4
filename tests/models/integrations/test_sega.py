"""SEGA on the diffusers families: each call's tables come from the spectrum of that call's own latent.

The harness (test_families.py) runs sega on every family that takes it (identity at and inside the trained
grid, `remove()`, a change beyond); context parallelism is in test_context_parallel.py. Here: the tables are
the port's formula on the call's latent (Flux's packed tokens, Wan's patched video latent), each call reads
its own latent, and the families sega cannot serve are refused by name.
"""

import numpy as np
import pytest
import torch

from axialrope.models import apply_extrapolation
from axialrope.models.integrations.registry import methods_for, refusal


def _full(table):
    """(n, pairs) -> (n, 2 pairs): each pair twice, as diffusers' interleaved tables."""
    return np.repeat(table, 2, axis=1)


def test_flux_tables_are_the_ports_formula_on_the_calls_tokens(tiny, sega_port):
    family, small = tiny.FAMILY["flux"], tiny.TINY["flux"]
    model = small.make()
    grid, trained = (16, 12), small.trained  # beyond the tiny trained (8, 8) on both axes, unevenly
    handle = apply_extrapolation(model, "sega", trained_grid=trained)
    cos, sin = tiny.rope_table(model, family, small, grid, 0.7)
    handle.remove()
    inputs = small.inputs(model, grid, 0.7)
    tokens, h, w = inputs["hidden_states"].numpy(), *grid
    profiles = sega_port.axis_profiles(tokens, h, w, max(h // 2, 8), max(w // 2, 8))
    spread = sega_port.spread(sega_port.radial_profile(tokens, h, w, max(h, w) // 2))
    ids = torch.cat([inputs["txt_ids"], inputs["img_ids"]]).numpy()
    dims, scale = model.config.axes_dims_rope, max(h / trained[0], w / trained[1])
    index_axis = ids[:, :1] * 10000.0 ** -(np.arange(0, dims[0], 2) / dims[0])
    parts = [(np.cos(index_axis), np.sin(index_axis))]
    for axis, (profile, n, t) in enumerate(zip(profiles, grid, trained, strict=True), start=1):
        parts.append(sega_port.axis_table(dims[axis], 10000.0, scale, ids[:, axis], profile, spread, n, t))
    expected_cos = np.concatenate([_full(p[0]) for p in parts], axis=1)
    expected_sin = np.concatenate([_full(p[1]) for p in parts], axis=1)
    np.testing.assert_allclose(cos.numpy(), expected_cos, atol=2e-6)
    np.testing.assert_allclose(sin.numpy(), expected_sin, atol=2e-6)


def test_each_call_reads_its_own_latent(tiny):
    family, small = tiny.FAMILY["wan"], tiny.TINY["wan"]
    model = small.make()
    grid = tuple(2 * n for n in small.trained)
    timestep = family.time.timestep_at(0.5)
    handle = apply_extrapolation(model, "sega", trained_grid=small.trained)
    first = tiny.rope_table(model, family, small, grid, timestep)
    inputs = small.inputs(model, grid, timestep)
    seen = []
    hook = handle.rope.register_forward_hook(lambda module, args, out: seen.append(out))
    with torch.no_grad():
        model(**{**inputs, "hidden_states": inputs["hidden_states"].flip(-1).cumsum(-2)}, return_dict=False)
    hook.remove()
    handle.remove()
    second = seen[0] if isinstance(seen[0], tuple) else (seen[0],)
    assert not all(torch.equal(a, b) for a, b in zip(first, second, strict=True))


@pytest.mark.parametrize("name", ["mochi", "sana-video", "ernie-image", "cosmos3", "joyimage-edit"])
def test_families_without_a_meaning_refuse_it_by_name(tiny, name):
    family, small = tiny.FAMILY[name], tiny.TINY[name]
    assert "sega" not in methods_for(family) and family.title in refusal(family, "sega")
    with pytest.raises(ValueError, match="sega"):
        apply_extrapolation(small.make(), "sega", trained_grid=small.trained)


def test_a_call_without_its_latent_is_an_error(tiny):
    small = tiny.TINY["flux"]
    model = small.make()
    inputs = small.inputs(model, (16, 16), 0.7)
    with apply_extrapolation(model, "sega", trained_grid=small.trained), pytest.raises(ValueError, match="latent"):
        model(**{**inputs, "hidden_states": None})

"""reference="untwist" (Untwisting RoPE, arXiv 2602.05013) on Flux Kontext, Flux.2, Qwen-Image-Edit and BriaFibo-Edit.

The rule's whole effect, at every size: the untouched model (or the same method under "cover") with each
attention's reference keys, right after their norm, multiplied per pair by the paper's ramp written out
here in float64 (spatial axes only; each pair's factor on both of its channels). Queries, values, text
keys and the output's own keys are unchanged; without references the model is untouched; `remove()`
takes the hooks away.
"""

import numpy as np
import pytest
import torch

from axialrope.frequencies import KeyBands
from axialrope.models import apply_extrapolation

TRAINED = (4, 4)
TIMESTEP = 0.6  # sigma: t for all three families


def ramp(pairs: int, t: float, bands: KeyBands) -> np.ndarray:
    """s_j(t) written out: high + (low - high) (j / (n - 1))^beta, the ends linear in 1 - t."""
    progress = 1.0 - t
    high = bands.high_start + (bands.high_end - bands.high_start) * progress
    low = bands.low_start + (bands.low_end - bands.low_start) * progress
    return high + (low - high) * (np.arange(pairs) / (pairs - 1)) ** bands.beta


def channel_factors(dims, roles, head_dim, t, bands) -> torch.Tensor:
    """(head_dim,) float32: interleaved pairs, spatial axes the ramp, other axes and unrotated channels 1."""
    pairs = [
        ramp(d // 2, t, bands) if role == "spatial" else np.ones(d // 2) for d, role in zip(dims, roles, strict=True)
    ]
    per_channel = np.repeat(np.concatenate(pairs), 2)
    per_channel = np.concatenate([per_channel, np.ones(head_dim - len(per_channel))])
    return torch.from_numpy(per_channel).float()


def scaled_reference_keys(model, n_reference: int, factors: torch.Tensor) -> list:
    """The test's own hooks: every `norm_k` output's last n_reference rows times `factors`."""

    def hook(module, args, out):
        out = out.clone()
        out[:, -n_reference:] = out[:, -n_reference:] * factors
        return out

    return [m.norm_k.register_forward_hook(hook) for m in model.modules() if hasattr(m, "processor")]


def run(model, inputs):
    with torch.no_grad():
        return model(**inputs, return_dict=False)[0]


# -- the three edit families: (model, inputs with references, number of reference rows, dims, roles) --------


def kontext(tiny, output, reference):
    from diffusers import FluxKontextPipeline

    model = tiny.make_flux()
    inputs = tiny.TINY["flux"].inputs(None, output, TIMESTEP)
    ids = FluxKontextPipeline._prepare_latent_image_ids(1, *reference, "cpu", torch.float32)
    ids[..., 0] = 1
    inputs["img_ids"] = torch.cat([inputs["img_ids"], ids])
    inputs["hidden_states"] = torch.randn(1, len(inputs["img_ids"]), 4, generator=torch.Generator().manual_seed(1))
    return model, inputs, len(ids), "flux"


def bria_fibo_edit(tiny, output, reference):
    """BriaFiboEditPipeline's layout: the reference's Flux ids on index 1 after the output's."""
    from diffusers import FluxKontextPipeline

    small = tiny.TINY["bria-fibo"]
    model = small.make()
    inputs = small.inputs(model, output, TIMESTEP)
    ids = FluxKontextPipeline._prepare_latent_image_ids(1, *reference, "cpu", torch.float32)
    ids[..., 0] = 1
    inputs["img_ids"] = torch.cat([inputs["img_ids"], ids])
    channels = inputs["hidden_states"].shape[-1]
    inputs["hidden_states"] = torch.randn(
        1, len(inputs["img_ids"]), channels, generator=torch.Generator().manual_seed(1)
    )
    return model, inputs, len(ids), "bria-fibo"


def flux2(tiny, output, reference):
    from diffusers import Flux2Pipeline

    small = tiny.TINY["flux2"]
    model = small.make()
    inputs = small.inputs(model, output, TIMESTEP)
    ids = Flux2Pipeline._prepare_image_ids([torch.empty(1, 4, *reference)])  # t = 10
    inputs["img_ids"] = torch.cat([inputs["img_ids"], ids], dim=1)
    rows = inputs["img_ids"].shape[1]
    inputs["hidden_states"] = torch.randn(1, rows, 4, generator=torch.Generator().manual_seed(1))
    return model, inputs, ids.shape[1], "flux2"


def qwen_edit(tiny, output, reference):
    model = tiny.make_qwen()
    inputs = tiny.TINY["qwen-image"].inputs(None, output, TIMESTEP)
    inputs["img_shapes"] = [[(1, *output), (1, *reference)]]
    rows = output[0] * output[1] + reference[0] * reference[1]
    inputs["hidden_states"] = torch.randn(1, rows, 16, generator=torch.Generator().manual_seed(1))
    return model, inputs, reference[0] * reference[1], "qwen-image"


EDITORS = [kontext, flux2, qwen_edit, bria_fibo_edit]


DEFAULTS = KeyBands()


def factors_for(tiny, model, name, bands=DEFAULTS):
    family = tiny.FAMILY[name]
    dims, _ = family.rope_axes.resolve(model.config)
    head_dim = model.config.attention_head_dim
    return channel_factors(dims, family.axes, head_dim, family.time.to_t(TIMESTEP), bands)


@pytest.mark.parametrize("editor", EDITORS)
@pytest.mark.parametrize("method", ["none", "yarn", "dype-yarn"])
def test_within_the_trained_grid_untwist_scales_the_reference_keys_only(tiny, editor, method):
    model, inputs, n_reference, name = editor(tiny, TRAINED, TRAINED)
    hooks = scaled_reference_keys(model, n_reference, factors_for(tiny, model, name))
    expected = run(model, inputs)
    for hook in hooks:
        hook.remove()
    plain = run(model, inputs)
    with apply_extrapolation(model, method, trained_grid=TRAINED, reference="untwist"):
        ours = run(model, inputs)
    torch.testing.assert_close(ours, expected, rtol=0, atol=1e-6)
    assert not torch.allclose(ours, plain, rtol=0, atol=1e-4)  # the scaling does something
    assert torch.equal(run(model, inputs), plain)  # removed: the untouched model, bit for bit


@pytest.mark.parametrize("editor", EDITORS)
def test_beyond_the_trained_grid_untwist_is_cover_with_the_reference_keys_scaled(tiny, editor):
    model, inputs, n_reference, name = editor(tiny, (8, 8), TRAINED)
    with apply_extrapolation(model, "yarn", trained_grid=TRAINED, reference="cover"):
        hooks = scaled_reference_keys(model, n_reference, factors_for(tiny, model, name))
        expected = run(model, inputs)
        for hook in hooks:
            hook.remove()
    with apply_extrapolation(model, "yarn", trained_grid=TRAINED, reference="untwist"):
        ours = run(model, inputs)
    torch.testing.assert_close(ours, expected, rtol=0, atol=1e-6)


@pytest.mark.parametrize("editor", EDITORS)
def test_without_references_untwist_changes_nothing(tiny, editor):
    model, inputs, _, name = editor(tiny, TRAINED, TRAINED)
    small = tiny.TINY[name]
    inputs = small.inputs(model, TRAINED, TIMESTEP)
    plain = run(model, inputs)
    with apply_extrapolation(model, "none", trained_grid=TRAINED, reference="untwist"):
        assert torch.equal(run(model, inputs), plain)


def test_each_call_scales_by_its_own_time_and_settings(tiny):
    model, inputs, n_reference, name = kontext(tiny, TRAINED, TRAINED)
    bands = KeyBands(high_start=0.1, high_end=0.9, low_start=1.2, low_end=1.0, beta=1.5)
    expected = {}
    for timestep in (1.0, 0.25):
        inputs["timestep"] = torch.tensor([timestep])
        t = tiny.FAMILY[name].time.to_t(timestep)
        dims, _ = tiny.FAMILY[name].rope_axes.resolve(model.config)
        factors = channel_factors(dims, tiny.FAMILY[name].axes, model.config.attention_head_dim, t, bands)
        hooks = scaled_reference_keys(model, n_reference, factors)
        expected[timestep] = run(model, inputs)
        for hook in hooks:
            hook.remove()
    with apply_extrapolation(model, "none", trained_grid=TRAINED, reference=bands):
        for timestep in (1.0, 0.25):
            inputs["timestep"] = torch.tensor([timestep])
            torch.testing.assert_close(run(model, inputs), expected[timestep], rtol=0, atol=1e-6)


def test_remove_takes_the_hooks_away(tiny):
    model, inputs, _, _ = kontext(tiny, TRAINED, TRAINED)
    counts = [len(m.norm_k._forward_hooks) for m in model.modules() if hasattr(m, "processor")]
    handle = apply_extrapolation(model, "pi", trained_grid=TRAINED, reference="untwist")
    assert all(len(m.norm_k._forward_hooks) == 1 for m in model.modules() if hasattr(m, "processor"))
    handle.remove()
    assert [len(m.norm_k._forward_hooks) for m in model.modules() if hasattr(m, "processor")] == counts


def test_untwist_is_refused_where_the_reference_rows_are_not_known(tiny):
    flux3 = tiny.TINY["flux3"].make()
    with pytest.raises(ValueError, match='reference="untwist" is not available for .*apart'):
        apply_extrapolation(flux3, "pi", reference="untwist")
    assert "_axialrope_extrapolation" not in vars(flux3)


def test_untwist_is_refused_under_processors_that_fuse_the_key_norm(tiny):
    from axialrope.models.integrations.fused_processors import use_fused_qk_norm_rope

    model = tiny.make_flux()
    use_fused_qk_norm_rope(model)
    with pytest.raises(ValueError, match="FusedFluxAttnProcessor"):
        apply_extrapolation(model, "pi", trained_grid=TRAINED, reference="untwist")
    assert "_axialrope_extrapolation" not in vars(model)
    assert all(not m.norm_k._forward_hooks for m in model.modules() if hasattr(m, "processor"))


def test_a_bad_reference_value_is_refused(tiny):
    model = tiny.make_flux()
    with pytest.raises(ValueError, match="or a KeyBands"):
        apply_extrapolation(model, "pi", trained_grid=TRAINED, reference=0.5)


def test_a_deep_copy_carries_its_own_hooks_and_threads_their_own_times(tiny):
    import copy
    import threading

    model, inputs, _, _ = kontext(tiny, TRAINED, TRAINED)
    plain = run(model, inputs)
    handle = apply_extrapolation(model, "none", trained_grid=TRAINED, reference="untwist")
    ours = {t: run(model, dict(inputs, timestep=torch.tensor([t]))) for t in (1.0, 0.2)}
    clone = copy.deepcopy(model)
    assert torch.equal(run(clone, dict(inputs, timestep=torch.tensor([1.0]))), ours[1.0])
    seen = {}
    threads = [
        threading.Thread(target=lambda t=t: seen.__setitem__(t, run(model, dict(inputs, timestep=torch.tensor([t])))))
        for t in (1.0, 0.2)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(torch.equal(seen[t], ours[t]) for t in ours)
    vars(clone)["_axialrope_extrapolation"].remove()
    assert torch.equal(run(clone, inputs), plain)
    assert torch.equal(run(model, dict(inputs, timestep=torch.tensor([1.0]))), ours[1.0])  # the original keeps its own
    handle.remove()
    assert torch.equal(run(model, inputs), plain)


def test_a_call_under_inference_mode_leaves_a_later_call_with_gradients_working(tiny):
    model, inputs, _, _ = kontext(tiny, TRAINED, TRAINED)
    with apply_extrapolation(model, "none", trained_grid=TRAINED, reference="untwist"):
        with torch.inference_mode():
            first = model(**inputs, return_dict=False)[0]
        inputs["hidden_states"].requires_grad_(True)
        again = model(**inputs, return_dict=False)[0]
        again.sum().backward()  # the factors made under inference_mode are not reused here
    assert torch.equal(first, again.detach())
    assert inputs["hidden_states"].grad.abs().sum() > 0

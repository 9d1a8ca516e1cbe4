"""Reference images in the generated image's sequence (Flux Kontext, Flux.2, Flux3, Qwen-Image-Edit / Edit Plus)
beyond the trained grid: the `reference` option of apply_extrapolation.

- Within the trained grid every method, under either rule, is the untouched model, references included.
- "cover" (the default) maps each reference onto the generated image's extent, token edges to token
  edges, so reference token k's centre sits at the centre of the output tokens its region covers:
  ((k + 1/2) L_out / L_ref - 1/2) tokens from the output's first token, per spatial axis. The tables
  of every token are the method's formula at those positions (float64), the plan the output's grid.
- "keep" leaves the pipeline's positions: Kontext's and Flux.2's references then sit over the output's
  first tokens (the picture stuck in the top-left corner), Qwen-Edit's over its central ones.
- A reference as large as the output is where the pipeline put it under both rules.
"""

import numpy as np
import pytest
import torch

from axialrope import Extrapolation
from axialrope.models import apply_extrapolation
from axialrope.models.integrations.registry import methods_for

TRAINED = (4, 4)
TIMESTEP = 0.6  # sigma: t for the Flux-like families, and QwenImagePipeline's timestep


def covering(n_ref: int, n_out: int, first: float = 0.0, spacing: float = 1.0) -> np.ndarray:
    """Where cover puts a reference's n_ref tokens on an axis whose output has n_out tokens from `first`:
    token k at the centre of the output region its own region covers."""
    return first + spacing * ((np.arange(n_ref) + 0.5) * n_out / n_ref - 0.5)


# -- Flux Kontext: the reference on index 1, its (y, x) from 0 ---------------------------------------------------


def kontext_inputs(tiny, output, references, timestep=TIMESTEP):
    """FluxKontextPipeline's inputs: cat(output ids, reference ids with index 1), from its own method."""
    from diffusers import FluxKontextPipeline

    inputs = tiny.TINY["flux"].inputs(None, output, timestep)
    ids = [inputs["img_ids"]]
    for size in references:
        reference = FluxKontextPipeline._prepare_latent_image_ids(1, *size, "cpu", torch.float32)
        reference[..., 0] = 1  # as prepare_latents sets it
        ids.append(reference)
    inputs["img_ids"] = torch.cat(ids)
    inputs["hidden_states"] = torch.randn(1, len(inputs["img_ids"]), 4, generator=torch.Generator().manual_seed(1))
    return inputs


def run(model, inputs):
    with torch.no_grad():
        return model(**inputs, return_dict=False)[0]


def flux_table(model, inputs):
    seen = []
    hook = model.pos_embed.register_forward_hook(lambda m, a, out: seen.append(out))
    try:
        run(model, inputs)
    finally:
        hook.remove()
    return seen[0]


@pytest.mark.parametrize("rule", ["cover", "keep"])
@pytest.mark.parametrize("references", [[(4, 4)], [(2, 3)]])
def test_kontext_within_the_trained_grid_is_the_untouched_model(tiny, rule, references):
    model = tiny.make_flux()
    inputs = kontext_inputs(tiny, TRAINED, references)
    plain = run(model, inputs)
    for method in methods_for(tiny.FAMILY["flux"]):
        handle = apply_extrapolation(
            model, Extrapolation(method, entropy_scaling=True), trained_grid=TRAINED, reference=rule
        )
        assert torch.equal(run(model, inputs), plain), (method, references)
        handle.remove()


@pytest.mark.parametrize("method", ["pi", "yarn", "dype-yarn"])
@pytest.mark.parametrize("output", [(8, 8), (8, 12)])
def test_kontext_cover_puts_the_reference_over_the_whole_output(tiny, reference, authors, method, output):
    model = tiny.make_flux()
    inputs = kontext_inputs(tiny, output, [TRAINED])
    handle = apply_extrapolation(model, method, trained_grid=TRAINED)  # reference="cover" is the default
    ours = flux_table(model, inputs)
    handle.remove()
    positions = inputs["img_ids"].double().clone()
    rows = positions[:, 0] == 1
    positions[rows, 1] = torch.from_numpy(np.repeat(covering(4, output[0]), 4))
    positions[rows, 2] = torch.from_numpy(np.tile(covering(4, output[1]), 4))
    expected = reference.ids_reference(
        tiny.FAMILY["flux"],
        model,
        inputs,
        output,
        TRAINED,
        method,
        TIMESTEP,
        authors,
        positions=torch.cat([inputs["txt_ids"].double(), positions]),
    )
    for a, b in zip(ours, expected, strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=2e-6)


def test_kontext_keep_leaves_the_reference_over_the_first_tokens(tiny, reference, authors):
    model = tiny.make_flux()
    inputs = kontext_inputs(tiny, (8, 8), [TRAINED])
    handle = apply_extrapolation(model, "pi", trained_grid=TRAINED, reference="keep")
    ours = flux_table(model, inputs)
    handle.remove()
    expected = reference.ids_reference(tiny.FAMILY["flux"], model, inputs, (8, 8), TRAINED, "pi", TIMESTEP, authors)
    for a, b in zip(ours, expected, strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=2e-6)


def test_kontext_plans_for_the_output_under_cover_and_for_every_image_under_keep(tiny):
    """A 4 x 4 output with an 8 x 8 reference: within the trained grid for cover, 2x for keep."""
    model = tiny.make_flux()
    inputs = kontext_inputs(tiny, TRAINED, [(8, 8)])
    plain = run(model, inputs)
    with apply_extrapolation(model, "pi", trained_grid=TRAINED, reference="cover"):
        assert torch.equal(run(model, inputs), plain)
    with apply_extrapolation(model, "pi", trained_grid=TRAINED, reference="keep"):
        assert not torch.equal(run(model, inputs), plain)


@pytest.mark.parametrize("method", ["pi", "dype-yarn"])
def test_a_reference_as_large_as_the_output_stays_where_the_pipeline_put_it(tiny, method):
    model = tiny.make_flux()
    inputs = kontext_inputs(tiny, (8, 8), [(8, 8)])
    tables = {}
    for rule in ("cover", "keep"):
        with apply_extrapolation(model, method, trained_grid=TRAINED, reference=rule):
            tables[rule] = flux_table(model, inputs)
    assert all(torch.equal(a, b) for a, b in zip(tables["cover"], tables["keep"], strict=True))


def test_the_reference_option_is_checked(tiny):
    model = tiny.make_flux()
    with pytest.raises(ValueError, match="reference must be one of"):
        apply_extrapolation(model, "pi", trained_grid=TRAINED, reference="stretch")
    assert "_axialrope_extrapolation" not in vars(model)


# -- Flux.2: references on t = 10, 20, ...; Flux3: references apart, on l = -1, -2, ..., ids 0.5 apart ---------------


def test_flux2_cover_maps_each_reference_onto_the_output(tiny, reference, authors):
    from diffusers import Flux2Pipeline

    model, small, family = tiny.TINY["flux2"].make(), tiny.TINY["flux2"], tiny.FAMILY["flux2"]
    output, sizes = (8, 8), [(4, 4), (2, 8)]
    inputs = small.inputs(model, output, TIMESTEP)
    references = Flux2Pipeline._prepare_image_ids([torch.empty(1, 4, *size) for size in sizes])  # t = 10, 20
    inputs["img_ids"] = torch.cat([inputs["img_ids"], references], dim=1)
    inputs["hidden_states"] = torch.randn(1, inputs["img_ids"].shape[1], 4, generator=torch.Generator().manual_seed(1))
    plain = run(model, inputs)
    handle = apply_extrapolation(model, "yarn", trained_grid=TRAINED)
    ours = tiny.rope_table(model, family, _Given(inputs), output, TIMESTEP)
    beyond = run(model, inputs)
    handle.remove()
    positions = inputs["img_ids"][0].double().clone()
    for i, (h, w) in enumerate(sizes):
        rows = positions[:, 0] == 10.0 * (i + 1)
        positions[rows, 1] = torch.from_numpy(np.repeat(covering(h, output[0]), w))
        positions[rows, 2] = torch.from_numpy(np.tile(covering(w, output[1]), h))
    expected = reference.ids_reference(
        family,
        model,
        inputs,
        output,
        TRAINED,
        "yarn",
        TIMESTEP,
        authors,
        positions=torch.cat([positions, inputs["txt_ids"][0].double()]),
    )
    for a, b in zip(ours, expected, strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=2e-6)
    assert not torch.equal(beyond, plain)


def test_flux3_cover_maps_its_separate_reference_ids_at_their_spacing(tiny, reference, authors):
    model, small, family = tiny.TINY["flux3"].make(), tiny.TINY["flux3"], tiny.FAMILY["flux3"]
    spacing = tiny.families.FLUX3_ROPE_SCALE
    output = (8, 8)
    inputs = small.inputs(model, output, TIMESTEP)
    inputs["image_cond_ids"] = tiny.families.flux3_ids(*TRAINED, layer=-1)
    inputs["image_cond_hidden_states"] = torch.randn(1, 16, 4, generator=torch.Generator().manual_seed(2))
    handle = apply_extrapolation(model, "pi", trained_grid=TRAINED)
    ours = tiny.rope_table(model, family, _Given(inputs), output, TIMESTEP)
    handle.remove()
    placed = inputs["image_cond_ids"].double().clone()
    placed[:, 1] = torch.from_numpy(np.repeat(covering(4, 8, spacing=spacing), 4))
    placed[:, 2] = torch.from_numpy(np.tile(covering(4, 8, spacing=spacing), 4))
    positions = torch.cat([inputs["txt_ids"].double(), inputs["img_ids"].double(), placed])
    expected = reference.ids_reference(
        family, model, inputs, output, TRAINED, "pi", TIMESTEP, authors, positions=positions
    )
    for a, b in zip(ours, expected, strict=True):
        torch.testing.assert_close(a, b, rtol=0, atol=2e-6)


class _Given:
    """A tiny config whose inputs are fixed ones (for `rope_table`)."""

    def __init__(self, inputs):
        self.given = inputs

    def inputs(self, model, grid, timestep):
        return self.given


# -- Qwen-Image-Edit (Plus): references after the output in img_shapes, frames 1, 2, ..., centred y and x --------


def qwen_edit_inputs(tiny, output, references, timestep=TIMESTEP):
    inputs = tiny.TINY["qwen-image"].inputs(None, output, timestep)
    shapes = [(1, *output), *((1, *size) for size in references)]
    inputs["img_shapes"] = [shapes]
    tokens = sum(h * w for _, h, w in shapes)
    inputs["hidden_states"] = torch.randn(1, tokens, 16, generator=torch.Generator().manual_seed(1))
    return inputs


def qwen_image_table(model, inputs):
    seen = []
    hook = model.pos_embed.register_forward_hook(lambda m, a, out: seen.append(out))
    try:
        run(model, inputs)
    finally:
        hook.remove()
    return seen[0][0]


def centred(n: int) -> np.ndarray:
    return np.arange(n) - (n - n // 2)


@pytest.mark.parametrize("rule", ["cover", "keep"])
@pytest.mark.parametrize("references", [[(4, 4)], [(4, 4), (2, 3)]])
def test_qwen_edit_within_the_trained_grid_is_the_untouched_model(tiny, rule, references):
    model = tiny.make_qwen()
    inputs = qwen_edit_inputs(tiny, TRAINED, references)
    plain = run(model, inputs)
    for method in methods_for(tiny.FAMILY["qwen-image"]):
        handle = apply_extrapolation(
            model, Extrapolation(method, entropy_scaling=True), trained_grid=TRAINED, reference=rule
        )
        assert torch.equal(run(model, inputs), plain), (method, references)
        handle.remove()


@pytest.mark.parametrize("rule", ["cover", "keep"])
@pytest.mark.parametrize("method", ["pi", "ntk", "yarn"])
def test_qwen_edit_plus_references_follow_the_rule(tiny, reference, authors, rule, method):
    """Edit Plus with two references (4 x 4 and 2 x 6) under an 8 x 12 output: each reference's y and x
    under cover are `covering` from the output's first centred position; under keep, its own."""
    model, family = tiny.make_qwen(), tiny.FAMILY["qwen-image"]
    output, sizes = (8, 12), [(4, 4), (2, 6)]
    inputs = qwen_edit_inputs(tiny, output, sizes)
    handle = apply_extrapolation(model, method, trained_grid=TRAINED, reference=rule)
    ours = qwen_image_table(model, inputs)
    handle.remove()
    grid = output if rule == "cover" else tuple(max(n, *(s[a] for s in sizes)) for a, n in enumerate(output))
    per_axis = reference._per_axis(family, model.config, method, grid, TRAINED, TIMESTEP, authors)
    gain = np.sqrt(reference.yarn_logit_scale(method, TRAINED, grid, TIMESTEP))
    parts = []
    for frame, (h, w) in enumerate([output, *sizes]):
        ys, xs = centred(h), centred(w)
        if frame and rule == "cover":
            ys, xs = covering(h, output[0], centred(output[0])[0]), covering(w, output[1], centred(output[1])[0])
        where = np.stack(np.meshgrid([float(frame)], ys, xs, indexing="ij"), -1).reshape(-1, 3)
        cos, sin = reference.interleaved(
            [where[:, a, None] * f for a, (f, _) in enumerate(per_axis)], [g * gain for _, g in per_axis]
        )
        parts.append(torch.complex(cos[:, ::2], sin[:, ::2]))
    torch.testing.assert_close(ours, torch.cat(parts), rtol=0, atol=2e-6)


def test_qwen_edit_cover_and_keep_differ_beyond_only_where_a_reference_is_smaller(tiny):
    model = tiny.make_qwen()
    for sizes, same in (([(4, 4)], False), ([(8, 8)], True)):
        inputs = qwen_edit_inputs(tiny, (8, 8), sizes)
        outputs = {}
        for rule in ("cover", "keep"):
            with apply_extrapolation(model, "ntk", trained_grid=TRAINED, reference=rule):
                outputs[rule] = run(model, inputs)
        assert torch.equal(outputs["cover"], outputs["keep"]) is same, sizes

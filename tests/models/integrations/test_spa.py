"""spa on the diffusers families: the attention run per position variant and averaged, against the port's
rules and the formula in float64; bit-identical at and inside the trained grid; restored by remove()."""

import numpy as np
import pytest
import torch

from axialrope import Extrapolation
from axialrope.models import apply_extrapolation
from axialrope.models.integrations.registry import FAMILIES, methods_for, refusal
from axialrope.models.integrations.spa_attention import AveragingProcessor

# the families whose rope builds the variants (ids kinds called once on all ids, QwenEmbedRope's kind, Wan's grid)
REACHED = [
    "flux",
    "flux-controlnet",
    "chroma",
    "longcat-image",
    "ovis-image",
    "krea2",
    "bria",
    "bria-fibo",
    "qwen-image",
    "qwen-image-controlnet",
    "nucleusmoe-image",
    "wan",
    "wan-vace",
    "wan-animate",
    "skyreels-v2",
]


def _double(inputs):
    return {k: v.double() if torch.is_tensor(v) and v.is_floating_point() else v for k, v in inputs.items()}


@pytest.mark.parametrize("name", REACHED)
def test_at_and_inside_the_trained_grid_bit_identical_and_removed_exactly(name, tiny):
    small = tiny.TINY[name]
    model = small.make()
    beyond = tuple(2 * n for n in small.trained)
    inside = small.inside or tuple(n - 1 for n in small.trained)
    expected = {grid: tiny.run(model, small, grid, 0.5) for grid in (small.trained, inside, beyond)}
    processors = [m.processor for m in model.modules() if hasattr(m, "processor")]
    handle = apply_extrapolation(model, "spa", trained_grid=small.trained)
    assert all(isinstance(m.processor, AveragingProcessor) for m in model.modules() if hasattr(m, "processor"))
    for grid in (small.trained, inside):
        assert torch.equal(tiny.run(model, small, grid, 0.5), expected[grid]), grid
    spa = tiny.run(model, small, beyond, 0.5)
    assert not torch.allclose(spa, expected[beyond])
    handle.remove()
    assert [m.processor for m in model.modules() if hasattr(m, "processor")] == processors
    for grid, output in expected.items():
        assert torch.equal(tiny.run(model, small, grid, 0.5), output)


def _angles(ids, dims, theta=10000.0):
    """(seq, sum(dims) // 2) float64 angles of Flux's rope: per axis, the ids' column times theta^(-2i/d)."""
    parts = [ids[:, [a]] * theta ** -(np.arange(0, d, 2) / d) for a, d in enumerate(dims)]
    return np.concatenate(parts, axis=1)


@pytest.mark.parametrize("grid", [(8, 8), (8, 6), (6, 12)])
def test_flux_attention_is_the_ports_average_in_float64(grid, tiny, spa_port):
    """Flux's single-stream attention (its processor returns the attention output itself): the mean over the
    port's variants of softmax(q k^T / sqrt(d)) v, q and k rotated at the variant's ids, written in float64.
    The port's limits set to the tiny model's: trained extent 4, bundled indices up to 3."""
    model = tiny.make_flux().double()
    handle = apply_extrapolation(model, "spa", trained_grid=(4, 4))
    attn = model.single_transformer_blocks[0].attn
    seen = {}
    hook = attn.register_forward_hook(
        lambda m, a, kw, out: seen.update(x=kw["hidden_states"], out=out), with_kwargs=True
    )
    inputs = _double(tiny.families.flux_inputs(model, grid, 0.5))
    with torch.no_grad():
        model(**inputs)
    hook.remove()

    ids = np.concatenate([inputs["txt_ids"].numpy(), inputs["img_ids"].numpy()])
    variants = spa_port.variants(ids, trained_extent=4, largest_index=3)
    assert len(variants) == 2 * handle.rope.plan(grid).bundle_size - 1 > 1
    with torch.no_grad():
        x = seen["x"]
        q, k, v = (proj(x).unflatten(-1, (attn.heads, -1)) for proj in (attn.to_q, attn.to_k, attn.to_v))
        q, k = attn.norm_q(q), attn.norm_k(k)
    q, k, v = (t.transpose(1, 2).numpy() for t in (q, k, v))  # (b, heads, seq, d)
    angles = [_angles(variant, (4, 6, 6)) for variant in variants]
    expected = spa_port.averaged_attention(q, k, v, angles, layout="interleaved")
    expected = torch.from_numpy(expected).transpose(1, 2).flatten(2)
    torch.testing.assert_close(seen["out"], expected, rtol=1e-5, atol=1e-7)  # the tables are float32


def test_a_joint_block_averages_both_streams_outputs(tiny):
    """The processor's whole output (image and text streams, after their projections) is the mean over the
    variants of the family's own processor with each variant's table."""
    model = tiny.make_flux().double()
    handle = apply_extrapolation(model, "spa", trained_grid=(4, 4))
    attn = model.transformer_blocks[0].attn
    captured = {}

    def hook(module, args, kwargs, out):
        captured.update(kwargs=dict(kwargs), out=out)

    remove = attn.register_forward_hook(hook, with_kwargs=True)
    with torch.no_grad():
        model(**_double(tiny.families.flux_inputs(model, (8, 8), 0.5)))
    remove.remove()
    rope_ids = torch.cat([torch.zeros(4, 3), tiny.flux_ids(8, 8)]).double()
    layout = handle.rope.layout(rope_ids)
    tables = handle.rope.spa_tables(rope_ids, layout, handle.rope.plan(layout.grid))
    assert len(tables) == 5
    inner, kwargs = attn.processor.processor, captured["kwargs"]
    with torch.no_grad():
        outs = [inner(attn, **{**kwargs, "image_rotary_emb": table}) for table in tables]
    for got, *each in zip(captured["out"], *outs, strict=True):
        torch.testing.assert_close(got, torch.stack(each).mean(0), rtol=1e-12, atol=1e-12)


def test_reference_images_keep_their_positions(tiny):
    """Kontext-style ids: the reference image (index 1) is not bundled, the output's rows are."""
    model = tiny.make_flux()
    handle = apply_extrapolation(model, "spa", trained_grid=(4, 4))
    reference = tiny.flux_ids(4, 4)
    reference[:, 0] = 1
    ids = torch.cat([torch.zeros(2, 3), tiny.flux_ids(8, 8), reference])
    layout = handle.rope.layout(ids)
    assert layout.grid == (8, 8)
    plain = handle.rope.original(ids)
    for cos, sin in handle.rope.spa_tables(ids, layout, handle.rope.plan(layout.grid)):
        assert torch.equal(cos[-16:], plain[0][-16:]) and torch.equal(sin[-16:], plain[1][-16:])
        assert torch.equal(cos[:2], plain[0][:2])  # text rows at 0 stay at 0
    handle.remove()


def test_variants_unused_by_any_attention_raise(tiny):
    small = tiny.TINY["flux"]
    model = small.make()
    apply_extrapolation(model, "spa", trained_grid=small.trained)
    for module in model.modules():  # processors replaced after apply_extrapolation
        if isinstance(getattr(module, "processor", None), AveragingProcessor):
            module.processor = module.processor.processor
    with pytest.raises(RuntimeError, match="no attention call received them"):
        tiny.run(model, small, (8, 8), 0.5)
    tiny.run(model, small, (4, 4), 0.5)  # within the trained grid there is nothing to average


def test_every_family_takes_spa_or_refuses_it_by_name():
    """The families whose tables reach a wrapped processor take spa; every other gets the one refusal rule's reason."""
    assert [f.name for f in FAMILIES if refusal(f, "spa") is None] == REACHED
    for family in FAMILIES:
        assert ("spa" in methods_for(family)) == (family.name in REACHED)
        reason = refusal(family, "spa")
        assert reason is None or family.title in reason, family.name


def test_refused_families_are_left_untouched(tiny):
    for name in ("flux2", "hunyuan-video", "qwen-image-2.1"):
        model = tiny.TINY[name].make()
        with pytest.raises(ValueError, match="spa averages softmax attention"):
            apply_extrapolation(model, "spa")
        assert not hasattr(model, "_axialrope_extrapolation")
        assert not any(isinstance(getattr(m, "processor", None), AveragingProcessor) for m in model.modules())


def test_spa_options_reach_the_plan(tiny):
    small = tiny.TINY["flux"]
    model = small.make()
    handle = apply_extrapolation(model, "spa", trained_grid=small.trained, spa_bundle_size=4)
    assert handle.extrapolation == Extrapolation("spa", spa_bundle_size=4)
    assert handle.rope.plan((8, 8)).bundle_size == 4
    handle.remove()


def test_the_wrapper_passes_attributes_through_to_the_processor(tiny):
    """diffusers' enable_parallelism sets `_parallel_config` on each processor: the wrapped one must get it."""
    model = tiny.make_flux()
    apply_extrapolation(model, "spa", trained_grid=(4, 4))
    wrapper = model.transformer_blocks[0].attn.processor
    wrapper._parallel_config = "config"
    assert wrapper.processor._parallel_config == "config" and wrapper._parallel_config == "config"
    assert "_parallel_config" not in vars(wrapper)

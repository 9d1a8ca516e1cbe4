"""Fused q/k RMSNorm + RoPE processors inside diffusers' own Flux and Wan transformers."""

import copy

import pytest
import torch
from diffusers import DiTTransformer2DModel, FluxTransformer2DModel, WanTransformer3DModel
from diffusers.models.transformers.transformer_flux import FluxAttnProcessor
from diffusers.models.transformers.transformer_wan import WanAttnProcessor

from axialrope.models.integrations.fused_processors import (
    FusedFluxAttnProcessor,
    FusedWanAttnProcessor,
    use_fused_qk_norm_rope,
)


@pytest.fixture
def flux(perturb):
    torch.manual_seed(0)
    model = FluxTransformer2DModel(
        patch_size=1,
        in_channels=4,
        num_layers=1,
        num_single_layers=1,
        attention_head_dim=16,
        num_attention_heads=2,
        joint_attention_dim=32,
        pooled_projection_dim=16,
        axes_dims_rope=(4, 6, 6),
    )
    return perturb(model, std=0.1).eval()


def flux_inputs(batch=2, image=24, text=5):
    g = torch.Generator().manual_seed(1)
    return dict(
        hidden_states=torch.randn(batch, image, 4, generator=g),
        encoder_hidden_states=torch.randn(batch, text, 32, generator=g),
        pooled_projections=torch.randn(batch, 16, generator=g),
        timestep=torch.tensor([0.5, 0.8])[:batch],
        img_ids=torch.randn(image, 3, generator=g) * 4,
        txt_ids=torch.zeros(text, 3),
        return_dict=False,
    )


@pytest.fixture
def wan(perturb):
    torch.manual_seed(0)
    model = WanTransformer3DModel(
        patch_size=(1, 2, 2),
        num_attention_heads=2,
        attention_head_dim=12,
        in_channels=4,
        out_channels=4,
        text_dim=16,
        freq_dim=16,
        ffn_dim=32,
        num_layers=2,
        rope_max_seq_len=32,
    )
    return perturb(model, std=0.1).eval()


def wan_inputs(batch=2):
    g = torch.Generator().manual_seed(1)
    return dict(
        hidden_states=torch.randn(batch, 4, 3, 8, 8, generator=g),
        timestep=torch.tensor([10, 500])[:batch],
        encoder_hidden_states=torch.randn(batch, 7, 16, generator=g),
        return_dict=False,
    )


def _processors(model):
    return [m.processor for m in model.modules() if hasattr(m, "processor")]


@pytest.mark.parametrize("family", ["flux", "wan"])
def test_outputs_equal_diffusers_own_processors(family, request):
    model = request.getfixturevalue(family)
    inputs = flux_inputs() if family == "flux" else wan_inputs()
    with torch.no_grad():
        expected = model(**inputs)[0]
        fused = copy.deepcopy(model)
        replaced = use_fused_qk_norm_rope(fused)
        got = fused(**inputs)[0]
    stock = FluxAttnProcessor if family == "flux" else WanAttnProcessor
    twin = FusedFluxAttnProcessor if family == "flux" else FusedWanAttnProcessor
    assert replaced == len(_processors(model)) and all(type(p) is stock for p in _processors(model))
    assert all(type(p) is twin for p in _processors(fused))
    torch.testing.assert_close(got, expected, rtol=1e-5, atol=1e-5)


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
@pytest.mark.parametrize("family", ["flux", "wan"])
def test_on_cuda_outputs_equal_diffusers_own_processors(family, request):
    """The Triton kernel inside diffusers' transformers, float32 and bfloat16."""
    model = request.getfixturevalue(family).cuda()
    inputs = {
        name: v.cuda() if isinstance(v, torch.Tensor) else v
        for name, v in (flux_inputs() if family == "flux" else wan_inputs()).items()
    }
    fused = copy.deepcopy(model)
    use_fused_qk_norm_rope(fused)
    for dtype, tol in ((torch.float32, 1e-5), (torch.bfloat16, 5e-2)):
        cast = {
            name: v.to(dtype) if isinstance(v, torch.Tensor) and v.is_floating_point() and name != "timestep" else v
            for name, v in inputs.items()
        }
        with torch.no_grad():
            expected = model.to(dtype)(**cast)[0]
            got = fused.to(dtype)(**cast)[0]
        torch.testing.assert_close(got.float(), expected.float(), rtol=tol, atol=tol)


def test_flux_gradients_equal_diffusers_own(flux):
    inputs = flux_inputs()
    fused = copy.deepcopy(flux)
    use_fused_qk_norm_rope(fused)
    for model in (flux, fused):
        model(**inputs)[0].square().mean().backward()
    for (name, p), q in zip(flux.named_parameters(), fused.parameters(), strict=True):
        torch.testing.assert_close(q.grad, p.grad, rtol=1e-4, atol=1e-6, msg=name)


def test_wan_cross_attention_and_norm_free_calls_run_the_stock_code(wan):
    """Cross-attention (no rotary table) goes to WanAttnProcessor itself, unchanged."""
    fused = copy.deepcopy(wan)
    use_fused_qk_norm_rope(fused)
    attn = fused.blocks[0].attn2
    hidden, context = torch.randn(2, 6, 24), torch.randn(2, 7, 24)
    with torch.no_grad():
        expected = WanAttnProcessor()(wan.blocks[0].attn2, hidden, context)
        torch.testing.assert_close(attn.processor(attn, hidden, context), expected, rtol=0, atol=0)


def test_a_model_of_another_family_is_refused():
    model = DiTTransformer2DModel(
        num_attention_heads=2,
        attention_head_dim=8,
        in_channels=3,
        num_layers=1,
        sample_size=8,
        patch_size=2,
        num_embeds_ada_norm=4,
    )
    with pytest.raises(TypeError, match="no stock FluxAttnProcessor or WanAttnProcessor"):
        use_fused_qk_norm_rope(model)

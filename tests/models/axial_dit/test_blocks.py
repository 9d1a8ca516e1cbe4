"""The DiT's attention: q/k RMSNorm and RoPE fused into one pass give what the two modules gave."""

import pytest
import torch

import axialrope.models.axial_dit.blocks as blocks
from axialrope import apply_rotary_qk
from axialrope.models.axial_dit.blocks import Attention


def unfused(q, k, cos, sin, q_weight, k_weight, eps):
    """What Attention.project did before the fusion: the two nn.RMSNorm modules, then the rotation."""
    norm = lambda x, w: torch.nn.functional.rms_norm(x, (x.shape[-1],), w, eps)  # noqa: E731
    return apply_rotary_qk(norm(q, q_weight), norm(k, k_weight), cos, sin)


@pytest.fixture
def attention_and_inputs(perturb):
    torch.manual_seed(0)
    attn = perturb(Attention(64, 4, qk_norm=True), std=0.3)
    x = torch.randn(2, 24, 64)
    angles = torch.randn(24, 8, dtype=torch.float64) * 10
    return attn, x, (angles.cos().float(), angles.sin().float())


def test_the_fused_projection_equals_norms_then_rotation(attention_and_inputs, monkeypatch):
    attn, x, rope = attention_and_inputs
    fused = attn.project(x, rope)
    monkeypatch.setattr(blocks, "rms_norm_rotary_qk", unfused)
    for got, expected in zip(fused, attn.project(x, rope), strict=True):
        torch.testing.assert_close(got, expected, rtol=0, atol=1e-6)


def test_the_fused_attention_has_the_same_gradients(attention_and_inputs, monkeypatch):
    attn, x, rope = attention_and_inputs

    def gradients():
        attn.zero_grad()
        attn(x, rope).square().sum().backward()
        return {name: p.grad.clone() for name, p in attn.named_parameters()}

    fused = gradients()
    monkeypatch.setattr(blocks, "rms_norm_rotary_qk", unfused)
    for name, grad in gradients().items():  # float32 rounding, relative to each gradient's size
        torch.testing.assert_close(fused[name], grad, rtol=0, atol=1e-6 * grad.abs().max().item(), msg=name)


def test_a_qk_norm_dit_gives_the_outputs_of_the_unfused_one(make_model, monkeypatch):
    model = make_model(qk_norm=True, num_frames=4)
    x, t, labels = torch.randn(2, 3, 4, 8, 8), torch.tensor([10.0, 700.0]), torch.tensor([1, 2])
    fused = model(x, t, labels).sample
    monkeypatch.setattr(blocks, "rms_norm_rotary_qk", unfused)
    torch.testing.assert_close(fused, model(x, t, labels).sample, rtol=0, atol=1e-6)


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_on_cuda_the_fused_attention_equals_the_unfused_one(attention_and_inputs, monkeypatch):
    """The Triton kernels forward and backward inside the block."""
    attn, x, rope = attention_and_inputs
    attn, x, rope = attn.cuda(), x.cuda(), tuple(t.cuda() for t in rope)

    def run():
        attn.zero_grad()
        out = attn(x, rope)
        out.square().sum().backward()
        return out, {name: p.grad.clone() for name, p in attn.named_parameters()}

    fused_out, fused_grads = run()
    monkeypatch.setattr(blocks, "rms_norm_rotary_qk", unfused)
    out, grads = run()
    torch.testing.assert_close(fused_out, out, rtol=0, atol=1e-5)
    for name, grad in grads.items():
        torch.testing.assert_close(fused_grads[name], grad, rtol=0, atol=1e-5 * grad.abs().max().item(), msg=name)

"""The fused q/k RMSNorm + RoPE and its unfused peers, for benchmarks/rope_apply.py (its `fused` part).

Implementations, each with its own norm and its own table format (built once, outside the timing),
weights (head_dim,) in the inputs' dtype (as in a model cast to it) and eps 1e-6:
    axialrope fused       rms_norm_rotary_qk(q, k, cos, sin, q_weight, k_weight)
    axialrope fused interl. compiled   the same with interleaved pairs and the compiled kernel
                          forced: what a model inside torch.compile gets for interleaved pairs
                          (auto runs them eager on CPU)
    F.rms_norm + apply    torch's F.rms_norm on q and on k, then axialrope's apply_rotary_qk
    transformers          LlamaRMSNorm on q and on k, then llama's apply_rotary_pos_emb (full-width
                          tables in q's dtype, as LlamaRotaryEmbedding returns them)
    diffusers             diffusers' RMSNorm on q and on k, then apply_rotary_emb
                          (use_real_unbind_dim=-2: half layout, full-width float32 tables)
    floor                 q.clone() and k.clone(): what an out-of-place fused op must at least read
                          and write; with backward also a clone of both output gradients
    one multiply          q * q_weight and k * k_weight in torch: the cheapest op that computes and
                          rounds each element (with its backward, a weight gradient too)
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from diffusers.models.embeddings import apply_rotary_emb as diffusers_apply
from diffusers.models.normalization import RMSNorm as DiffusersRMSNorm
from transformers.models.llama.modeling_llama import LlamaRMSNorm
from transformers.models.llama.modeling_llama import apply_rotary_pos_emb as transformers_apply

from axialrope import apply_rotary_qk, rms_norm_rotary_qk, rotary_backend

EPS = 1e-6
FUSED_NAMES = (
    "floor",
    "one multiply",
    "axialrope fused",
    "axialrope fused eager",
    "axialrope fused interl. compiled",
    "F.rms_norm + apply",
    "transformers",
    "diffusers",
)
FUSED_PEERS = ("F.rms_norm + apply", "transformers", "diffusers")


def norm_weights(dim: int, dtype: torch.dtype) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(3)
    return tuple((1 + 0.1 * torch.randn(dim, generator=g)).to(dtype) for _ in range(2))


def fused_implementations(tables, dim: int, dtype: torch.dtype, eager_backend):
    """name -> f(q, k) for the fused part; `eager_backend()` is a context that forces the eager kernels."""
    cos, sin = tables["half"]
    full_cos, full_sin = tables["full_half"]
    low_cos, low_sin = full_cos.to(dtype)[None], full_sin.to(dtype)[None]
    q_weight, k_weight = (w.requires_grad_() for w in norm_weights(dim, dtype))
    modules = {}
    for name, cls in (("transformers", LlamaRMSNorm), ("diffusers", DiffusersRMSNorm)):
        norms = (cls(dim, eps=EPS).to(dtype), cls(dim, eps=EPS).to(dtype))
        with torch.no_grad():
            for norm, weight in zip(norms, (q_weight, k_weight), strict=True):
                norm.weight.copy_(weight)
        modules[name] = norms
    t_q, t_k = modules["transformers"]
    d_q, d_k = modules["diffusers"]

    def fused_eager(q, k):
        with eager_backend():
            return rms_norm_rotary_qk(q, k, cos, sin, q_weight, k_weight, EPS)

    def fused_interleaved_compiled(q, k):
        with rotary_backend("compiled"):
            return rms_norm_rotary_qk(q, k, cos, sin, q_weight, k_weight, EPS, "interleaved")

    return {
        "floor": lambda q, k: (q.clone(), k.clone()),
        "one multiply": lambda q, k: (q * q_weight, k * k_weight),
        "axialrope fused": lambda q, k: rms_norm_rotary_qk(q, k, cos, sin, q_weight, k_weight, EPS),
        "axialrope fused eager": fused_eager,
        "axialrope fused interl. compiled": fused_interleaved_compiled,
        "F.rms_norm + apply": lambda q, k: apply_rotary_qk(
            F.rms_norm(q, (dim,), q_weight, EPS), F.rms_norm(k, (dim,), k_weight, EPS), cos, sin
        ),
        "transformers": lambda q, k: transformers_apply(t_q(q), t_k(k), low_cos, low_sin),
        "diffusers": lambda q, k: (
            diffusers_apply(d_q(q), (full_cos, full_sin), use_real_unbind_dim=-2),
            diffusers_apply(d_k(k), (full_cos, full_sin), use_real_unbind_dim=-2),
        ),
    }


def check_fused_agreement(impls, q, k, dtype) -> None:
    """Every implementation must give axialrope's fused result."""
    with torch.no_grad():
        reference = impls["axialrope fused"](q, k)
        # bfloat16: each unfused peer rounds twice (transformers rounds its table to bfloat16 too)
        tol = dict(rtol=1e-5, atol=1e-5) if dtype == torch.float32 else dict(rtol=2e-2, atol=6e-2)
        for name in ("axialrope fused eager", *FUSED_PEERS):
            for ours, theirs in zip(reference, impls[name](q, k), strict=True):
                torch.testing.assert_close(
                    theirs.to(ours.dtype), ours, **tol, msg=lambda m, n=name: f"{n} disagrees: {m}"
                )


def fused_ratios(medians: dict[str, float]) -> dict[str, float]:
    """axialrope fused / floor, / each unfused peer, and its eager kernel / floor."""
    ratios = {
        "fused / floor": medians["axialrope fused"] / medians["floor"],
        "one multiply / floor": medians["one multiply"] / medians["floor"],
        "fused eager / floor": medians["axialrope fused eager"] / medians["floor"],
        "interl. compiled / floor": medians["axialrope fused interl. compiled"] / medians["floor"],
    }
    for peer in FUSED_PEERS:
        ratios[f"/ {peer}"] = medians["axialrope fused"] / medians[peer]
    return ratios


__all__ = ["FUSED_NAMES", "FUSED_PEERS", "check_fused_agreement", "fused_implementations", "fused_ratios"]

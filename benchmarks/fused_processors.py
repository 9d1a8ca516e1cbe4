"""A small Flux and Wan forward step with diffusers' own attention processors vs the fused ones.

    python benchmarks/fused_processors.py --threads 1

The fused processors (models/integrations/fused_processors.py) replace each attention's q/k
RMSNorm and RoPE by one `rms_norm_rotary_qk` pass; everything else in the step is diffusers'.
Both models are random, small enough for a CPU (2 double + 2 single Flux blocks, 2 Wan blocks,
8 heads of 64 channels) with a realistic token count. Per repeat both variants run once, in
alternating order; reported: median step times, their ratio, and the largest output difference.
axialrope's kernels are first brought to their steady state (`compiling.warm_up()`), as in a
long job; its first, eager-only call is timed too. A second table times the part that changes
alone, on Flux's q and k of this step: torch's RMSNorm and diffusers' `apply_rotary_emb` (what
FluxAttnProcessor runs) against `rms_norm_rotary_qk`, float32 and bfloat16.
"""

from __future__ import annotations

import argparse
import copy
import statistics
import time

import torch
from diffusers import FluxTransformer2DModel, WanTransformer3DModel
from diffusers.models.embeddings import apply_rotary_emb

from axialrope import rms_norm_rotary_qk
from axialrope.kernels import compiling
from axialrope.models.integrations.fused_processors import use_fused_qk_norm_rope


def flux_case(batch: int = 1):
    torch.manual_seed(0)
    model = FluxTransformer2DModel(
        patch_size=1,
        in_channels=16,
        num_layers=2,
        num_single_layers=2,
        attention_head_dim=64,
        num_attention_heads=8,
        joint_attention_dim=128,
        pooled_projection_dim=64,
        axes_dims_rope=(16, 24, 24),
    ).eval()
    image, text = 48 * 48, 64  # a 48 x 48 latent grid, 64 text tokens
    ys, xs = torch.meshgrid(torch.arange(48.0), torch.arange(48.0), indexing="ij")
    img_ids = torch.stack((torch.zeros(image), ys.flatten(), xs.flatten()), dim=-1)
    inputs = dict(
        hidden_states=torch.randn(batch, image, 16),
        encoder_hidden_states=torch.randn(batch, text, 128),
        pooled_projections=torch.randn(batch, 64),
        timestep=torch.full((batch,), 0.7),
        img_ids=img_ids,
        txt_ids=torch.zeros(text, 3),
        return_dict=False,
    )
    return "Flux (2 + 2 blocks, 2304 + 64 tokens)", model, inputs


def wan_case(batch: int = 1):
    torch.manual_seed(0)
    model = WanTransformer3DModel(
        patch_size=(1, 2, 2),
        num_attention_heads=8,
        attention_head_dim=64,
        in_channels=16,
        out_channels=16,
        text_dim=128,
        freq_dim=64,
        ffn_dim=1024,
        num_layers=2,
    ).eval()
    inputs = dict(
        hidden_states=torch.randn(batch, 16, 9, 32, 32),
        timestep=torch.full((batch,), 500),
        encoder_hidden_states=torch.randn(batch, 64, 128),
        return_dict=False,
    )
    return "Wan (2 blocks, 9 x 16 x 16 = 2304 tokens)", model, inputs


def bench(name, model, inputs, repeats: int) -> str:
    fused = copy.deepcopy(model)
    replaced = use_fused_qk_norm_rope(fused)
    with torch.no_grad():
        start = time.perf_counter()
        fused(**inputs)  # a fresh process: the eager kernels
        first = time.perf_counter() - start
        with compiling.warm_up():
            fused(**inputs)
        expected, got = model(**inputs)[0], fused(**inputs)[0]
        samples = {"diffusers": [], "fused": []}
        for r in range(repeats):
            order = (("diffusers", model), ("fused", fused)) if r % 2 == 0 else (("fused", fused), ("diffusers", model))
            for label, m in order:
                start = time.perf_counter()
                m(**inputs)
                samples[label].append(time.perf_counter() - start)
    stock, ours = statistics.median(samples["diffusers"]), statistics.median(samples["fused"])
    difference = (got - expected).abs().max().item()
    return (
        f"| {name} | {replaced} | {stock * 1e3:.1f} | {ours * 1e3:.1f} | {ours / stock:.2f} | {first * 1e3:.1f} | "
        f"{difference:.1e} |"
    )


def norm_rope_alone(repeats: int) -> list[str]:
    """Flux's q/k RMSNorm + RoPE of the step above, (1, 2368, 8, 64) interleaved, unfused vs fused."""
    rows = []
    seq, heads, dim = 48 * 48 + 64, 8, 64
    angles = torch.randn(seq, dim // 2, generator=torch.Generator().manual_seed(0))
    full_cos, full_sin = angles.cos().repeat_interleave(2, -1), angles.sin().repeat_interleave(2, -1)  # Flux's format
    cos, sin = full_cos[:, None, 0::2], full_sin[:, None, 1::2]
    for dtype in (torch.float32, torch.bfloat16):
        q, k = (torch.randn(1, seq, heads, dim).to(dtype) for _ in range(2))
        norms = [torch.nn.RMSNorm(dim, eps=1e-6).to(dtype) for _ in range(2)]

        def diffusers_pair(q=q, k=k, norms=norms):
            return tuple(
                apply_rotary_emb(norm(x), (full_cos, full_sin), sequence_dim=1)
                for norm, x in zip(norms, (q, k), strict=True)
            )

        def fused(q=q, k=k, norms=norms):
            return rms_norm_rotary_qk(q, k, cos, sin, norms[0].weight, norms[1].weight, 1e-6, "interleaved")

        with torch.no_grad(), compiling.warm_up():
            fused(), diffusers_pair()
            samples = {"diffusers": [], "fused": []}
            for r in range(repeats):
                for label, fn in (("diffusers", diffusers_pair), ("fused", fused))[:: 1 if r % 2 == 0 else -1]:
                    start = time.perf_counter()
                    fn()
                    samples[label].append(time.perf_counter() - start)
        stock, ours = statistics.median(samples["diffusers"]), statistics.median(samples["fused"])
        rows.append(f"| {str(dtype)[6:]} | {stock * 1e3:.2f} | {ours * 1e3:.2f} | {ours / stock:.2f} |")
    return rows


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--threads", type=int, default=None, help="torch intra-op threads (default: torch's)")
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} thread(s), median of {args.repeats} steps\n")
    print(
        "| model | processors replaced | diffusers ms | fused ms | fused / diffusers | fused first call ms | "
        "max abs difference |"
    )
    print("|---|---|---|---|---|---|---|")
    for case in (flux_case, wan_case):
        print(bench(*case(), args.repeats), flush=True)
    print("\nFlux's q/k RMSNorm + RoPE alone, q and k (1, 2368, 8, 64) each:\n")
    print("| dtype | RMSNorm + apply_rotary_emb ms | rms_norm_rotary_qk ms | fused / diffusers |")
    print("|---|---|---|---|")
    for row in norm_rope_alone(args.repeats * 4):
        print(row, flush=True)


if __name__ == "__main__":
    main()

"""Applying RoPE to q and k, and q/k RMSNorm + RoPE fused: axialrope vs its peers and the
memory-copy floor, same tensors.

    python benchmarks/rope_apply.py --threads 1 --clock cpu --markdown benchmarks/rope_apply.md
    MALLOC_MMAP_THRESHOLD_=4294967296 MALLOC_TRIM_THRESHOLD_=4294967296 \
        python benchmarks/rope_apply.py --threads 1 --clock cpu      # no page faults on new outputs
    python benchmarks/rope_apply.py --quick                        # image D=64 and decode, few repeats
    python benchmarks/rope_apply.py --parts fused --cases image-d64 video-d64

Parts: `apply` (the rotation), `fused` (RMSNorm then rotation, implementations in
benchmarks/rope_fused.py), `tables` (building the table). Cases: `CASES` below. Every output is
first checked against axialrope's of the same layout; each repeat runs every implementation once
in a rotating order; reported is the median over repeats after warm-up. The cases, the peers, the
floor and the allocator are described in docs/performance.md ("The benchmark").
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import time
from dataclasses import dataclass

import torch
from diffusers.models.embeddings import apply_rotary_emb as diffusers_apply
from diffusers.models.embeddings import get_3d_rotary_pos_embed
from diffusers.models.transformers.transformer_flux import FluxPosEmbed
from reporting import cpu_model
from rope_fused import FUSED_NAMES, check_fused_agreement, fused_implementations, fused_ratios
from rotary_embedding_torch import apply_rotary_emb as ret_apply
from transformers.models.llama.modeling_llama import apply_rotary_pos_emb as transformers_apply

from axialrope import AxialRotaryEmbedding, RotaryEmbedding, apply_rotary_qk, grid_coords, rotary_backend
from axialrope.kernels import compiling


@dataclass(frozen=True)
class Case:
    name: str
    batch: int
    heads: int
    kv_heads: int
    grid: tuple[int, ...]  # token grid; (1,) with an offset for decode
    dim: int
    offset: int = 0
    seq_major: bool = False  # q, k as (b, h, s, d) views of (b, s, h, d) memory, as a projection gives them


CASES = {
    "image-d64": Case("image D=64", 2, 16, 16, (64, 64), 64),
    "image-d64-bshd": Case("image D=64 (b,s,h,d)", 2, 16, 16, (64, 64), 64, seq_major=True),
    "image-d128": Case("image D=128", 2, 16, 16, (64, 64), 128),
    "video-d64": Case("video D=64", 1, 16, 16, (16, 32, 32), 64),
    "video-d64-bshd": Case("video D=64 (b,s,h,d)", 1, 16, 16, (16, 32, 32), 64, seq_major=True),
    "decode": Case("decode D=128", 2, 32, 8, (1,), 128, offset=100_000),
}
QUICK_CASES = ("image-d64", "decode")

HALF = ("axialrope", "axialrope eager", "axialrope in place", "transformers", "diffusers -2", "plain")
INTERLEAVED = ("axialrope interl.", "diffusers -1", "rotary-emb-torch")
PEERS = ("transformers", "diffusers -2", "diffusers -1", "rotary-emb-torch", "plain")


def rotate_half(x: torch.Tensor) -> torch.Tensor:
    first, second = x.chunk(2, dim=-1)
    return torch.cat((-second, first), dim=-1)


def axial_table(case: Case) -> tuple[torch.Tensor, torch.Tensor]:
    """(seq, dim // 2) float32: an axial table of the case's grid, or 1D text at its offset."""
    if case.offset:
        return RotaryEmbedding(case.dim)(torch.arange(case.offset, case.offset + math.prod(case.grid)))
    n_axes = len(case.grid)
    per_axis = [case.dim // n_axes // 2 * 2] * n_axes
    per_axis[0] += case.dim - sum(per_axis)
    return AxialRotaryEmbedding(per_axis).for_grid(*case.grid)


def make_inputs(case: Case, dtype: torch.dtype):
    """q, k, the output gradients, and the table in every implementation's format."""
    g = torch.Generator().manual_seed(0)
    seq = math.prod(case.grid)
    q = torch.randn(case.batch, case.heads, seq, case.dim, generator=g).to(dtype)
    k = torch.randn(case.batch, case.kv_heads, seq, case.dim, generator=g).to(dtype)
    if case.seq_major:  # the same values, laid out (b, s, h, d) in memory
        q, k = (t.transpose(1, 2).contiguous().transpose(1, 2) for t in (q, k))
    cos, sin = axial_table(case)
    tables = {
        "half": (cos, sin),
        "full_half": (torch.cat((cos, cos), -1), torch.cat((sin, sin), -1)),  # (seq, dim)
        "full_interleaved": (cos.repeat_interleave(2, -1), sin.repeat_interleave(2, -1)),
        "angles_interleaved": torch.atan2(sin, cos).repeat_interleave(2, -1),
    }
    grads = (torch.randn(q.shape, generator=g).to(dtype), torch.randn(k.shape, generator=g).to(dtype))
    return q, k, grads, tables


def implementations(tables, inplace_buffers, dtype):
    cos, sin = tables["half"]
    full_cos, full_sin = tables["full_half"]
    il_cos, il_sin = tables["full_interleaved"]
    angles = tables["angles_interleaved"]
    low_cos, low_sin = full_cos.to(dtype), full_sin.to(dtype)

    def plain(x):
        return (x * full_cos + rotate_half(x) * full_sin).to(x.dtype)

    return {
        "floor": lambda q, k: (q.clone(), k.clone()),
        "one multiply": lambda q, k: (q * 2, k * 2),
        "axialrope": lambda q, k: apply_rotary_qk(q, k, cos, sin),
        "axialrope eager": lambda q, k: _eager(apply_rotary_qk, q, k, cos, sin),
        "axialrope interl.": lambda q, k: apply_rotary_qk(q, k, cos, sin, "interleaved"),
        "axialrope in place": lambda q, k: apply_rotary_qk(*inplace_buffers, cos, sin, inplace=True),
        "transformers": lambda q, k: transformers_apply(q, k, low_cos[None], low_sin[None]),
        "diffusers -2": lambda q, k: (
            diffusers_apply(q, (full_cos, full_sin), use_real_unbind_dim=-2),
            diffusers_apply(k, (full_cos, full_sin), use_real_unbind_dim=-2),
        ),
        "diffusers -1": lambda q, k: (
            diffusers_apply(q, (il_cos, il_sin), use_real_unbind_dim=-1),
            diffusers_apply(k, (il_cos, il_sin), use_real_unbind_dim=-1),
        ),
        "rotary-emb-torch": lambda q, k: (ret_apply(angles, q), ret_apply(angles, k)),
        "plain": lambda q, k: (plain(q), plain(k)),
    }


def _eager(fn, *args):
    with rotary_backend("eager"):
        return fn(*args)


def check_agreement(impls, q, k, dtype) -> None:
    """Every implementation must give axialrope's result for its layout (in place: on fresh copies)."""
    reference = {"half": impls["axialrope"](q, k), "interleaved": impls["axialrope interl."](q, k)}
    # bfloat16: a few roundings apart (transformers even rounds its table to bfloat16)
    tol = dict(rtol=1e-5, atol=1e-5) if dtype == torch.float32 else dict(rtol=2e-2, atol=6e-2)
    for name in (*PEERS, "axialrope eager"):
        layout = "half" if name in HALF else "interleaved"
        for ours, theirs in zip(reference[layout], impls[name](q, k), strict=True):
            torch.testing.assert_close(theirs, ours, **tol, msg=lambda m, n=name: f"{n} disagrees: {m}")


def timed_runs(impls: dict, run, repeats: int, clock) -> dict[str, list[float]]:
    """Seconds per call, `repeats` samples each; every repeat runs all in a rotating order."""
    names = list(impls)
    calls = {}
    for name in names:  # warm-up, then enough calls per sample to lift tiny cases above timer noise
        run(impls[name])
        start = clock()
        run(impls[name])
        calls[name] = max(1, math.ceil(2e-3 / max(clock() - start, 1e-7)))
    samples = {name: [] for name in names}
    for r in range(repeats):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            start = clock()
            for _ in range(calls[name]):
                run(impls[name])
            samples[name].append((clock() - start) / calls[name])
    return samples


def first_calls(impls, q, k, names) -> tuple[float, float]:
    """(first call under auto's default budget, the call that compiles), seconds, of impls[names[0]];
    afterwards every axialrope implementation in names is in its steady state."""
    start = time.perf_counter()
    with torch.no_grad():
        impls[names[0]](q, k)  # a fresh process: the eager kernel, no compile
    first_call = time.perf_counter() - start
    with compiling.warm_up(), torch.no_grad():  # what a long job reaches once its budget is spent
        start = time.perf_counter()
        impls[names[0]](q, k)
        compile_call = time.perf_counter() - start
        for name in names[1:]:
            impls[name](q, k)
    return first_call, compile_call


def bench_case(case: Case, dtype, backward: bool, repeats: int, clock, part: str = "apply"):
    """(samples per implementation, first call s, compiling call s) for one case, dtype and pass."""
    q, k, grads, tables = make_inputs(case, dtype)
    if part == "fused":
        impls = fused_implementations(tables, case.dim, dtype, lambda: rotary_backend("eager"))
        first_call, compile_call = first_calls(impls, q, k, ["axialrope fused"])
        check_fused_agreement(impls, q, k, dtype)
    else:
        inplace_buffers = (q.clone(), k.clone())
        impls = implementations(tables, inplace_buffers, dtype)
        first_call, compile_call = first_calls(impls, q, k, ["axialrope", "axialrope interl.", "axialrope in place"])
        check_agreement(impls, q, k, dtype)
    if not backward:
        with torch.no_grad():
            return timed_runs(impls, lambda f: f(q, k), repeats, clock), first_call, compile_call

    impls.pop("axialrope in place", None)  # in place needs a non-leaf input: a different workload
    q.requires_grad_(True)
    k.requires_grad_(True)
    floor = impls.pop("floor")
    with compiling.warm_up():  # the backward kernels too
        for f in impls.values():
            torch.autograd.backward(f(q, k), grads)

    def run(f):
        if f is floor:  # forward copy of q, k plus the copy of both output gradients
            return floor(q, k), grads[0].clone(), grads[1].clone()
        q.grad = k.grad = None
        torch.autograd.backward(f(q, k), grads)

    impls = {"floor": floor, **impls}
    return timed_runs(impls, run, repeats, clock), first_call, compile_call


def fmt_ms(seconds: float) -> str:
    ms = seconds * 1e3
    return f"{ms:.3f}" if ms < 1 else f"{ms:.2f}"


def summarize(medians: dict[str, float]) -> dict[str, float]:
    """axialrope / floor and axialrope / each peer (same layout)."""
    ratios = {
        "axialrope / floor": medians["axialrope"] / medians["floor"],
        "one multiply / floor": medians["one multiply"] / medians["floor"],
        "eager / floor": medians["axialrope eager"] / medians["floor"],
    }
    if "axialrope in place" in medians:
        ratios["in place / floor"] = medians["axialrope in place"] / medians["floor"]
    for peer in PEERS:
        ours = "axialrope" if peer in HALF else "axialrope interl."
        ratios[f"/ {peer}"] = medians[ours] / medians[peer]
    return ratios


def bench_tables(repeats: int, clock) -> list[tuple[str, float, float]]:
    """(name, first call s, median later call s) for the 16x64x64 table, head_dim 64."""
    grid = (16, 64, 64)

    def ours_first():
        return AxialRotaryEmbedding((16, 24, 24)).for_grid(*grid)

    warm = AxialRotaryEmbedding((16, 24, 24))
    ids = grid_coords(*grid)  # (16384, 3): the t, y, x of each token, as Flux's ids
    flux = FluxPosEmbed(theta=10000, axes_dim=[16, 24, 24])

    def diffusers_3d():
        return get_3d_rotary_pos_embed(64, ((0, 0), (grid[1], grid[2])), grid[1:], grid[0])

    rows = []
    for name, first, later in (
        ("axialrope for_grid (cached)", ours_first, lambda: warm.for_grid(*grid)),
        ("diffusers get_3d_rotary_pos_embed", diffusers_3d, diffusers_3d),
        ("diffusers FluxPosEmbed", lambda: flux(ids), lambda: flux(ids)),
    ):
        firsts = []
        for _ in range(max(3, repeats // 3)):
            start = clock()
            first()
            firsts.append(clock() - start)
        later()
        samples = timed_runs({name: later}, lambda f: f(), repeats, clock)[name]
        rows.append((name, statistics.median(firsts), statistics.median(samples)))
    return rows


def machine() -> str:
    """CPU model, core count, torch version and threads, e.g. for docs/performance.md's table."""
    model = cpu_model()
    # glibc hands tensors of 32 MiB and more fresh pages from the kernel (first-touch page faults
    # on every new output, floor included) unless told to keep freed memory in the process
    allocator = (
        "freed memory kept (MALLOC_MMAP_THRESHOLD_ set)"
        if os.environ.get("MALLOC_MMAP_THRESHOLD_")
        else "glibc default allocation"
    )
    return f"{model}, {os.cpu_count()} cores, torch {torch.__version__}, {torch.get_num_threads()} threads, {allocator}"


def run_part(part: str, cases, repeats: int, clock, md: list[str], dtypes=(torch.float32, torch.bfloat16)) -> None:
    """Times one part (apply or fused) on every case, dtype and pass; prints and appends Markdown."""
    names = ["floor", "one multiply", "axialrope", "axialrope eager", "axialrope interl.", "axialrope in place", *PEERS]
    names, summary = (list(FUSED_NAMES), fused_ratios) if part == "fused" else (names, summarize)
    title = "q/k RMSNorm then RoPE" if part == "fused" else "RoPE on q and k"
    md += [
        f"### {title}: median milliseconds per call on q and k\n",
        "| case | dtype | pass | " + " | ".join(names) + " |",
        "|" + "---|" * (len(names) + 3),
    ]
    md_ratios, md_first = [], []
    for key in cases:
        case = CASES[key]
        for dtype in dtypes:
            for backward in (False, True):
                samples, first_call, compile_call = bench_case(case, dtype, backward, repeats, clock, part)
                medians = {name: statistics.median(s) for name, s in samples.items()}
                ratios = summary(medians)
                label = (case.name, str(dtype).removeprefix("torch."), "fwd+bwd" if backward else "fwd")
                print(
                    f"\n{part}: {' '.join(label)}  (axialrope first call {first_call * 1e3:.1f} ms, "
                    f"compiling call {compile_call * 1e3:.0f} ms)"
                )
                for name in names:
                    if name in medians:
                        print(f"  {name:22s} {fmt_ms(medians[name]):>9s} ms")
                print("  " + ", ".join(f"{r} = {v:.2f}" for r, v in ratios.items()))
                cells = [fmt_ms(medians[n]) if n in medians else "-" for n in names]
                md.append(f"| {' | '.join(label)} | " + " | ".join(cells) + " |")
                md_ratios.append((label, ratios))
                if not backward:
                    md_first.append((label, first_call, compile_call, medians[names[1]]))
    keys = list(md_ratios[0][1]) if md_ratios else []
    md += [
        "",
        f"{title}: ratios of medians (< 1 means axialrope is faster):\n",
        "| case | dtype | pass | " + " | ".join(keys) + " |",
        "|" + "---|" * (len(keys) + 3),
    ]
    for label, ratios in md_ratios:
        md.append(
            f"| {' | '.join(label)} | " + " | ".join(f"{ratios[k]:.2f}" if k in ratios else "-" for k in keys) + " |"
        )
    md += [
        "",
        f"{title}: axialrope's first call in a fresh process (eager, no compile), the call that "
        "compiles, and the steady state (ms):\n",
        "| case | dtype | first call | compiling call | steady state |",
        "|---|---|---|---|---|",
    ]
    for label, first, compiled, steady in md_first:
        md.append(f"| {label[0]} | {label[1]} | {fmt_ms(first)} | {fmt_ms(compiled)} | {fmt_ms(steady)} |")
    md.append("")


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="image D=64 and decode only, 7 repeats")
    parser.add_argument("--cases", nargs="+", choices=list(CASES), help="which cases (default: all)")
    parser.add_argument(
        "--parts",
        nargs="+",
        choices=("apply", "fused", "tables"),
        default=["apply", "fused", "tables"],
        help="which parts (default: all)",
    )
    parser.add_argument("--dtypes", nargs="+", choices=("float32", "bfloat16"), default=["float32", "bfloat16"])
    parser.add_argument("--repeats", type=int, help="samples per implementation (default 21, quick 7)")
    parser.add_argument("--threads", type=int, help="torch intra-op threads (default: torch's)")
    parser.add_argument(
        "--clock",
        choices=("wall", "cpu"),
        default="wall",
        help="wall: perf_counter; cpu: process CPU time (steadier on a shared machine)",
    )
    parser.add_argument("--markdown", help="also write the results as Markdown tables to this file")
    args = parser.parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    repeats = args.repeats or (7 if args.quick else 21)
    cases = args.cases or (QUICK_CASES if args.quick else list(CASES))
    clock = time.perf_counter if args.clock == "wall" else time.process_time

    header = f"machine: {machine()}; clock: {args.clock}; median of {repeats} repeats"
    print(header)
    md = [f"{header}\n"]
    for part in ("apply", "fused"):
        if part in args.parts:
            run_part(part, cases, repeats, clock, md, [getattr(torch, name) for name in args.dtypes])

    if "tables" in args.parts:
        print("\nAxial table of a 16x64x64 grid (head_dim 64): first call, then per forward")
        md += [
            "Axial table of a 16x64x64 grid (16384 tokens, head_dim 64):\n",
            "| table | first call ms | per forward ms |",
            "|---|---|---|",
        ]
        rows = bench_tables(repeats, clock)
        for name, first, later in rows:
            print(f"  {name:36s} first {fmt_ms(first):>8s} ms   per forward {fmt_ms(later):>8s} ms")
            md.append(f"| {name} | {fmt_ms(first)} | {fmt_ms(later)} |")
        ours = rows[0][2]
        for name, _, later in rows[1:]:
            print(f"  per forward, {name} / axialrope cached = {later / ours:.0f}x")

    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write("\n".join(md) + "\n")
        print(f"\nwrote {args.markdown}")


if __name__ == "__main__":
    main()

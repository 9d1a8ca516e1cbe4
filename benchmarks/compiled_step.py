"""Compiled denoising steps of patched diffusers transformers against untouched ones, graph breaks and compilations.

    python benchmarks/compiled_step.py --threads 1 --markdown docs/performance.md

Small random configs of the real classes (Flux, Wan 2.1, Qwen-Image, Z-Image: two blocks, four heads of 32
channels) are compiled with `torch.compile` (inductor unless `--backend`) and run over a flow-matching
schedule (shift 3), one step per timestep, at the trained grid (1x) and twice it on every axis (2x):
untouched, and patched with dype-yarn (a new plan every step) and yarn (one plan per size). For each: the
graph breaks and the frames dynamo compiled over the schedule (`torch._dynamo.utils.counters`), the
compilations after the first step (recompiles), and the median milliseconds of a compiled step after the
first `--warmup` steps, with the eager step beside it. A row that raises reports the step and the error.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import torch
from reporting import cpu_model
from torch._dynamo.utils import counters

from axialrope.models import apply_extrapolation
from axialrope.models.integrations.registry import family_of

TEXT = 32  # text tokens
VARIANTS = ("untouched", "dype-yarn", "yarn")


def make_flux():
    from diffusers import FluxTransformer2DModel

    model = FluxTransformer2DModel(
        patch_size=1,
        in_channels=16,
        num_layers=2,
        num_single_layers=2,
        attention_head_dim=32,
        num_attention_heads=4,
        joint_attention_dim=64,
        pooled_projection_dim=64,
        axes_dims_rope=(8, 12, 12),
    )

    def inputs(grid, timestep):
        h, w = grid
        ids = torch.zeros(h, w, 3)
        ids[..., 1], ids[..., 2] = torch.arange(h)[:, None], torch.arange(w)[None, :]
        return dict(
            hidden_states=torch.randn(1, h * w, 16),
            encoder_hidden_states=torch.randn(1, TEXT, 64),
            pooled_projections=torch.randn(1, 64),
            timestep=torch.tensor([timestep]),
            img_ids=ids.reshape(-1, 3),
            txt_ids=torch.zeros(TEXT, 3),
        )

    return model, inputs, (16, 16)


def make_wan():
    from diffusers import WanTransformer3DModel

    model = WanTransformer3DModel(
        patch_size=(1, 2, 2),
        num_attention_heads=4,
        attention_head_dim=32,
        in_channels=16,
        out_channels=16,
        text_dim=64,
        freq_dim=32,
        ffn_dim=256,
        num_layers=2,
        rope_max_seq_len=1024,
    )

    def inputs(grid, timestep):
        t, h, w = grid
        return dict(
            hidden_states=torch.randn(1, 16, t, 2 * h, 2 * w),
            timestep=torch.tensor([timestep]),
            encoder_hidden_states=torch.randn(1, TEXT, 64),
        )

    return model, inputs, (3, 8, 8)


def make_qwen():
    from diffusers import QwenImageTransformer2DModel

    model = QwenImageTransformer2DModel(
        patch_size=2,
        in_channels=64,
        out_channels=16,
        num_layers=2,
        attention_head_dim=32,
        num_attention_heads=4,
        joint_attention_dim=64,
        axes_dims_rope=(8, 12, 12),
    )

    def inputs(grid, timestep):
        h, w = grid
        return dict(
            hidden_states=torch.randn(1, h * w, 64),
            encoder_hidden_states=torch.randn(1, TEXT, 64),
            encoder_hidden_states_mask=torch.ones(1, TEXT, dtype=torch.long),
            timestep=torch.tensor([timestep]),
            img_shapes=[[(1, h, w)]],
        )

    return model, inputs, (16, 16)


def make_z_image():
    from diffusers import ZImageTransformer2DModel

    model = ZImageTransformer2DModel(
        all_patch_size=(2,),
        all_f_patch_size=(1,),
        dim=128,
        n_layers=2,
        n_refiner_layers=1,
        n_heads=4,
        n_kv_heads=4,
        in_channels=16,
        cap_feat_dim=64,
        rope_theta=256.0,
        axes_dims=[8, 12, 12],
        axes_lens=[256, 128, 128],
    )

    def inputs(grid, timestep):
        h, w = grid
        return dict(x=[torch.randn(16, 1, 2 * h, 2 * w)], t=torch.tensor([timestep]), cap_feats=[torch.randn(TEXT, 64)])

    return model, inputs, (16, 16)


FAMILIES = {"flux": make_flux, "wan": make_wan, "qwen-image": make_qwen, "z-image": make_z_image}


def schedule(family, steps: int) -> list[float]:
    """The transformer's timestep argument at each step of a flow-matching schedule of `steps` steps."""
    from diffusers import FlowMatchEulerDiscreteScheduler

    scheduler = FlowMatchEulerDiscreteScheduler(shift=3.0)
    scheduler.set_timesteps(steps)
    return [family.time.timestep_at(sigma) for sigma in scheduler.sigmas[:-1].tolist()]


def prepared(name: str, variant: str):
    """(model, inputs, trained grid) of a family, untouched or patched with `variant` at its trained grid."""
    torch.manual_seed(0)
    model, inputs, trained = FAMILIES[name]()
    model.eval()
    if variant != "untouched":
        apply_extrapolation(model, variant, trained_grid=trained)
    return model, inputs, trained


def compile_over_schedule(model, calls: list[dict], backend: str) -> tuple[object, dict]:
    """(the compiled model, its counts): graph breaks, frames compiled, frames compiled after the first step,
    graphs, over one pass of the schedule (the first pass: every compilation happens here), or the error."""
    breaks, frames, graphs = (
        sum(counters["graph_break"].values()),
        counters["frames"]["total"],
        counters["stats"]["unique_graphs"],
    )
    compiled = torch.compile(model, backend=backend)
    counts, done, first = {}, 0, None
    try:
        for kwargs in calls:
            compiled(**kwargs, return_dict=False)
            done += 1
            first = counters["frames"]["total"] if first is None else first
    except Exception as error:  # noqa: BLE001 - a row reports how far it got
        counts["error"] = f"step {done + 1}: {type(error).__name__}: {str(error).splitlines()[0][:90]}"
    counts["breaks"] = sum(counters["graph_break"].values()) - breaks
    counts["frames"] = counters["frames"]["total"] - frames
    counts["recompiles"] = counters["frames"]["total"] - first if first is not None else 0
    counts["graphs"] = counters["stats"]["unique_graphs"] - graphs
    return compiled, counts


def interleaved_ms(runs: dict, calls: list[dict], warmup: int) -> dict[str, float]:
    """Median ms per step of each variant's run; at every step of the schedule each variant runs once, in a
    rotating order, so that a busy machine weighs on all of them alike."""
    times = {name: [] for name in runs}
    names = list(runs)
    for step, kwargs in enumerate(calls):
        for name in names[step % len(names) :] + names[: step % len(names)]:
            start = time.perf_counter()
            runs[name](**kwargs, return_dict=False)
            if step >= warmup:
                times[name].append((time.perf_counter() - start) * 1e3)
    return {name: statistics.median(values) for name, values in times.items()}


def rows_of(name: str, factor: int, args) -> list[dict]:
    """One row per variant at one grid: counts from each variant's first pass over the schedule, step times
    from a second pass with the variants interleaved."""
    torch._dynamo.reset()
    counters.clear()
    models, compiled, rows = {}, {}, {}
    for variant in args.variants:
        model, inputs, trained = prepared(name, variant)
        grid = tuple(factor * n for n in trained)
        calls = [inputs(grid, t) for t in schedule(family_of(model), args.steps)]
        compiled[variant], counts = compile_over_schedule(model, calls, args.backend)
        models[variant] = model
        rows[variant] = {"family": name, "grid": "x".join(map(str, grid)), "factor": factor, "variant": variant}
        rows[variant].update(counts)
    working = [v for v in args.variants if "error" not in rows[v]]
    frames = counters["frames"]["total"]
    for variant, ms in interleaved_ms({v: compiled[v] for v in working}, calls, args.warmup).items():
        rows[variant]["compiled_ms"] = ms
    if counters["frames"]["total"] != frames:  # the first pass compiled everything there was to compile
        print(f"note: {name} at {factor}x compiled {counters['frames']['total'] - frames} frame(s) in the timed pass")
    if args.eager:
        for variant, ms in interleaved_ms({v: models[v] for v in working}, calls, args.warmup).items():
            rows[variant]["eager_ms"] = ms
    return list(rows.values())


def table(rows: list[dict]) -> str:
    lines = [
        "| family | grid | variant | graph breaks | frames compiled | recompiles after step 1 | compiled ms "
        "| eager ms | compiled / untouched |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    untouched = {(r["family"], r["factor"]): r.get("compiled_ms") for r in rows if r["variant"] == "untouched"}
    for r in rows:
        base = untouched.get((r["family"], r["factor"]))
        ratio = f"{r['compiled_ms'] / base:.2f}" if base and r.get("compiled_ms") else ""
        ms = f"{r['compiled_ms']:.1f}" if "compiled_ms" in r else r.get("error", "")
        eager = f"{r['eager_ms']:.1f}" if "eager_ms" in r else ""
        lines.append(
            f"| {r['family']} | {r['grid']} | {r['variant']} | {r['breaks']} | {r['frames']} | {r['recompiles']} "
            f"| {ms} | {eager} | {ratio} |"
        )
    return "\n".join(lines)


BEGIN, END = "<!-- compiled_step: begin -->", "<!-- compiled_step: end -->"


def write_into(path: str, text: str) -> None:
    """Replaces the part of a markdown page between BEGIN and END (or appends both)."""
    page = open(path).read() if os.path.exists(path) else ""
    block = f"{BEGIN}\n{text}{END}"
    if BEGIN in page and END in page:
        page = page[: page.index(BEGIN)] + block + page[page.index(END) + len(END) :]
    else:
        page = page + ("\n" if page else "") + block + "\n"
    with open(path, "w") as out:
        out.write(page)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--families", nargs="+", default=list(FAMILIES), choices=list(FAMILIES))
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), help="untouched and method names")
    parser.add_argument("--factors", nargs="+", type=int, default=[1, 2], help="grid factors over the trained grid")
    parser.add_argument("--backend", default="inductor", help="torch.compile backend (eager: dynamo only)")
    parser.add_argument("--steps", type=int, default=28, help="steps of the schedule")
    parser.add_argument("--warmup", type=int, default=3, help="steps after the first left out of the median")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    parser.add_argument("--no-eager", dest="eager", action="store_false", help="skip the eager step times")
    parser.add_argument("--markdown", default=None, help="also write the table into this page, between markers")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.set_grad_enabled(False)
    rows = []
    for name in args.families:
        for factor in args.factors:
            rows += rows_of(name, factor, args)
            print(*rows[-len(args.variants) :], sep="\n", flush=True)
    threads = torch.get_num_threads()
    machine = f"{cpu_model()} ({os.cpu_count()} cores), {threads} torch thread(s), torch {torch.__version__}"
    text = (
        f"machine: {machine}; backend {args.backend}; {args.steps} steps, median after {args.warmup + 1}\n\n"
        f"{table(rows)}\n"
    )
    print(text)
    if args.markdown:
        write_into(args.markdown, text)


if __name__ == "__main__":
    main()

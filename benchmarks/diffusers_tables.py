"""Per-step rope-table cost: each family's own diffusers module vs apply_extrapolation's cached one.

    python benchmarks/diffusers_tables.py --threads 1 --repeats 51 --markdown docs/diffusers.md

A diffusers transformer asks its rope module for the table at every forward; the replacement from
`apply_extrapolation` builds a table once per (grid, plan, device) and returns the same tensors
afterwards (a dype-* method has a new plan, so a new table, at every step). Cases, with the
models' own rope settings: Flux's `FluxPosEmbed` at 1024^2, 2048^2 and 4096^2 px (512 text ids,
trained grid 64 x 64), Wan's `WanRotaryPosEmbed` at 480 x 832 px, 81 and 161 frames (trained
(21, 30, 52)). Columns, median milliseconds per call after warm-up, variants in a rotating order:
`own` (the family's module), `cached` (the replacement, a static method's cache hit) and `build`
(the replacement building the table). docs/diffusers.md ("Per-step table cost") reads the table.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from functools import partial

import torch
from reporting import cpu_model

from axialrope.models import apply_extrapolation

FLUX_SIZES = (1024, 2048, 4096)  # px; 16 px per token
WAN_FRAMES = (81, 161)  # at 480 x 832 px


def flux_ids(size: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Flux's txt_ids (512, 3) zeros and img_ids (tokens, 3) of a size x size px image."""
    n = size // 16
    ids = torch.zeros(n, n, 3)
    ids[..., 1] = torch.arange(n)[:, None]
    ids[..., 2] = torch.arange(n)[None, :]
    return torch.zeros(512, 3), ids.reshape(-1, 3)


def median_ms(calls: dict, repeats: int, warmup: int = 2) -> dict[str, float]:
    """Median ms per call of each zero-argument function; every repeat runs each once, in a
    rotating order, and each result lives until that variant's next call (as a step's table does)."""
    times = {name: [] for name in calls}
    kept = {}
    names = list(calls)
    for repeat in range(warmup + repeats):
        for name in names[repeat % len(names) :] + names[: repeat % len(names)]:
            start = time.perf_counter()
            kept[name] = calls[name]()
            elapsed = (time.perf_counter() - start) * 1e3
            if repeat >= warmup:
                times[name].append(elapsed)
    return {name: statistics.median(values) for name, values in times.items()}


def detached_rope(model, method: str, timestep: torch.Tensor):
    """The replacement rope module of `method` on its own (the model is given back at once)."""
    handle = apply_extrapolation(model, method)
    rope = handle.rope
    rope.time.set(timestep)  # what the transformer's forward pre-hook does at each step
    handle.remove()
    return rope


def rope_flux(device: str):
    """Flux's real rope settings (axes (16, 56, 56), theta 10000) on a one-block transformer, for timing its rope."""
    from diffusers import FluxTransformer2DModel

    return FluxTransformer2DModel(
        num_layers=1,
        num_single_layers=1,
        attention_head_dim=128,
        num_attention_heads=1,
        joint_attention_dim=8,
        pooled_projection_dim=8,
    ).to(device)


def flux_rows(device: str, repeats: int) -> list[dict]:
    model = rope_flux(device)  # only pos_embed runs here
    own = model.pos_embed
    rows = []
    for size in FLUX_SIZES:
        text, image = (t.to(device) for t in flux_ids(size))
        ids = torch.cat([text, image])
        cached_rope, build_rope = (
            detached_rope(model, m, torch.tensor([0.5], device=device)) for m in ("yarn", "dype-yarn")
        )
        for rope in (cached_rope, build_rope):
            rope.text_ids, rope.image_ids = text, image  # the transformer's whole ids, as its pre-hook sees them
        cached_rope(ids)  # the first step builds it

        def build(build_rope=build_rope, ids=ids):
            build_rope.clear_cache()
            return build_rope(ids)

        times = median_ms({"own": partial(own, ids), "cached": partial(cached_rope, ids), "build": build}, repeats)
        rows.append({"family": "Flux", "case": f"{size} x {size} px ({ids.shape[0]} ids)", **times})
        _sync(device)
    return rows


def wan_rows(device: str, repeats: int) -> list[dict]:
    from diffusers import WanTransformer3DModel

    model = WanTransformer3DModel(
        num_attention_heads=1,
        attention_head_dim=128,
        in_channels=16,
        out_channels=16,
        text_dim=8,
        freq_dim=8,
        ffn_dim=8,
        num_layers=1,
    ).to(device)
    own = model.rope
    rows = []
    for frames in WAN_FRAMES:
        latent = torch.empty(1, 16, (frames - 1) // 4 + 1, 60, 104, device=device)  # only the shape is read
        ropes = {m: detached_rope(model, m, torch.tensor([500.0], device=device)) for m in ("riflex", "dype-yarn")}
        ropes["riflex"](latent)

        def build(ropes=ropes, latent=latent):
            ropes["dype-yarn"].clear_cache()
            return ropes["dype-yarn"](latent)

        times = median_ms(
            {"own": partial(own, latent), "cached": partial(ropes["riflex"], latent), "build": build}, repeats
        )
        tokens = latent.shape[2] * 30 * 52
        rows.append({"family": "Wan", "case": f"{frames} frames, 480 x 832 px ({tokens} tokens)", **times})
    return rows


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        torch.cuda.synchronize()


def machine(device: str) -> str:
    cpu = cpu_model()
    gpu = f", {torch.cuda.get_device_name()}" if device.startswith("cuda") else ""
    return (
        f"{cpu} ({os.cpu_count()} cores), {torch.get_num_threads()} torch thread(s){gpu}, "
        f"torch {torch.__version__}, device {device}"
    )


def table(rows: list[dict]) -> str:
    lines = [
        "| family | case | own ms | cached ms | build ms | own / cached | own / build |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        lines.append(
            f"| {row['family']} | {row['case']} | {row['own']:.3f} | {row['cached']:.3f} | "
            f"{row['build']:.3f} | {row['own'] / row['cached']:.1f} | {row['own'] / row['build']:.2f} |"
        )
    return "\n".join(lines)


BEGIN, END = "<!-- diffusers_tables: begin -->", "<!-- diffusers_tables: end -->"


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
    parser.add_argument("--device", default="cpu", help="cpu or cuda")
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    parser.add_argument("--repeats", type=int, default=7, help="timed repeats per case")
    parser.add_argument(
        "--markdown",
        default=None,
        help="also write the table into this markdown page, between its diffusers_tables markers",
    )
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    torch.set_grad_enabled(False)
    rows = flux_rows(args.device, args.repeats) + wan_rows(args.device, args.repeats)
    text = f"machine: {machine(args.device)}; median of {args.repeats} repeats\n\n{table(rows)}\n"
    print(text)
    if args.markdown:
        write_into(args.markdown, text)


if __name__ == "__main__":
    main()

"""Time of one training step (forward + backward): RoPE DiT vs sin-cos DiT vs diffusers' DiT.

    python benchmarks/dit_step.py                       # tiny and S, 32x32 and 64x64
    python benchmarks/dit_step.py --quick               # tiny only, a few seconds per case

The three models share width, depth, heads, patch, MLP ratio, channels and classes; they
differ in position encoding (axial RoPE on q, k vs sin-cos added to the tokens) and, for
diffusers' `DiTTransformer2DModel`, in its implementation (separate q, k, v projections,
a timestep/label embedding in every block). All run in one process on the same tensors;
each repeat times every model once, in a rotating order, so a load change on a shared
machine hits all of them; cheap cases repeat until --min-seconds. Reported: the median
time over repeats after warm-up, and the median (and quartiles) over repeats of the ratio
of the steps timed in the same repeat. Memory: peak allocated
on CUDA; on CPU, where torch keeps no peak, the bytes autograd saves for backward
(distinct storages) plus parameters and gradients.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
from diffusers import DiTTransformer2DModel

from axialrope.models import create_dit

MODELS = ("rope", "sincos", "diffusers")


def build(kind: str, size: str, resolution: int, args) -> torch.nn.Module:
    common = dict(sample_size=resolution, patch_size=args.patch, in_channels=args.channels, num_classes=args.classes)
    if kind in ("rope", "sincos"):
        return create_dit(size, position_encoding=kind, **common)
    ours = create_dit(size, **common)  # only to read its width, depth and heads
    config = ours.config
    return DiTTransformer2DModel(
        num_attention_heads=config.num_heads,
        attention_head_dim=config.hidden_size // config.num_heads,
        in_channels=args.channels,
        num_layers=config.depth,
        sample_size=resolution,
        patch_size=args.patch,
        num_embeds_ada_norm=args.classes,
    )


def train_step(model, batch) -> None:
    """Forward, MSE loss, backward; gradients are dropped first so each step does the same work."""
    x, t, y, target = batch
    model.zero_grad(set_to_none=True)
    out = model(x, t, y).sample  # both take (hidden_states, timestep, class_labels)
    torch.nn.functional.mse_loss(out, target).backward()


def step_memory(model, batch, device) -> float:
    """MiB used by one step (see the module docstring for how)."""
    if device.type == "cuda":
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        before = torch.cuda.memory_allocated()
        train_step(model, batch)
        torch.cuda.synchronize()
        return (torch.cuda.max_memory_allocated() - before) / 2**20
    storages: dict[int, int] = {}

    def pack(tensor):
        storage = tensor.untyped_storage()
        storages[storage.data_ptr()] = storage.nbytes()
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda tensor: tensor):
        train_step(model, batch)
    weights = sum(p.numel() * p.element_size() for p in model.parameters())
    return (sum(storages.values()) + 2 * weights) / 2**20


def timed(model, batch, device) -> float:
    if device.type == "cuda":
        torch.cuda.synchronize()
    start = time.perf_counter()
    train_step(model, batch)
    if device.type == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter() - start


def measure(size: str, resolution: int, args, device) -> dict:
    torch.manual_seed(0)
    models = {kind: build(kind, size, resolution, args).to(device).train() for kind in MODELS}
    b = args.batch
    batch = (
        torch.randn(b, args.channels, resolution, resolution, device=device),
        torch.randint(0, 1000, (b,), device=device),
        torch.randint(0, args.classes, (b,), device=device),
        torch.randn(b, args.channels, resolution, resolution, device=device),
    )
    for model in models.values():
        for _ in range(args.warmup):
            train_step(model, batch)
    times = {kind: [] for kind in MODELS}
    start, repeat = time.perf_counter(), 0
    # at least --repeats rounds, and more while under --min-seconds (cheap cases get many)
    while repeat < args.repeats or time.perf_counter() - start < args.min_seconds:
        order = MODELS[repeat % 3 :] + MODELS[: repeat % 3]
        for kind in order:
            times[kind].append(timed(models[kind], batch, device))
        repeat += 1
    row = {
        "size": size,
        "resolution": resolution,
        "tokens": (resolution // args.patch) ** 2,
        "repeats": repeat,
        "params_M": {k: sum(p.numel() for p in m.parameters()) / 1e6 for k, m in models.items()},
        "ms": {k: 1000 * statistics.median(v) for k, v in times.items()},
        "mib": {k: step_memory(m, batch, device) for k, m in models.items()},
    }
    # ratios of steps timed in the same repeat (seconds apart): median and quartiles over repeats
    for peer in ("sincos", "diffusers"):
        ratios = [a / b for a, b in zip(times["rope"], times[peer], strict=True)]
        row[f"rope/{peer}"] = statistics.median(ratios)
        quartiles = statistics.quantiles(ratios, n=4)
        row[f"rope/{peer} iqr"] = (quartiles[0], quartiles[2])
    return row


def markdown(rows) -> str:
    lines = [
        "| size | image | tokens | repeats | RoPE ms | sin-cos ms | diffusers ms | RoPE / sin-cos (IQR) "
        "| RoPE / diffusers (IQR) | memory MiB (RoPE / sin-cos / diffusers) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        ms, mib = r["ms"], r["mib"]
        ratios = [
            f"{r[k]:.3f} ({r[k + ' iqr'][0]:.2f}-{r[k + ' iqr'][1]:.2f})" for k in ("rope/sincos", "rope/diffusers")
        ]
        lines.append(
            f"| {r['size']} | {r['resolution']}x{r['resolution']} | {r['tokens']} | {r['repeats']} "
            f"| {ms['rope']:.1f} | {ms['sincos']:.1f} | {ms['diffusers']:.1f} | {ratios[0]} | {ratios[1]} "
            f"| {mib['rope']:.0f} / {mib['sincos']:.0f} / {mib['diffusers']:.0f} |"
        )
    return "\n".join(lines)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", nargs="+", default=["tiny", "S"])
    parser.add_argument("--resolutions", nargs="+", type=int, default=[32, 64])
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=5, help="least timed steps per model (median reported)")
    parser.add_argument("--min-seconds", type=float, default=20.0, help="keep repeating a case at least this long")
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--patch", type=int, default=2)
    parser.add_argument("--channels", type=int, default=4)
    parser.add_argument("--classes", type=int, default=1000)
    parser.add_argument("--threads", type=int, default=None, help="torch CPU threads (default: torch's)")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--quick", action="store_true", help="tiny only, 3 repeats")
    args = parser.parse_args(argv)
    if args.quick:
        args.sizes, args.repeats, args.min_seconds = ["tiny"], 3, 5.0
    if args.threads:
        torch.set_num_threads(args.threads)
    device = torch.device(args.device)
    print(
        f"device {device}, {torch.get_num_threads()} threads, batch {args.batch}, at least {args.repeats} "
        f"repeats and {args.min_seconds:g} s per case after {args.warmup} warm-up, torch {torch.__version__}"
    )
    rows = []
    for size in args.sizes:
        for resolution in args.resolutions:
            rows.append(measure(size, resolution, args, device))
            r = rows[-1]
            print(
                f"{size:>4} {resolution}x{resolution}: "
                + ", ".join(f"{k} {v:.1f} ms" for k, v in r["ms"].items())
                + f"; RoPE/sin-cos {r['rope/sincos']:.3f}, RoPE/diffusers {r['rope/diffusers']:.3f} "
                f"({r['repeats']} repeats)",
                flush=True,
            )
    print()
    print(markdown(rows))


if __name__ == "__main__":
    main()

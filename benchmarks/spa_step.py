"""The cost of a denoising step with spa (its attention run once per position variant) against the untouched model.

    python benchmarks/spa_step.py --threads 1 --markdown docs/performance.md

spa bundles the positions N to a bundle and runs each attention 2 N - 1 times (one per slide of the
bundles), averaging the outputs. Two models, eager, float32: a small random Flux (compiled_step.py's: two
joint and two single blocks, four heads of 32 channels; trained grid 16 x 16 tokens), where the processor
runs whole per variant (q, k, v projections included), and the project's DiT of the bundled shapes
pipeline (trained 8 x 8 tokens: 32 px, 4 px patches), where the projections run once and only the rotation
and attention per variant. Each at 2x and 4x the trained grid on both axes (N by spa's default rule: 3 and
5), untouched against spa; the median milliseconds of a forward over `--repeats` interleaved repeats after
a warm-up.
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import torch
from compiled_step import make_flux
from reporting import cpu_model

from axialrope import Extrapolation
from axialrope.models import apply_extrapolation
from axialrope.models.axial_dit.extrapolation import DiTExtrapolation
from axialrope.pipelines.dit.bundled import bundled_model_path
from axialrope.pipelines.dit.pipeline import AxialDiTPipeline

BEGIN, END = "<!-- spa_step: begin -->", "<!-- spa_step: end -->"
FACTORS = (2, 4)


def median_ms(calls: dict, repeats: int, warmup: int = 1) -> dict[str, float]:
    """Median ms per call of each zero-argument function, the variants interleaved in a rotating order."""
    times = {name: [] for name in calls}
    names = list(calls)
    for repeat in range(warmup + repeats):
        for name in names[repeat % len(names) :] + names[: repeat % len(names)]:
            start = time.perf_counter()
            with torch.no_grad():
                calls[name]()
            if repeat >= warmup:
                times[name].append((time.perf_counter() - start) * 1e3)
    return {name: statistics.median(values) for name, values in times.items()}


def flux_rows(repeats: int) -> list[tuple]:
    untouched, inputs, trained = make_flux()
    untouched.eval()
    patched, _, _ = make_flux()
    patched.load_state_dict(untouched.state_dict())
    patched.eval()
    handle = apply_extrapolation(patched, "spa", trained_grid=trained)
    rows = []
    for factor in FACTORS:
        grid = tuple(n * factor for n in trained)
        kwargs = inputs(grid, 0.5)
        size = handle.rope.plan(grid).bundle_size
        calls = {"untouched": lambda kwargs=kwargs: untouched(**kwargs), "spa": lambda kwargs=kwargs: patched(**kwargs)}
        times = median_ms(calls, repeats)
        rows.append(("flux (diffusers)", grid, size, times["untouched"], times["spa"]))
    return rows


def dit_rows(repeats: int) -> list[tuple]:
    pipe = AxialDiTPipeline.from_pretrained(bundled_model_path("shapes-rope"))
    model = pipe.transformer.eval()
    trained = model.base_grid
    spa = Extrapolation("spa")
    rows = []
    for factor in FACTORS:
        grid = tuple(n * factor for n in trained)
        patch = model.patchify.patch
        x = torch.randn(1, model.config.in_channels, *(n * p for n, p in zip(grid, patch, strict=True)))
        t, labels = torch.tensor([500.0]), torch.tensor([0])

        def plain(x=x, t=t, labels=labels):
            return model(x, t, class_labels=labels)

        def averaged(x=x, t=t, labels=labels, grid=grid):
            with DiTExtrapolation(model, spa, grid=grid).attach():
                return model(x, t, class_labels=labels)

        times = median_ms({"untouched": plain, "spa": averaged}, repeats)
        rows.append(("axialrope DiT (shapes-rope)", grid, spa.plan(trained, grid).bundle_size, *times.values()))
    return rows


def markdown(rows: list[tuple], threads: int, repeats: int) -> str:
    lines = [
        f"machine: {cpu_model()} ({os.cpu_count()} cores), {threads} torch thread(s), torch {torch.__version__}; "
        f"eager float32, median of {repeats} forwards",
        "",
        "| model | grid (tokens) | N | attention passes | untouched ms | spa ms | spa / untouched |",
        "|---|---|---|---|---|---|---|",
    ]
    for model, grid, size, plain, averaged in rows:
        lines.append(
            f"| {model} | {'x'.join(map(str, grid))} | {size} | {2 * size - 1} | {plain:.1f} | {averaged:.1f} | "
            f"{averaged / plain:.2f} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--markdown", default=None, help="a page to write the table into, between its markers")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    table = markdown(flux_rows(args.repeats) + dit_rows(args.repeats), args.threads, args.repeats)
    print(table)
    if args.markdown:
        with open(args.markdown) as f:
            page = f.read()
        if BEGIN not in page or END not in page:
            raise SystemExit(f"{args.markdown} has no {BEGIN} ... {END} markers")
        head, rest = page.split(BEGIN, 1)
        with open(args.markdown, "w") as f:
            f.write(head + BEGIN + "\n" + table + "\n" + END + rest.split(END, 1)[1])


if __name__ == "__main__":
    main()

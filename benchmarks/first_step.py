"""The main job's first sampling step against its later steps, each run in a fresh process.

    python benchmarks/first_step.py                         # axialrope sample --height 64 --width 64, 3 runs
    python benchmarks/first_step.py --runs 5 --cold         # each run with an empty inductor cache
    python benchmarks/first_step.py --compile-at-once       # the former policy, for comparison

Each run is a new Python process that does what `axialrope sample --height H --width W`
does (bundled model, default classes, seed, steps and guidance) with a timer around every
transformer call, so the first step carries whatever the first call costs (compiling the
rotation kernel, warming caches) and the later steps show the steady state. `--cold` gives
every run its own empty TORCHINDUCTOR_CACHE_DIR, as on a machine that never compiled the
kernel; without it runs share the user's cache, as a second `axialrope sample` would.
`--compile-at-once` sets `axialrope.kernels.compiling.COMPILE_AFTER_NUMEL = 0`, so the first large call
compiles its kernel, as axialrope did before it kept a compile budget. The samples are written to
--out, so the figures come with the picture they made.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

CHILD = r"""
import json, sys, time
import torch
torch.set_num_threads({threads})
from axialrope.kernels import compiling
if {compile_at_once}:
    compiling.COMPILE_AFTER_NUMEL = 0
from axialrope.models import DiT
from axialrope.pipelines.cli.sample import add_arguments, run
import argparse

times, started = [], time.perf_counter()
forward = DiT.forward

def timed_forward(self, *args, **kwargs):  # every transformer call of the sampling loop
    start = time.perf_counter()
    out = forward(self, *args, **kwargs)
    times.append(time.perf_counter() - start)
    return out

DiT.forward = timed_forward
parser = argparse.ArgumentParser()
add_arguments(parser)
code = run(parser.parse_args({argv!r}))
print(json.dumps(dict(code=code, steps=times, total=time.perf_counter() - started)))
"""


def one_run(argv: list[str], threads: int, cold: bool, compile_at_once: bool) -> dict:
    env = dict(os.environ)
    with tempfile.TemporaryDirectory() as cache:
        if cold:
            env["TORCHINDUCTOR_CACHE_DIR"] = cache
        code = CHILD.format(threads=threads, argv=argv, compile_at_once=compile_at_once)
        result = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    return json.loads(result.stdout.strip().splitlines()[-1])


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--height", type=int, default=64)
    parser.add_argument("--width", type=int, default=64)
    parser.add_argument("--out", default="outputs/sample.png")
    parser.add_argument("--runs", type=int, default=3, help="fresh processes (default 3)")
    parser.add_argument("--threads", type=int, default=1, help="torch threads in each run (default 1)")
    parser.add_argument("--cold", action="store_true", help="an empty inductor cache for every run")
    parser.add_argument(
        "--compile-at-once", action="store_true", help="compile on the first large call (no compile budget), as before"
    )
    args = parser.parse_args(argv)
    sample_argv = ["--height", str(args.height), "--width", str(args.width), "--out", args.out]
    policy = "compile at once" if args.compile_at_once else "compile budget"
    print(
        f"axialrope sample {' '.join(sample_argv)}; {args.threads} thread(s); "
        f"{'cold' if args.cold else 'shared'} inductor cache; {policy}; {args.runs} fresh processes"
    )
    firsts, laters, totals = [], [], []
    for index in range(args.runs):
        run = one_run(sample_argv, args.threads, args.cold, args.compile_at_once)
        if run["code"] != 0:
            raise SystemExit(f"run {index}: axialrope sample exited {run['code']}")
        first, later = run["steps"][0], statistics.median(run["steps"][1:])
        firsts.append(first)
        laters.append(later)
        totals.append(run["total"])
        print(
            f"  run {index}: first step {first:.3f} s, later steps median {later:.3f} s "
            f"({first / later:.1f}x), {len(run['steps'])} steps, whole job {run['total']:.1f} s"
        )
    first, later = statistics.median(firsts), statistics.median(laters)
    print(
        f"median: first step {first:.3f} s, later steps {later:.3f} s, first / later {first / later:.1f}x, "
        f"whole job {statistics.median(totals):.1f} s"
    )


if __name__ == "__main__":
    main()

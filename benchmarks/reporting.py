"""Helpers the benchmarks share: a table as CSV and Markdown, a labelled grid of samples, the CPU's name, and the
runner of a benchmark's parts in processes of their own."""

from __future__ import annotations

import csv
import platform
import subprocess
import sys
import time
from pathlib import Path

from axialrope.pipelines.evaluation.grids import save_labelled_grid  # noqa: F401  (the benchmarks import it here)


def write_table(path: Path, header: list[str], rows: list[list]) -> None:
    """The same rows as CSV (path.csv) and Markdown (path.md); floats get two decimals in Markdown."""
    with open(path.with_suffix(".csv"), "w", newline="") as f:
        csv.writer(f).writerows([header, *rows])
    cell = lambda v: f"{v:.2f}" if isinstance(v, float) else str(v)  # noqa: E731
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(cell(v) for v in row) + " |" for row in rows]
    path.with_suffix(".md").write_text("\n".join(lines) + "\n")


def cpu_model() -> str:
    """The CPU's model name (from /proc/cpuinfo where there is one), for the machine line of a table."""
    try:
        with open("/proc/cpuinfo") as f:
            return next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        return platform.processor() or platform.machine()


def run_parts(script: str, parts: list[str], jobs: int, out: Path) -> None:
    """Runs `script --part PART --threads 1` (with this command's own arguments but --report-only) for each part,
    `jobs` at a time, each in its own process with its log in out/logs/; stops the others on a failed part."""
    forwarded = [a for a in sys.argv[1:] if a != "--report-only"]
    waiting, running = list(parts), {}
    (out / "logs").mkdir(parents=True, exist_ok=True)
    while waiting or running:
        while waiting and len(running) < jobs:
            part = waiting.pop(0)
            log = open(out / "logs" / f"{part.replace(':', '_')}.log", "w")
            command = [sys.executable, script, *forwarded, "--part", part, "--threads", "1"]
            running[part] = (subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT), log, time.perf_counter())
            print(f"started {part}", flush=True)
        time.sleep(0.5)
        for part, (process, log, started) in list(running.items()):
            if process.poll() is None:
                continue
            log.close()
            del running[part]
            if process.returncode != 0:
                for other, _, _ in running.values():
                    other.terminate()
                raise SystemExit(f"part {part} failed (exit {process.returncode}); see {log.name}")
            print(f"finished {part} in {(time.perf_counter() - started) / 60:.1f} min", flush=True)

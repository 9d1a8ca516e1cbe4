"""`axialrope check`: the factorization checks of `axialrope.testing` on axialrope and on peers.

    axialrope check                                   # every implementation, its usual axes
    axialrope check --impl flux wan --markdown        # a markdown table
    axialrope check --impl axialrope-half --axes 2 3 --strict   # exit 1 on any failure

Prints one row per implementation and number of axes, one column per property
(pass / FAIL / n/a and the worst relative error), then the explanation of every
failure and every n/a.
"""

from __future__ import annotations

import argparse
import math
import sys

from axialrope.testing import CHECK_NAMES, LARGE_COORDINATE, CheckResult, run_checks

from ..checks.peers import IMPLEMENTATIONS
from .preflight import usage_error


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.epilog = "implementations:\n" + "\n".join(
        f"  {impl.name:<40} {impl.summary}" for impl in IMPLEMENTATIONS.values()
    )
    parser.add_argument(
        "--impl",
        nargs="+",
        choices=list(IMPLEMENTATIONS),
        metavar="NAME",
        help="implementations to check (default: all): " + ", ".join(IMPLEMENTATIONS),
    )
    parser.add_argument(
        "--axes",
        nargs="+",
        type=int,
        choices=(1, 2, 3),
        help="numbers of axes to check (default: each implementation's usual ones); "
        "implementations that support none of them are skipped",
    )
    parser.add_argument("--markdown", action="store_true", help="print the table as markdown")
    parser.add_argument(
        "--large",
        type=float,
        default=LARGE_COORDINATE,
        help=f"coordinate of the precision checks (default {LARGE_COORDINATE:g})",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the random vectors and coordinates")
    parser.add_argument("--strict", action="store_true", help="exit with status 1 if any check fails")


def _cell(result: CheckResult) -> str:
    if result.passed is None:
        return "n/a"
    return f"{'pass' if result.passed else 'FAIL'} {result.worst_error:.1e}"


def format_table(rows: list[tuple[str, list[CheckResult]]], large: float, markdown: bool = False) -> str:
    """rows: (label, results in CHECK_NAMES order) -> an aligned text or markdown table."""
    header = [
        "implementation",
        "relative",
        "separable",
        "orthogonal",
        "reduction",
        "batch",
        f"fp32 @{large:g}",
        f"bf16 @{large:g}",
    ]
    assert len(header) == len(CHECK_NAMES) + 1
    body = [[label] + [_cell(r) for r in results] for label, results in rows]
    if markdown:
        lines = [header, ["---"] * len(header)] + body
        return "\n".join("| " + " | ".join(line) + " |" for line in lines)
    widths = [max(len(line[i]) for line in [header] + body) for i in range(len(header))]
    return "\n".join(
        "  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip() for line in [header] + body
    )


FLOAT32_MAX = 3.4028234663852886e38  # the precision checks place tokens at --large in float32 too


def run(args: argparse.Namespace) -> int:
    if not (math.isfinite(args.large) and abs(args.large) + 16 < FLOAT32_MAX):
        # a coordinate no float32 holds leaves the precision checks n/a: nothing would be checked
        return usage_error("check", f"--large must be a finite coordinate that float32 can hold, got {args.large}")
    rows, notes = [], []
    for name in args.impl or IMPLEMENTATIONS:
        impl = IMPLEMENTATIONS[name]
        axes = impl.default_axes if args.axes is None else [n for n in args.axes if n in impl.axes]
        if not axes:
            notes.append(f"{name}: skipped, it supports {', '.join(map(str, impl.axes))} axes only")
        for n_axes in axes:
            label = f"{name} {n_axes}D"
            results = run_checks(impl.build(n_axes), seed=args.seed, large=args.large)
            rows.append((label, results))
            notes += [f"{label} {r.name}: {r.status}: {r.explanation}" for r in results if not r.passed]
    print(format_table(rows, args.large, args.markdown))
    if notes:
        print()
        print("\n".join(("- " if args.markdown else "") + note for note in notes))
    failed = any(r.passed is False for _, results in rows for r in results)
    ran = any(r.passed is not None for _, results in rows for r in results)
    if args.strict and not ran:  # a gate that checked nothing must not pass
        print("axialrope check: --strict: no check ran (every one was skipped or n/a)", file=sys.stderr)
        return 1
    return 1 if args.strict and failed else 0

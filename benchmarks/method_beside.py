"""One RoPE method beside the others, from the extrapolation benchmark's raw values (docs/extrapolation.md).

    python benchmarks/method_beside.py sega --base ntk      # a markdown table per data kind

Per data kind and size beyond the trained one: the method's detail SWD (mean over seeds [95% interval]),
`none`'s, its base method's (the method it builds on, `--base`), the best RoPE method's there, and the
method's rank among every RoPE method measured at that size (1: the lowest mean). Bold: the method's
interval clears the other's (it is lower beyond the seed-to-seed spread); italics: the other's clears it.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from extrapolation_report import HEADLINE, TRAINED_SIDE, Results, read_raw

from axialrope.pipelines.evaluation.intervals import Interval


def compared(ours: Interval, other: Interval | None) -> str:
    """The other's cell, bold where ours clears it, italic where it clears ours."""
    if other is None:
        return ""
    text = f"{other.value:.1f} [{other.low:.1f}, {other.high:.1f}]"
    return f"**{text}**" if ours.clears(other) else f"*{text}*" if other.clears(ours) else text


def table(results: Results, method: str, base: str) -> str:
    lines = []
    for data in results.datas():
        rows, seeds = [], set()
        for size in results.sizes(data):
            ours = results.get(data, "rope", method, size)
            if ours is None or size == f"{TRAINED_SIDE}x{TRAINED_SIDE}":
                continue
            others = {m: results.get(data, "rope", m, size) for model, m in results.rows(data) if model == "rope"}
            others = {m: i for m, i in others.items() if i is not None}
            seeds.add(len(results.values[(data, "rope", method, size, HEADLINE)]))
            best = min((m for m in others if m != method), key=lambda m: others[m].value)
            rank = 1 + sum(i.value < ours.value for m, i in others.items() if m != method)
            rows.append(
                f"| {size} | {ours.value:.1f} [{ours.low:.1f}, {ours.high:.1f}] | "
                f"{compared(ours, others.get('none'))} | {compared(ours, others.get(base))} | "
                f"{best}: {compared(ours, others[best])} | {rank} of {len(others)} |"
            )
        if rows:
            lines += [
                f"{data} (detail SWD, lower is better; {'/'.join(map(str, sorted(seeds)))} seeds):",
                "",
                f"| size | {method} | none | {base} | best other | rank |",
                "|---|---|---|---|---|---|",
                *rows,
                "",
            ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("method", help="the method's label, e.g. sega")
    parser.add_argument("--base", default="ntk", help="the method it builds on")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results", help="the benchmark's folder")
    args = parser.parse_args()
    print(table(Results(read_raw(args.out)), args.method, args.base))


if __name__ == "__main__":
    main()

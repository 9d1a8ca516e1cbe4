"""The family table of docs/diffusers.md, generated from the registry.

    python -m axialrope.models.integrations.family_table --write docs/diffusers.md
    python -m axialrope.models.integrations.family_table               # print it

One row per family: its classes, rope kind, trained grids, the pipeline's default grid where it
differs and the methods that apply; then where each grid comes from, and the classes no family
reaches with their reasons.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from axialrope import EXTRAPOLATION_METHODS

from .family import Family, describe_when
from .registry import FAMILIES, UNREACHED, methods_for

TABLE_BEGIN, TABLE_END = "<!-- families: begin -->", "<!-- families: end -->"


def _grid(grid) -> str:
    return " x ".join(str(n) for n in grid)


def _methods(family: Family) -> str:
    applying = methods_for(family)
    text = (
        "all"
        if len(applying) == len(EXTRAPOLATION_METHODS)
        else "all but " + ", ".join(m for m in EXTRAPOLATION_METHODS if m not in applying)
    )
    return text + " (no entropy scaling)" if family.gain_refused else text


def markdown_table() -> str:
    """The docs' family table and the sources of the trained grids, from the declarations."""
    lines = [
        "| family | classes | rope kind | trained grid | pipeline default | methods |",
        "|---|---|---|---|---|---|",
    ]
    sources, seen = [], {}
    for family in FAMILIES:
        grids, defaults = [], []
        for entry in family.trained:
            label = f" ({entry.label or describe_when(entry.when)})" if entry.when else ""
            grids.append(f"{_grid(entry.grid)}{label}")
            if entry.pipeline_default:
                defaults.append(f"{_grid(entry.pipeline_default)}{label}")
            where = f"{family.title}, {_grid(entry.grid)}{label}"
            if entry.source in seen:
                sources.append(f"- {where}: as {seen[entry.source]}.")
            else:
                seen[entry.source] = family.title
                sources.append(f"- {where}: {entry.source}.")
        classes = ", ".join(f"`{name}`" for name in family.classes)
        lines.append(
            f"| {family.title} | {classes} | {family.kind.title} | {'; '.join(grids)} | "
            f"{'; '.join(defaults) or 'same'} | {_methods(family)} |"
        )
    unreached = [f"- `{name}`: {reason}." for name, reason in UNREACHED.items()]
    text = "\n".join(lines) + "\n\nWhere the trained grids come from:\n\n" + "\n".join(sources) + "\n"
    return text + (
        "\nClasses with rotary positions that no family reaches:\n\n" + "\n".join(unreached) + "\n" if unreached else ""
    )


def write_table(path: Path) -> None:
    """Replaces the text between the family-table markers of `path`."""
    text = path.read_text()
    pattern = re.compile(re.escape(TABLE_BEGIN) + r".*?" + re.escape(TABLE_END), re.S)
    if not pattern.search(text):
        raise ValueError(f"{path} has no {TABLE_BEGIN} ... {TABLE_END} markers")
    path.write_text(pattern.sub(lambda _: f"{TABLE_BEGIN}\n{markdown_table()}{TABLE_END}", text))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--markdown", action="store_true", help="print the table")
    parser.add_argument("--write", type=Path, help="replace the table between the markers of this file")
    args = parser.parse_args(argv)
    if args.write is not None:
        write_table(args.write)
    if args.markdown or args.write is None:
        sys.stdout.write(markdown_table())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Docstrings say what the code does and its arguments: short, and without measured figures.

Every module of axialrope/, models/, pipelines/, benchmarks/ and examples/ is read with `ast` (the
docstrings of modules, classes and functions) and `tokenize` (the comments). A docstring's length
is the lines it spans in the source, quotes included. Essays, history and figures belong in docs/,
beside the command that produced them.
"""

from __future__ import annotations

import ast
import io
import re
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = ("axialrope", "models", "pipelines", "benchmarks", "examples")
LONG = 25  # lines
MOST_LONG = 5  # docstrings allowed past LONG
# a time or a speed-up: "20 us", "3.5 ms", "~50x faster", "4-10x slower"
FIGURE = re.compile(r"\b\d+(\.\d+)?\s?(us|µs|ms)\b|\b\d+(\.\d+)?x (faster|slower)\b")


def sources() -> list[Path]:
    return [path for folder in FOLDERS for path in sorted((ROOT / folder).rglob("*.py"))]


def docstrings(path: Path, root: Path = ROOT) -> list[tuple[str, int, str]]:
    """(where, lines spanned, text) of every docstring of the file; where names the file from root."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if not isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        text = ast.get_docstring(node, clean=False)
        if text is None:
            continue
        first = node.body[0]
        name = getattr(node, "name", "<module>")
        found.append((f"{path.relative_to(root)}:{first.lineno} {name}", first.end_lineno - first.lineno + 1, text))
    return found


def comments(path: Path, root: Path = ROOT) -> list[tuple[str, str]]:
    """(where, text) of every comment of the file."""
    tokens = tokenize.generate_tokens(io.StringIO(path.read_text()).readline)
    return [
        (f"{path.relative_to(root)}:{token.start[0]}", token.string)
        for token in tokens
        if token.type == tokenize.COMMENT
    ]


def test_the_walk_reads_every_folder_and_kind_of_docstring():
    files = sources()
    assert {path.relative_to(ROOT).parts[0] for path in files} == set(FOLDERS)
    found = docstrings(ROOT / "axialrope" / "rotary.py")
    assert any(where.endswith(" <module>") for where, _, _ in found)
    assert any(where.endswith(" apply_rotary") for where, _, _ in found)
    assert any(where.endswith(" _Rotation") for where, _, _ in found)


def test_a_long_docstring_and_a_figure_are_found(tmp_path):
    sample = tmp_path / "sample.py"
    body = "\n".join(f"    line {i}" for i in range(30))
    sample.write_text(f'"""Short."""\n\n\ndef f():\n    """Long.\n\n{body}\n    """\n    return 1  # ~20 us a call\n')
    found = [(where.split(" ")[-1], lines) for where, lines, _ in docstrings(sample, tmp_path)]
    assert found == [("<module>", 1), ("f", 33)]
    assert [FIGURE.search(text) is not None for _, text in comments(sample, tmp_path)] == [True]
    assert FIGURE.search("a 64x64 grid, 2x the side, float32") is None


def test_at_most_five_docstrings_run_past_25_lines():
    long = sorted(
        ((lines, where) for path in sources() for where, lines, _ in docstrings(path) if lines > LONG), reverse=True
    )
    assert len(long) <= MOST_LONG, "docstrings past 25 lines:\n" + "\n".join(f"{n} {w}" for n, w in long)


def test_no_docstring_or_comment_carries_a_measured_time_or_speed_up():
    found = [
        f"{where}: {match.group(0)}"
        for path in sources()
        for where, text in [(w, t) for w, _, t in docstrings(path)] + comments(path)
        for match in [FIGURE.search(text)]
        if match
    ]
    assert found == [], "figures belong in docs/:\n" + "\n".join(found)

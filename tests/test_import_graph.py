"""The project's import graph has no circle.

The graph is read from the source with `ast`: every `import` and `from ... import` statement, those inside
functions and classes included, relative imports resolved. `axialrope/`, `models/` and `pipelines/` are the
packages `axialrope`, `axialrope.models` and `axialrope.pipelines`; `benchmarks/` are scripts that import
one another by bare name (their folder is on sys.path when one runs), so `benchmarks.X` stands for `X` there.
An edge goes to the most specific project module an import names: `from package import name` to
`package.name` if that is a module, else to the package's `__init__`. A module that imports lazily
(`importlib.import_module`, as `axialrope.pipelines` and its CLI do for their tables of names) also
gets an edge to every project module that one of its strings names, relative to its package.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = {"axialrope": "axialrope", "models": "axialrope.models", "pipelines": "axialrope.pipelines"}
SCRIPTS = "benchmarks"


def module_files() -> dict[str, Path]:
    """Dotted module name -> file, for every .py file of the packages and the benchmark scripts."""
    modules = {}
    for folder, package in PACKAGES.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            parts = list(path.relative_to(ROOT / folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            modules[".".join([package, *parts])] = path
    for path in sorted((ROOT / SCRIPTS).glob("*.py")):
        modules[f"{SCRIPTS}.{path.stem}"] = path
    return modules


def imported_names(name: str, path: Path, scripts: set[str], modules: frozenset[str] = frozenset()) -> list[str]:
    """The dotted names module `name` (file `path`) imports: `import a.b` gives "a.b", `from a import b`
    "a.b" (b may be a module or a name defined in a), relative imports made absolute against `name`'s
    package; a benchmark script's bare import of one of `scripts` (names "benchmarks.X") gets the prefix;
    a lazy importer's strings that name one of `modules` relative to its package."""
    is_package = path.name == "__init__.py"
    package = name if is_package else name.rpartition(".")[0]
    script = name.startswith(f"{SCRIPTS}.")
    names = []
    tree = ast.parse(path.read_text(), str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module
            names += [f"{source}.{alias.name}" for alias in node.names]
    if "import_module" in {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)}:
        # "__main__" is the `if __name__ == "__main__"` test, not an import
        strings = {
            node.value
            for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value != "__main__"
        }
        names += [module for module in (f"{package}.{text.lstrip('.')}" for text in strings) if module in modules]
    if script:  # a script's bare `import reporting` is the sibling script benchmarks/reporting.py
        names = [f"{SCRIPTS}.{n}" if f"{SCRIPTS}.{n.split('.')[0]}" in scripts else n for n in names]
    return names


def import_graph() -> dict[str, set[str]]:
    """Module -> the project modules it imports."""
    files = module_files()
    scripts = {name for name in files if name.startswith(f"{SCRIPTS}.")}
    graph = {}
    for name, path in files.items():
        targets = set()
        for imported in imported_names(name, path, scripts, frozenset(files)):
            # the most specific project module the dotted name reaches ("a.b.c" -> "a.b.c", else "a.b", ...)
            parts = imported.split(".")
            for end in range(len(parts), 0, -1):
                candidate = ".".join(parts[:end])
                if candidate in files:
                    if candidate != name:
                        targets.add(candidate)
                    break
        graph[name] = targets
    return graph


def circles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iteratively)."""
    index, low, on_stack, stack, found, counter = {}, {}, set(), [], [], [0]

    def visit(start: str) -> None:
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter[0]
                    counter[0] += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(component)

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def a_cycle(graph: dict[str, set[str]], component: set[str]) -> list[str]:
    """One closed path through `component`, from its first module (by name) back to it: a -> b -> ... -> a."""
    start = min(component)
    paths, seen = [[start]], {start}
    while paths:  # breadth first: the shortest way back
        path = paths.pop(0)
        for child in sorted(graph[path[-1]] & component):
            if child == start:
                return [*path, start]
            if child not in seen:
                seen.add(child)
                paths.append([*path, child])
    raise AssertionError(f"no cycle through {sorted(component)}")


def test_the_graph_reads_every_kind_of_import():
    graph = import_graph()
    # an import inside a function, a relative one, a benchmark script's bare one
    assert "axialrope.pipelines.training.checkpoints" in graph["axialrope.pipelines.dit.runs"]
    assert "axialrope.pipelines.dit.schedulers" in graph["axialrope.pipelines.dit.pipeline"]
    assert "benchmarks.reporting" in graph["benchmarks.extrapolation"]
    assert "axialrope.extrapolation" in graph["axialrope"]
    # lazy imports through tables of names
    assert "axialrope.pipelines.dit.runs" in graph["axialrope.pipelines"]
    assert "axialrope.pipelines.cli.sample" in graph["axialrope.pipelines.cli"]


def test_a_circle_is_found_and_named():
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert circles(graph) == [{"a", "b", "c"}]
    assert a_cycle(graph, {"a", "b", "c"}) == ["a", "b", "c", "a"]


def test_the_code_has_no_import_circle():
    graph = import_graph()
    found = [" -> ".join(a_cycle(graph, c)) for c in circles(graph)]
    assert found == [], "import circles:\n" + "\n".join(found)

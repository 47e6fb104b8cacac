"""The package's layout, checked on its source: every module under 400 lines, and no import
circle among its modules (an import inside a function or under ``TYPE_CHECKING`` counts:
a circle held apart by a lazy import is still one)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "src"
PACKAGE = ROOT / "seqpasses"


def _module(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, modules: set[str]) -> set[str]:
    """The package's modules ``path`` imports, anywhere in it (``from seqpasses.x import y``
    names module ``seqpasses.x.y`` where there is one)."""
    found: set[str] = set()
    package = _module(path) if path.name == "__init__.py" else _module(path).rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names if alias.name in modules}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                name = f"{base}.{alias.name}"
                if name in modules:
                    found.add(name)
                elif base in modules:
                    found.add(base)
    found.discard(_module(path))
    return found


def _graph() -> dict[str, set[str]]:
    paths = {_module(p): p for p in PACKAGE.rglob("*.py")}
    modules = set(paths)
    return {name: _imports(path, modules) for name, path in paths.items()}


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan's)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def _without_packages(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """The graph with a package's ``__init__`` importing its own modules left out: a
    package's face handing names on is not a circle with them."""
    return {
        name: {m for m in imports if not m.startswith(name + ".")}
        for name, imports in graph.items()
    }


def test_every_module_is_under_400_lines() -> None:
    long = {
        str(p.relative_to(ROOT)): n
        for p in PACKAGE.rglob("*.py")
        if (n := len(p.read_text().splitlines())) >= 400
    }
    assert not long, long


def test_no_import_runs_in_a_circle() -> None:
    assert _circles(_without_packages(_graph())) == []


def test_the_circle_finder_finds_a_circle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _circles(graph) == [["a", "b", "c"]]
    assert _circles({"a": {"b"}, "b": set()}) == []

"""The engine's contract, checked on its source: transfers propose, ``walk/`` applies.

A transfer (``src/seqpasses/transfer/``) reads the graph and builds new nodes through the
emitter ``ctx.edits`` gives it; it never changes a graph itself. Every change of an existing
graph (inserting or removing nodes, writing a node's or a graph's inputs, outputs or attributes,
moving uses, rebuilding a control-flow node, taking nodes out) is made by ``walk/``, from an
outcome the transfer hands over (``walk/outcomes.py``). The scan below finds any such call
under ``transfer/``; ``python tests/test_structure.py`` prints them.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "src" / "seqpasses"

# onnx_ir's graph and node changes, and the value-list changes of a graph's inputs/outputs
GRAPH_CALLS = {
    "insert_before",
    "insert_after",
    "remove",
    "replace_all_uses_with",
    "replace_input_with",
    "register_initializer",
}
LIST_CALLS = {"append", "extend", "insert", "pop", "clear", "remove"}
SLOTS = {"inputs", "outputs", "attributes", "initializers"}
# a graph's own append/insert/remove, on the names graphs go by here (a Python list's calls
# look the same: the scan knows graphs by name)
GRAPH_NAMES = {"graph", "body", "copy", "branch", "function"}
# seqpasses' own graph surgery (core/graph.py) and an emitter built on a graph of one's own
HELPERS = {
    "rebuild",
    "detach",
    "drop_nodes_of",
    "drop_subgraphs",
    "clear_inputs",
    "own_output",
    "Emitter",
}


def _slot(node: ast.expr) -> bool:
    """Whether ``node`` is ``<something>.inputs`` (or outputs, attributes, initializers)."""
    return isinstance(node, ast.Attribute) and node.attr in SLOTS


def _changes_graph(func: ast.expr) -> bool:
    """Whether a call of ``func`` is one of the graph changes above."""
    if isinstance(func, ast.Name):
        return func.id in HELPERS
    if not isinstance(func, ast.Attribute):
        return False
    if func.attr in GRAPH_CALLS:
        # (a Python list's own remove is not a graph's)
        plain = isinstance(func.value, ast.Name) and func.value.id not in GRAPH_NAMES
        return not (func.attr == "remove" and plain)
    if func.attr in LIST_CALLS:
        return (
            _slot(func.value)
            or (isinstance(func.value, ast.Name) and func.value.id in GRAPH_NAMES)
            or (isinstance(func.value, ast.Attribute) and func.value.attr == "graph")
        )
    return func.attr in HELPERS


def mutations(path: Path, root: Path = ROOT.parent) -> list[str]:
    """Every graph-changing call or write in the file at ``path``, as ``file:line: text``."""
    source = path.read_text()
    tree = ast.parse(source)
    lines = source.splitlines()
    found: list[int] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            if _changes_graph(node.func):
                found.append(node.lineno)
        elif isinstance(node, ast.Assign | ast.AugAssign | ast.Delete):
            targets = node.targets if isinstance(node, ast.Assign | ast.Delete) else [node.target]
            for target in targets:
                if isinstance(target, ast.Subscript) and _slot(target.value):
                    found.append(node.lineno)
    rel = path.relative_to(root)
    return [f"{rel}:{n}: {lines[n - 1].strip()}" for n in sorted(set(found))]


def transfer_mutations() -> list[str]:
    return [hit for path in sorted((ROOT / "transfer").rglob("*.py")) for hit in mutations(path)]


def test_transfers_change_no_graph() -> None:
    """No graph mutation under ``transfer/``: outcomes go to ``walk/``, which applies them."""
    assert transfer_mutations() == []


RECORDERS = {"applied", "computed", "applied_output", "Rewrite", "Record"}


def recorded_ids() -> dict[str, list[str]]:
    """Every rewrite id the package records, spelled literally: id -> where."""
    found: dict[str, list[str]] = {}
    for path in sorted(ROOT.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Call) or not node.args:
                continue
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            first = node.args[0]
            if name in RECORDERS and isinstance(first, ast.Constant):
                where = f"{path.relative_to(ROOT.parent)}:{node.lineno}"
                found.setdefault(str(first.value), []).append(where)
    return found


def test_every_recorded_rewrite_is_registered() -> None:
    """A rewrite is recorded under an id of the registry (``transfer/table.py``'s ``RULES``),
    which the docs' table and the rule files are checked against."""
    from seqpasses.transfer.table import RULES

    ids = recorded_ids()
    assert len(ids) > 20
    ids.pop("left")  # (report.left's records: what stays, with its reason; not a rewrite)
    assert {k: v for k, v in ids.items() if k not in RULES} == {}


def test_the_scan_finds_mutations(tmp_path: Path) -> None:
    """The scan itself: each form of change it must see, in a file of its own."""
    text = "\n".join(
        [
            "body.insert_before(a, b)",
            "body.outputs.pop(1)",
            "body.inputs[2] = x",
            "node.attributes['k'] = v",
            "rebuild(node, [], {}, 1)",
            "old.replace_all_uses_with(new)",
            "copy.append(read)",
            "body.remove(node)",
            "node.graph.insert_before(node, loop)",
            "found.append(x)",  # a plain list: not a graph
            "work.remove(x)",  # a plain list: not a graph
        ]
    )
    target = tmp_path / "transfer" / "sample.py"
    target.parent.mkdir()
    target.write_text(text)
    hits = [h.split(": ", 1)[1] for h in mutations(target, tmp_path)]
    assert hits == text.splitlines()[:9]


if __name__ == "__main__":
    hits = transfer_mutations()
    print("\n".join(hits))
    print(f"{len(hits)} graph-mutation call sites under transfer/", file=sys.stderr)

"""The engine's contract, checked on its source: transfers propose, ``walk/`` applies.

A transfer (``src/seqpasses/transfer/``) reads the graph and the walk's facts, builds new
nodes with an emitter that records onto a tape, and returns an Outcome
(``walk/outcomes.py``); the applier (``walk/apply.py``) is the only code that writes. The
scan below finds, by the syntax tree and whatever the names, every form of write a transfer
could make:

- a value's fields (``.type``, ``.shape``, ``.name``, ...) assigned;
- a node's or graph's slots (``.inputs``, ``.outputs``, ``.attributes``, ...) assigned,
  deleted or changed by a list call;
- onnx_ir's graph and use changes (``insert_before``, ``replace_all_uses_with``, ...) and
  seqpasses' own graph surgery (``rebuild``, ``detach``, ``inline_graph``, ...), on anything;
- a list call whose result is unused (``append``, ``remove``, ...) on anything but a
  container the function made itself (a graph's own ``append`` looks the same);
- the walk's facts or edits written: a field assigned, a field's container changed, a
  writing method of ``ctx.facts`` called, any call on ``ctx.edits`` but its reads;
- a re-entry of the walk (any call on ``ctx.walk``);
- the budget charged (any call on ``ctx.budget`` but :meth:`afford`: the charge goes with the
  outcome, and the applier takes it).

``python tests/test_structure.py`` prints what it finds.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "src" / "seqpasses"

VALUE_FIELDS = {"type", "shape", "name", "const_value", "doc_string", "meta", "dtype"}
SLOTS = {"inputs", "outputs", "attributes", "initializers", "functions", "opset_imports"}
GRAPH_CALLS = {
    "insert_before",
    "insert_after",
    "replace_all_uses_with",
    "replace_input_with",
    "register_initializer",
    "resize_inputs",
    "resize_outputs",
    "sort",
}
HELPERS = {
    "rebuild",
    "detach",
    "drop_nodes_of",
    "drop_subgraphs",
    "clear_inputs",
    "own_output",
    "inline_graph",
    "hold",
}
LIST_CALLS = {"append", "extend", "insert", "pop", "remove", "clear"}
GRAPH_LIST_CALLS = {"append", "extend", "insert", "remove", "clear"}
CONTAINER_CALLS = LIST_CALLS | {
    "add",
    "discard",
    "update",
    "setdefault",
    "popitem",
    "difference_update",
    "__setitem__",
    "__delitem__",
}
FACTS_WRITERS = {"leave", "note", "loop_refused"}
EDITS_READS = {"current", "next_name"}
BUDGET_READS = {"afford"}
CONTAINER_MAKERS = {"list", "dict", "set", "sorted", "defaultdict", "Counter"}


def _chain(node: ast.expr) -> list[str]:
    """``a.b.c`` as ``["a", "b", "c"]`` (empty when it does not start with a name)."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    return [node.id, *reversed(parts)] if isinstance(node, ast.Name) else []


def _makes_container(value: ast.expr | None) -> bool:
    if isinstance(value, ast.List | ast.Dict | ast.Set | ast.ListComp | ast.DictComp):
        return True
    if isinstance(value, ast.SetComp):
        return True
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Name):
        return value.func.id in CONTAINER_MAKERS
    return False


def _own_containers(function: ast.AST) -> set[str]:
    """The names a function binds to containers it makes itself (``x = []``, ``x: list[...] =
    ...``, ``x = list(...)``)."""
    names: set[str] = set()
    for node in ast.walk(function):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                pairs = [(target, node.value)]
                if isinstance(target, ast.Tuple) and isinstance(node.value, ast.Tuple):
                    pairs = list(zip(target.elts, node.value.elts, strict=False))
                names.update(
                    t.id for t, v in pairs if isinstance(t, ast.Name) and _makes_container(v)
                )
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            annotation = ast.unparse(node.annotation)
            if _makes_container(node.value) or annotation.split("[")[0] in (
                "list",
                "dict",
                "set",
            ):
                names.add(node.target.id)
    return names


def _written_target(target: ast.expr) -> str | None:
    """What kind of write assigning to ``target`` is (None: a local name, no write)."""
    if isinstance(target, ast.Attribute):
        chain = _chain(target)
        if chain[:2] in (["ctx", "facts"], ["ctx", "edits"]):
            return "facts/edits field"
        if target.attr in VALUE_FIELDS:
            return "value field"
        if target.attr in SLOTS:
            return "slot"
        return "attribute"
    if isinstance(target, ast.Subscript):
        base = target.value
        if isinstance(base, ast.Attribute) and base.attr in SLOTS:
            return "slot"
        if _chain(base)[:2] in (["ctx", "facts"], ["ctx", "edits"]):
            return "facts/edits field"
        return None
    if isinstance(target, ast.Tuple | ast.List):
        kinds = [_written_target(e) for e in target.elts]
        return next((k for k in kinds if k is not None), None)
    return None


def _written_call(call: ast.Call, own: set[str], statement: bool) -> str | None:
    """What kind of write ``call`` is (None: none); ``statement``: its result is not used (a
    graph's own append, extend, insert or remove returns nothing)."""
    func = call.func
    if isinstance(func, ast.Name):
        return "graph surgery" if func.id in HELPERS else None
    if not isinstance(func, ast.Attribute):
        return None
    chain = _chain(func)
    if chain[:2] == ["ctx", "walk"]:
        return "walk re-entry"
    if chain[:2] == ["ctx", "budget"]:
        return None if len(chain) == 3 and chain[2] in BUDGET_READS else "budget write"
    if chain[:2] == ["ctx", "edits"]:
        return None if len(chain) == 3 and chain[2] in EDITS_READS else "edits call"
    if chain[:2] == ["ctx", "facts"] and (
        (len(chain) == 3 and chain[2] in FACTS_WRITERS)
        or (len(chain) >= 4 and func.attr in CONTAINER_CALLS)
    ):
        return "facts write"
    if func.attr in GRAPH_CALLS:
        return "graph call"
    if func.attr in HELPERS:
        return "graph surgery"
    receiver = func.value
    if func.attr in LIST_CALLS | {"add", "discard", "update"}:
        if isinstance(receiver, ast.Attribute) and receiver.attr in SLOTS:
            return "slot"
        if isinstance(receiver, ast.Name) and receiver.id in own:
            return None
        if func.attr in GRAPH_LIST_CALLS and statement:
            return "list call on what the function did not make"
    return None


def writes(path: Path, root: Path = ROOT.parent) -> list[str]:
    """Every write in the file at ``path``, as ``file:line: [kind] text``."""
    source = path.read_text()
    tree = ast.parse(source)
    lines = source.splitlines()
    found: dict[int, str] = {}
    scopes: list[ast.AST] = [
        n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.Lambda)
    ] or [tree]
    owners: dict[int, set[str]] = {}
    for scope in scopes:
        own = _own_containers(scope)
        for inner in ast.walk(scope):
            owners.setdefault(id(inner), set()).update(own)
    statements = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr)}
    for node in ast.walk(tree):
        kind: str | None = None
        if isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign | ast.Delete):
            targets = node.targets if isinstance(node, ast.Assign | ast.Delete) else [node.target]
            kind = next((k for t in targets if (k := _written_target(t)) is not None), None)
        elif isinstance(node, ast.Call):
            kind = _written_call(node, owners.get(id(node), set()), id(node) in statements)
        if kind is not None and node.lineno not in found:
            found[node.lineno] = kind
    rel = path.relative_to(root)
    return [f"{rel}:{n}: [{k}] {lines[n - 1].strip()}" for n, k in sorted(found.items())]


def transfer_writes() -> list[str]:
    return [hit for path in sorted((ROOT / "transfer").rglob("*.py")) for hit in writes(path)]


def test_transfers_write_nothing() -> None:
    """No write under ``transfer/``: outcomes go to ``walk/apply.py``, which writes them."""
    assert transfer_writes() == []


def test_the_scan_finds_every_form(tmp_path: Path) -> None:
    """The scan itself: each form of write it must see, whatever the names, and plain
    containers a function made itself, which it must not."""
    caught = [
        "out.type = t",
        "whatever.shape = s",
        "v.name = 'x'",
        "thing.inputs[2] = x",
        "thing.outputs[1:1] = more",
        "del thing.inputs[0]",
        "thing.attributes['k'] = v",
        "thing.outputs.append(v)",
        "g.insert_before(a, b)",
        "old.replace_all_uses_with(new)",
        "g.register_initializer(v)",
        "rebuild(node, [], {}, 1)",
        "detach(nodes)",
        "inline_graph(walk, edits, scope, node, body, {})",
        "copy.append(read)",
        "node.graph.remove(node)",
        "param.append(x)",
        "param.extend(more)",
        "ctx.facts.values[v] = seq",
        "ctx.facts.values.pop(v, None)",
        "ctx.facts.proven.add(v)",
        "ctx.facts.unrolling.discard(node)",
        "ctx.facts.leave(node, why)",
        "ctx.facts.loop_refused(node, 'scan', why)",
        "ctx.edits.diverged.extend(values)",
        "ctx.edits.replace(old, new, scope)",
        "ctx.edits.rollback(mark)",
        "ctx.edits.checkpoint()",
        "ctx.edits.shape_body(copy, form)",
        "ctx.edits.note('text')",
        "ctx.edits.unloadable = []",
        "ctx.walk.rewalk(body, scope, node, 'body')",
        "ctx.walk.visit(node, scope)",
        "ctx.budget.spend(3, 0, 'copies')",
        "ctx.budget.charge(3, 0)",
        "ctx.budget.restore(state)",
    ]
    plain = [
        "found = []",
        "found.append(x)",
        "work: list[int] = []",
        "work.pop()",
        "x = other.pop()",
        "y = seq.insert(0, t)",
        "a, b = [], set()",
        "a.append(x)",
        "b.add(x)",
        "seen = set()",
        "seen.add(x)",
        "ctx.edits.current(v)",
        "ctx.edits.next_name('a', 'Loop')",
        "x = ctx.facts.values.get(v)",
        "over = ctx.budget.afford(3, 0, 'copies')",
        "local = 3",
    ]
    body = "\n".join(f"    {line}" for line in caught + plain)
    target = tmp_path / "transfer" / "sample.py"
    target.parent.mkdir()
    target.write_text(f"def probe(ctx, param, thing, g, old, node, copy):\n{body}\n")
    hits = [h.split("] ", 1)[1] for h in writes(target, tmp_path)]
    assert hits == caught


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


if __name__ == "__main__":
    hits = transfer_writes()
    print("\n".join(hits))
    print(f"{len(hits)} writes under transfer/", file=sys.stderr)

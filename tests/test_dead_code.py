"""Issue 18: dead code removed in one batch per graph, with onnx_ir's pass's semantics."""

from __future__ import annotations

from pathlib import Path

import onnx
import onnx.parser
import onnx_ir as ir
import onnx_ir.passes.common as common_passes
import pytest

from seqpasses.passes.dead_code import RemoveDeadNodesPass, dead_nodes, marked_dead


def test_dead_code_keeps_the_library_passes_semantics() -> None:
    # seqpasses' dead-code pass replaces onnx_ir's RemoveUnusedNodesPass (quadratic in graph
    # outputs): on a model the library's pass handles fully, the results are the same.
    text = (
        '<ir_version: 8, opset_import: ["" : 18, "local" : 1]>'
        + """
main (float[2, 3] x, bool flag) => (float[2, 3] y, float[2, 3] kept)
    <float[3] unused = {1, 2, 3}, float[1] used = {2}> {
    y0, mask = Dropout (x)
    y = Mul (y0, used)
    kept = Identity (x)
    dead = Neg (x)
    f = local.twice (dead)
}
<domain: "local", opset_import: ["" : 18]>
twice (v) => (u) {
    w = Relu (v)
    u = Add (v, v)
}
"""
    )
    proto = onnx.parser.parse_model(text)
    ours, theirs = ir.serde.deserialize_model(proto), ir.serde.deserialize_model(proto)
    done = RemoveDeadNodesPass()
    assert done(ours).modified
    assert common_passes.RemoveUnusedNodesPass()(theirs).modified
    assert sorted(n.op_type for n in done.removed) == ["Neg", "Relu", "twice"]
    ours_proto, theirs_proto = ir.serde.serialize_model(ours), ir.serde.serialize_model(theirs)
    assert onnx.printer.to_text(ours_proto) == onnx.printer.to_text(theirs_proto)
    dropout = ours_proto.graph.node[0]
    assert dropout.op_type == "Dropout" and list(dropout.output) == ["y0"]
    assert [t.name for t in ours_proto.graph.initializer] == ["used"]
    assert [n.op_type for n in ours_proto.functions[0].node] == ["Add"]


def test_protected_nodes_stay_with_what_they_read_and_the_branch_that_holds_them() -> None:
    # what seqpasses must keep (a check its rewrite emitted, a node that fails at run time)
    # stays though nothing reads it, and so does an If whose branch holds such a node
    text = """<ir_version: 8, opset_import: ["" : 18]>
main (float[2, 3] x, bool flag, int64 p) => (float[2, 3] y) {
    y = Identity (x)
    r = Range (p, p, p)
    check = Gather (x, p)
    branch = If (flag) <then_branch = t () => (float[2, 3] a) {
        inner = Gather (x, p)
        a = Identity (x)
    }, else_branch = e () => (float[2, 3] b) {
        b = Identity (x)
    }>
    gone = Neg (x)
}"""
    model = ir.serde.deserialize_model(onnx.parser.parse_model(text))
    nodes = {n.name or n.outputs[0].name: n for n in model.graph}
    branch = nodes["branch"].attributes["then_branch"].as_graph()
    inner = next(n for n in branch if n.op_type == "Gather")
    assert {n.op_type for n in dead_nodes(model)} == {"Range", "Gather", "If", "Neg"}
    done = RemoveDeadNodesPass(protected={nodes["check"], inner})
    done(model)
    kept = [n.op_type for n in model.graph]
    assert kept == ["Identity", "Gather", "If"]  # (Range and Neg go: nothing keeps them)
    assert [n.op_type for n in branch] == ["Gather", "Identity"]


DEAD_CASES = {
    # a dead chain: its last node is read by nothing
    "chain": """
main (float[2] x) => (float[2] y) {
    y = Relu (x)
    a = Neg (x)
    b = Abs (a)
}
""",
    # read only by a node that is dead inside a live branch
    "read in a branch": """
main (float[2] x, bool c) => (float[2] y) {
    a = Neg (x)
    y = If (c) <then_branch = g1 () => (float[2] t) {
        unused = Abs (a)
        t = Identity (x)
    }, else_branch = g2 () => (float[2] e) {
        e = Identity (x)
    }>
}
""",
    # read only by a dead If: one branch returns it as it is, the other reads it
    "returned by a dead branch": """
main (float[2] x, bool c) => (float[2] y) {
    y = Relu (x)
    a = Neg (x)
    z = If (c) <then_branch = g1 () => (float[2] a) {
    }, else_branch = g2 () => (float[2] e) {
        e = Abs (a)
    }>
}
""",
    # every node read by another or returned: nothing is dead
    "every node read": """
main (float[2] x) => (float[2] y) {
    a = Neg (x)
    y = Abs (a)
}
""",
}


@pytest.mark.parametrize("case", sorted(DEAD_CASES))
def test_the_walk_for_a_node_read_by_nothing_agrees_with_the_marking(case: str) -> None:
    proto = onnx.parser.parse_model('<ir_version: 8, opset_import: ["" : 18]>' + DEAD_CASES[case])
    model = ir.serde.deserialize_model(proto)
    assert dead_nodes(model) == marked_dead(model)
    assert bool(marked_dead(model)) == (case != "every node read")


def test_the_walk_agrees_with_the_marking_on_the_sample_models() -> None:
    paths = sorted(Path(__file__).parent.parent.joinpath("sample_models").rglob("*.onnx"))
    assert paths
    held = 0
    for path in paths:
        try:
            model = ir.load(path)
        except Exception:  # (a type onnx_ir cannot hold: ZipMap's maps)
            continue
        held += 1
        assert dead_nodes(model) == marked_dead(model), path.name
    assert held > len(paths) // 2


@pytest.mark.parametrize("case", sorted(DEAD_CASES))
def test_removal_takes_what_the_marking_finds(case: str) -> None:
    # a graph none of whose nodes is read by nothing is not marked at all: the removal still
    # takes exactly the dead nodes, at every depth
    proto = onnx.parser.parse_model('<ir_version: 8, opset_import: ["" : 18]>' + DEAD_CASES[case])
    model = ir.serde.deserialize_model(proto)
    dead = marked_dead(model)
    done = RemoveDeadNodesPass()
    done(model)
    assert set(done.removed) == dead
    assert all(node.graph is None for node in dead)
    assert not marked_dead(model)

"""Issue 18: dead code removed in one batch per graph, with onnx_ir's pass's semantics."""

from __future__ import annotations

import onnx
import onnx.parser
import onnx_ir as ir
import onnx_ir.passes.common as common_passes

from seqpasses.passes.dead_code import RemoveDeadNodesPass


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

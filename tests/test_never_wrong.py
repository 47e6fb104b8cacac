"""Issue: never a wrong or bigger model (nested control flow, invalid attributes, self-check)."""

from __future__ import annotations

import onnx
from onnx import TensorProto, helper

import seqpasses
from helpers import sequence_op_count


def _concat_new_axis(new_axis: int) -> onnx.ModelProto:
    nodes = [
        helper.make_node("SequenceConstruct", ["a", "b"], ["s"]),
        helper.make_node("ConcatFromSequence", ["s"], ["y"], axis=0, new_axis=new_axis),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, [2, 3]) for n in "ab"],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_concat_with_new_axis_outside_the_spec_is_left() -> None:
    # The checker rejects new_axis=2 and ONNX Runtime stacks anyway: lowering it as a concat
    # (or a stack) would be a guess, so the node stays and the report says why.
    model = _concat_new_axis(2)
    report = seqpasses.Report()
    optimized = seqpasses.optimize(model, report=report)
    assert [n.op_type for n in optimized.graph.node] == ["SequenceConstruct", "ConcatFromSequence"]
    assert any("new_axis 2 is not 0 or 1" in left.detail for left in report.left)
    check = seqpasses.verify(model, optimized)
    assert check.ok, check.mismatch


def test_concat_with_new_axis_one_is_still_lowered() -> None:
    optimized = seqpasses.optimize(_concat_new_axis(1))
    assert sequence_op_count(optimized) == 0

"""Every new node is valid for the model's opset: attribute forms below 13, input forms from 13."""

from __future__ import annotations

import numpy as np
import onnx
import pytest

import seqpasses
from helpers import all_nodes, sequence_op_count

OPSETS = [11, 12, 13, 16, 17, 18, 19, 21]
IR_FOR = {11: 6, 12: 7, 13: 7, 16: 8, 17: 8, 18: 8, 19: 9, 21: 10}


def _model(opset: int) -> onnx.ModelProto:
    reduce = (
        "col = ReduceSumSquare<keepdims = 0, axes = [1]>(c)"
        if opset < 18
        else "one = Constant<value = int64[1] {1}>()\n  col = ReduceSumSquare<keepdims = 0>(c, one)"
    )
    text = f"""<ir_version: {IR_FOR[opset]}, opset_import: ["" : {opset}]>
g (float[3,4] x, float[3,4] w) => (float[4,3] stacked, float[6,4] joined, float[3] col, int64 n) {{
  rows = SplitToSequence<axis = 0, keepdims = 0>(x)
  two = Constant<value = int64 {{2}}>()
  cols = SplitToSequence<axis = 1>(w, two)
  n = SequenceLength(cols)
  last = Constant<value = int64 {{-1}}>()
  c = SequenceAt(cols, last)
  {reduce}
  stacked = ConcatFromSequence<axis = 1, new_axis = 1>(rows)
  pair = SequenceConstruct(w, x)
  joined = ConcatFromSequence<axis = 0>(pair)
}}"""
    return onnx.parser.parse_model(text)


@pytest.mark.parametrize("opset", OPSETS)
def test_emitted_ops_follow_the_opset(opset: int) -> None:
    model = _model(opset)
    onnx.checker.check_model(model, full_check=True)
    optimized = seqpasses.optimize(model)
    onnx.checker.check_model(optimized, full_check=True)
    assert sequence_op_count(optimized) == 0
    for node in all_nodes(optimized):
        attrs = {a.name for a in node.attribute}
        if node.op_type in ("Unsqueeze", "Squeeze"):
            if opset < 13:
                assert "axes" in attrs and len(node.input) == 1
            else:
                assert "axes" not in attrs and len(node.input) == 2
        if node.op_type == "Split":
            assert "num_outputs" not in attrs
            if opset < 13:
                assert "split" in attrs and len(node.input) == 1
            else:
                assert "split" not in attrs and len(node.input) == 2
    report = seqpasses.verify(model, optimized)
    assert report.ok, report.mismatch
    assert report.engines == ["onnx.reference", "onnxruntime"]


@pytest.mark.parametrize("opset", [11, 13, 18])
def test_unsqueeze_and_squeeze_forms_are_emitted(opset: int) -> None:
    optimized = seqpasses.optimize(_model(opset))
    ops = {node.op_type for node in all_nodes(optimized)}
    assert {"Split", "Squeeze", "Concat"} <= ops


def _run_time_model(opset: int) -> onnx.ModelProto:
    """Run-time positions and a loop with a run-time trip count that reads and pops its list
    (a Loop carries sequences from opset 13): every list held as one [n, *E] tensor."""
    loop = """final = Loop(steps, go, u) <body = body (int64 i, bool c, seq(float) l) => (bool co, seq(float) lo) {
    co = Identity(c)
    read = SequenceAt(l, i)
    popped = SequenceErase(l)
    twice = Add(read, read)
    lo = SequenceInsert(popped, twice, i)
  }>"""
    if opset < 13:
        loop = "final = SequenceInsert(u, a, steps)"
    text = f"""<ir_version: {IR_FOR[opset]}, opset_import: ["" : {opset}]>
g (float[2,3] a, float[2,3] b, int64 p, int64 steps) => (float[2,3] y, float[?,3] z, int64 n) {{
  s = SequenceConstruct(a, b, a)
  t = SequenceInsert(s, b, p)
  u = SequenceErase(t, p)
  y = SequenceAt(u, p)
  n = SequenceLength(u)
  go = Constant<value = bool {{1}}>()
  {loop}
  z = ConcatFromSequence<axis = 0>(final)
}}"""
    return onnx.parser.parse_model(text)


@pytest.mark.parametrize("opset", OPSETS)
def test_lists_held_as_one_tensor_at_every_opset(opset: int) -> None:
    model = _run_time_model(opset)
    onnx.checker.check_model(model, full_check=True)
    report = seqpasses.Report()
    optimized = seqpasses.optimize(model, report=report)
    onnx.checker.check_model(optimized, full_check=True)
    assert sequence_op_count(optimized) == 0, [(r.op_type, r.detail) for r in report.left]
    wanted = "loop-carries-stacked" if opset >= 13 else "stacked-insert"
    assert wanted in {r.rule for r in report.rewrites}
    for node in all_nodes(optimized):
        if node.op_type in ("Unsqueeze", "Squeeze"):
            assert ("axes" in {a.name for a in node.attribute}) == (opset < 13)
    # positions in range and out of it, zero to three iterations: results and failures agree
    inputs = [
        {"p": np.array(p, dtype=np.int64), "steps": np.array(k, dtype=np.int64)}
        for p, k in [(0, 0), (1, 1), (-1, 2), (2, 3), (3, 1), (-4, 1)]
    ]
    check = seqpasses.verify(model, optimized, inputs=inputs, failures="must_match")
    assert check.ok, check.mismatch
    assert check.engines == ["onnx.reference", "onnxruntime"]

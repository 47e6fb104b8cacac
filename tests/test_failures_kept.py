"""A model that fails at run time still fails after seqpasses (failures are outputs too): what
was dead in the model stays, what is left because it may fail stays, and the checks the
rewrites emit stay whatever reads them: only their length, only a branch, an If's outputs."""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
import pytest

import seqpasses
from helpers import sequence_op_count


def _model(text: str, opset: int = 18) -> onnx.ModelProto:
    return onnx.parser.parse_model(f'<ir_version: 8, opset_import: ["" : {opset}]>\n' + text)


def _keeps_outcomes(model: onnx.ModelProto, feeds: list[dict[str, Any]]) -> onnx.ModelProto:
    """The optimized model: on each input set it fails where ``model`` fails and gives its
    outputs where it runs, on both evaluators; some input sets fail, some run."""
    optimized = seqpasses.optimize(model)
    check = seqpasses.verify(model, optimized, inputs=feeds, failures="must_match")
    assert check.ok, check.mismatch
    ran = {r.name: r for r in check.results if not r.why}
    assert set(ran) == {"onnx.reference", "onnxruntime"}, check.results
    assert all(r.compared == len(feeds) for r in ran.values())
    assert 0 < ran["onnxruntime"].original_failed < len(feeds)
    return optimized


def test_a_check_in_a_branch_stays_with_the_if_that_holds_it() -> None:
    # lists of different lengths from the branches: one [n, 3] tensor each; the else branch
    # erases at a run-time position (its check) and only the length is read after the If
    model = _model("""
g (float[3] a, bool flag, int64 p) => (int64 n) {
  s = If(flag) <then_branch = t () => (seq(float[3]) one) {
    one = SequenceConstruct(a)
  }, else_branch = e () => (seq(float[3]) rest) {
    three = SequenceConstruct(a, a, a)
    rest = SequenceErase(three, p)
  }>
  n = SequenceLength(s)
}""")
    feeds = [
        {"a": np.ones(3, np.float32), "flag": np.array(flag), "p": np.array(p, np.int64)}
        for flag in (True, False)
        for p in (1, 5)
    ]
    optimized = _keeps_outcomes(model, feeds)
    assert sequence_op_count(optimized) == 0
    assert [n.op_type for n in optimized.graph.node].count("If") == 1


def test_a_check_in_a_loop_body_stays() -> None:
    # split sizes known only at run time, read only for their number, inside a loop body
    model = _model("""
g (float[4,2] x, int64[2] sizes, int64 trips) => (int64 total) {
  zero = Constant<value = int64 {0}>()
  total = Loop(trips, "", zero) <body = b (int64 i, bool c, int64 acc) => (bool co, int64 more) {
    s = SplitToSequence<axis = 0>(x, sizes)
    n = SequenceLength(s)
    more = Add(acc, n)
    co = Identity(c)
  }>
}""")
    feeds = [
        {"x": np.ones((4, 2), np.float32), "sizes": np.array(sizes, np.int64), "trips": np.array(2)}
        for sizes in ([1, 3], [2, 1])
    ]
    optimized = _keeps_outcomes(model, feeds)
    assert sequence_op_count(optimized) == 0
    body = optimized.graph.node[-1].attribute[0].g
    assert "Split" in [n.op_type for n in body.node]


@pytest.mark.parametrize(("position", "kept"), [(-2, True), (0, False)])
def test_a_failing_op_dead_in_the_model_stays(position: int, kept: bool) -> None:
    # nothing reads e or unread: they still run (and fail out of range) on both evaluators;
    # a SequenceAt in range cannot fail: folded, it goes
    model = _model(f"""
g (float[3] a, int64 p) => (float[3] y) {{
  s = SequenceConstruct(a)
  e = SequenceErase(s, p)
  q = Constant<value = int64 {{{position}}}>()
  unread = SequenceAt(s, q)
  y = Identity(a)
}}""")
    feeds = [{"a": np.ones(3, np.float32), "p": np.array(p, np.int64)} for p in (0, 3)]
    optimized = seqpasses.optimize(model)
    check = seqpasses.verify(model, optimized, inputs=feeds, failures="must_match")
    assert check.ok, check.mismatch
    ops = [n.op_type for n in optimized.graph.node]
    assert ("SequenceAt" in ops) == kept  # out of range: left, kept though nothing reads it
    assert "Gather" in ops  # the check of the erase's run-time position (Gather([0], p))


def test_the_checks_are_written_in_the_order_they_were_made() -> None:
    # four run-time checks (a position of an insert, row 0 of a loop's list read three
    # times), each given an unread Cast: the result must not depend on where the checks sit
    # in memory (a set of them once gave up to seven different results in eight runs of
    # one process)
    model = _model("""
g (float[3,2,2] x0, int64 i9) => (int64 n, float[3,2,2] first) {
  sig = Sigmoid(x0)
  s3 = SequenceConstruct(sig, sig, x0)
  rel = Relu(x0)
  s7 = SequenceInsert(s3, rel)
  s10 = SequenceInsert(s7, x0, i9)
  four = Constant<value = int64 {4}>()
  yes = Constant<value = bool {1}>()
  grown = Loop(four, yes, s10) <body = b (int64 it, bool c, seq(float[]) sin)
      => (bool cout, seq(float[]) sout) {
    cout = Identity(c)
    itf = Cast<to = 1>(it)
    new = Add(sig, itf)
    zero = Constant<value = int64 {0}>()
    row = SequenceAt(sin, zero)
    total = ReduceSum<keepdims = 0>(row)
    more = Add(new, total)
    sout = SequenceInsert(sin, more)
  }>
  abs = Abs(sig)
  back = Constant<value = int64 {-4}>()
  s36 = SequenceInsert(s10, abs, back)
  n = SequenceLength(s3)
  at = Constant<value = int64 {0}>()
  first = SequenceAt(s7, at)
}""")
    feeds = [
        {"x0": np.full((3, 2, 2), 0.5, np.float32), "i9": np.array(p, np.int64)}
        for p in (0, 2, -1, 9)
    ]
    results = {_keeps_outcomes(model, feeds).SerializeToString()}
    ballast = []
    for size in (1, 977, 4099, 31, 2053, 7, 6151, 389):  # (other addresses for each run)
        ballast.append([object() for _ in range(size)])
        optimized = seqpasses.optimize(model)
        results.add(optimized.SerializeToString())
    assert len(results) == 1
    kept = [n.name for n in optimized.graph.node if n.name.endswith("/kept")]
    assert len(kept) >= 2, kept
    assert sequence_op_count(optimized) == 0

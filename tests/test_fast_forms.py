"""Forms ONNX Runtime runs at least as fast as the lists they replace (issue 49.9;
``benchmarks/ort_speed.py`` measures them on the sample models), each tested for structure
and numbers, failures included:

- a list of one length at every iteration of a Loop, edited at known positions (a queue, a
  pair of RNN states), is carried as its elements: nothing is copied per step;
- an edit at a known position of a list of run-time length is slices of constant bounds and
  an unread ``Gather`` of that row (it fails where the edit does), not a ``Range`` of every
  position and a ``Gather`` of every row kept;
- a ConcatFromSequence of a list that may be empty keeps its failure by an unread ``Gather``
  of row 0, not by gathering row 0 and concatenating it back;
- an edit at a run-time position of a list of a small known length is a ``Gather`` of its
  rows by a row of a constant table (an insert reads its tables at ``2p``), not a
  normalization of the position (``Less``, ``Sub``, ``Where``) and slices around it.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
import pytest

import seqpasses
from helpers import op_counts, sequence_op_count

QUEUE = """<ir_version: 8, opset_import: ["" : 18]>
g (float[2,3] x, int64 n) => (float[3,2,3] q) {
  t = Constant<value = bool {1}>()
  a = Neg(x)
  b = Sigmoid(x)
  l = SequenceConstruct(x, a, b)
  fl = Loop(n, t, l) <body = body (int64 i, bool go, seq(float[2,3]) li) => (bool go2, seq(float[2,3]) lo) {
    go2 = Identity(go)
    zero = Constant<value = int64 {0}>()
    front = SequenceAt(li, zero)
    rest = SequenceErase(li, zero)
    new = Tanh(front)
    lo = SequenceInsert(rest, new)
  }>
  q = ConcatFromSequence<axis = 0, new_axis = 1>(fl)
}"""


def _check(
    original: onnx.ModelProto, optimized: onnx.ModelProto, feeds: list[dict[str, Any]]
) -> None:
    """Both evaluators agree with the original on every input set, failures included."""
    for inputs in feeds:
        report = seqpasses.verify(original, optimized, inputs=[inputs], failures="must_match")
        assert report.ok, report.mismatch


def _n(k: int) -> np.ndarray:
    return np.array(k, dtype=np.int64)


X = np.arange(6, dtype=np.float32).reshape(2, 3) / 7


def test_a_queue_is_carried_as_its_elements() -> None:
    model = onnx.parser.parse_model(QUEUE)
    report = seqpasses.Report()
    optimized = seqpasses.optimize(model, report=report)
    assert sequence_op_count(optimized) == 0
    assert "loop-carries-elements" in {r.rule for r in report.rewrites}
    loop = next(n for n in optimized.graph.node if n.op_type == "Loop")
    assert len(loop.input) == 2 + 3 and len(loop.output) == 3
    body = loop.attribute[0].g
    # the pop and the append pass tensors on: no Gather, Slice or Concat per step
    assert not {"Gather", "Slice", "Concat"} & {n.op_type for n in body.node}
    _check(model, optimized, [{"x": X, "n": _n(k)} for k in (0, 1, 2, 5)])


def test_states_rebuilt_each_step_and_a_ragged_list_are_carried_as_elements() -> None:
    text = """<ir_version: 8, opset_import: ["" : 18]>
    g (float[2,3] x, int64 n) => (float[2,3] h, float[4] r) {
      t = Constant<value = bool {1}>()
      flat = Constant<value = float[1] {1}>()
      s = SequenceConstruct(x, x)
      ragged = SequenceConstruct(x, flat)
      fs, fr = Loop(n, t, s, ragged) <body = body (int64 i, bool go, seq(float[2,3]) si, seq(float) ri) => (bool go2, seq(float[2,3]) so, seq(float) ro) {
        go2 = Identity(go)
        zero = Constant<value = int64 {0}>()
        one = Constant<value = int64 {1}>()
        h1 = SequenceAt(si, zero)
        h2 = SequenceAt(si, one)
        sum = Add(h1, h2)
        new1 = Tanh(sum)
        so = SequenceConstruct(new1, h1)
        big = SequenceAt(ri, zero)
        small = SequenceAt(ri, one)
        twice = Add(small, small)
        ro = SequenceConstruct(big, twice)
      }>
      zero_out = Constant<value = int64 {0}>()
      one_out = Constant<value = int64 {1}>()
      h = SequenceAt(fs, zero_out)
      last = SequenceAt(fr, one_out)
      r = Concat<axis = 0>(last, last, last, last)
    }"""
    model = onnx.parser.parse_model(text)
    report = seqpasses.Report()
    optimized = seqpasses.optimize(model, report=report)
    assert sequence_op_count(optimized) == 0, [(r.op_type, r.detail) for r in report.left]
    assert "loop-carries-elements" in {r.rule for r in report.rewrites}
    _check(model, optimized, [{"x": X, "n": _n(k)} for k in (0, 1, 3)])


@pytest.mark.parametrize(
    ("body", "why"),
    [
        # a read at the counter: a run-time position (one tensor is the better form)
        ("front = SequenceAt(li, i)", "run-time position"),
        # the element grows every step: its shape is not the same at every iteration
        ("front0 = SequenceAt(li, zero)\n    front = Concat<axis = 0>(front0, front0)", "grows"),
    ],
)
def test_lists_not_of_fixed_elements_are_not_carried_as_elements(body: str, why: str) -> None:
    text = (
        QUEUE.replace("    front = SequenceAt(li, zero)", "    " + body)
        .replace("float[2,3]) li", "float) li")
        .replace("seq(float[2,3]) lo", "seq(float) lo")
        .replace("float[3,2,3] q", "float q")
    )
    model = onnx.parser.parse_model(text)
    report = seqpasses.Report()
    optimized = seqpasses.optimize(model, report=report)
    assert "loop-carries-elements" not in {r.rule for r in report.rewrites}, why
    feeds = [{"x": X, "n": _n(k)} for k in (0, 1, 2, 4)]
    _check(model, optimized, feeds)


ERASE = """<ir_version: 8, opset_import: ["" : 18]>
g (float[N,3] x) => (float[M,3] y, int64 n) {
  s = SplitToSequence<axis = 0, keepdims = 0>(x)
  p = Constant<value = int64 {POSITION}>()
  e = SequenceErase(s, p)
  y = ConcatFromSequence<axis = 0, new_axis = 1>(e)
  n = SequenceLength(e)
}"""

INSERT = """<ir_version: 8, opset_import: ["" : 18]>
g (float[N,3] x, float[3] t) => (float[M,3] y) {
  s = SplitToSequence<axis = 0, keepdims = 0>(x)
  p = Constant<value = int64 {POSITION}>()
  e = SequenceInsert(s, t, p)
  y = ConcatFromSequence<axis = 0, new_axis = 1>(e)
}"""


@pytest.mark.parametrize("position", [0, 1, 2, -1, -2, -3])
@pytest.mark.parametrize("template", [ERASE, INSERT], ids=["erase", "insert"])
def test_an_edit_at_a_known_position_of_a_run_time_length_is_slices(
    template: str, position: int
) -> None:
    model = onnx.parser.parse_model(template.replace("POSITION", str(position)))
    report = seqpasses.Report()
    optimized = seqpasses.optimize(model, report=report)
    assert sequence_op_count(optimized) == 0, [(r.op_type, r.detail) for r in report.left]
    ops = op_counts(optimized)
    assert ops["Range"] == 0 and ops["GreaterOrEqual"] == 0 and ops["Where"] == 0, ops
    # rows 0 to 3: an edit that fails (out of range, or concatenating nothing) fails still
    feeds = [
        {"x": np.arange(3 * rows, dtype=np.float32).reshape(rows, 3), "t": -np.ones(3, np.float32)}
        for rows in range(4)
    ]
    if template is ERASE:
        feeds = [{"x": f["x"]} for f in feeds]
    _check(model, optimized, feeds)


def test_a_concatenation_of_a_list_that_may_be_empty_is_the_tensor_itself() -> None:
    text = """<ir_version: 8, opset_import: ["" : 18]>
    g (float[N,3] x) => (float[N,3] y) {
      s = SplitToSequence<axis = 0, keepdims = 0>(x)
      y = ConcatFromSequence<axis = 0, new_axis = 1>(s)
    }"""
    model = onnx.parser.parse_model(text)
    optimized = seqpasses.optimize(model)
    assert sequence_op_count(optimized) == 0
    ops = op_counts(optimized)
    assert ops["Concat"] == 0 and ops["Gather"] == 1, ops  # (the unread check)
    feeds = [{"x": np.ones((rows, 3), np.float32)} for rows in (0, 1, 3)]
    _check(model, optimized, feeds)


EDIT_AT = """<ir_version: 8, opset_import: ["" : OPSET]>
g (float[2,3] x, float[2,3] y, IDX p) => (float[ROWS,2,3] out, int64 n) {
  s = SequenceConstruct(x, y, x)
  r = Mul(x, y)
  e = EDIT
  out = ConcatFromSequence<axis = 0, new_axis = 1>(e)
  n = SequenceLength(e)
}"""


@pytest.mark.parametrize("opset", [11, 12, 13, 18])
@pytest.mark.parametrize("dtype", ["int64", "int32"])
@pytest.mark.parametrize(
    "edit", ["SequenceInsert(s, r, p)", "SequenceErase(s, p)"], ids=["insert", "erase"]
)
def test_an_edit_at_a_run_time_position_of_a_small_list_is_a_table_row(
    edit: str, dtype: str, opset: int
) -> None:
    inserting = edit.startswith("SequenceInsert")
    text = EDIT_AT.replace("EDIT", edit).replace("IDX", dtype).replace("OPSET", str(opset))
    model = onnx.parser.parse_model(text.replace("ROWS", "4" if inserting else "2"))
    report = seqpasses.Report()
    optimized = seqpasses.optimize(model, report=report)
    assert sequence_op_count(optimized) == 0, [(r.op_type, r.detail) for r in report.left]
    ops = op_counts(optimized)
    if inserting and opset < 12:  # (no Clip of integers: the position normalized as before)
        assert ops["Where"] == 1 and ops["Clip"] == 0, ops
    else:
        for slow in ("Less", "Where", "Range", "Slice", "GreaterOrEqual", "Cast", "Reshape"):
            assert ops[slow] == 0, ops
        # the table of rows, that of the guard and the rows: three Gathers; the list (and
        # the inserted row) stacked by one Concat of its rows unsqueezed
        assert ops["Gather"] == 3 and ops["Concat"] == 1, ops
        assert ops["Unsqueeze"] == 2 + int(inserting), ops  # (x listed twice: once)
        assert ops["Mul"] == 1 + int(inserting), ops  # (r, and 2p)
        assert ops["Clip"] == int(inserting), ops  # (p first clipped: 2p cannot wrap)
    # every position the edit accepts, one past each end, and the ends of the position's
    # type (2p of those wraps around): those fail as the edit does
    reach = 3 if inserting else 2
    dt = np.int64 if dtype == "int64" else np.int32
    info = np.iinfo(dt)
    positions = [*range(-reach - 2, reach + 2), info.min, info.min + 1, info.max, info.max // 2]
    positions += [-(info.max // 2) - 1, info.max // 2 + 1]
    y = -X - 1
    feeds = [{"x": X, "y": y, "p": np.array(k, dtype=dt)} for k in positions]
    _check(model, optimized, feeds)


def test_a_stack_keeps_no_dim_a_declaration_claims() -> None:
    # the model declares the stacked element [5,3] (value_info, as a traced export may), yet
    # it is [N,3]: ONNX Runtime runs the model whatever the declaration says, so the stack
    # is written in a form that reads no declared dim (Unsqueeze each + Concat), not as a
    # Reshape to a target built from what is declared
    model = onnx.parser.parse_model("""<ir_version: 8, opset_import: ["" : 17]>
    g (float[N,3] x, int64 p) => (float[A,B,C] y, float[D,B,C] z) <float[5,3] a> {
      a = Relu(x)
      s = SequenceConstruct(a, a, a)
      y = ConcatFromSequence<axis = 0, new_axis = 1>(s)
      e = SequenceErase(s, p)
      z = ConcatFromSequence<axis = 0, new_axis = 1>(e)
    }""")
    optimized = seqpasses.optimize(model)
    assert sequence_op_count(optimized) == 0
    assert op_counts(optimized)["Reshape"] == 0
    feeds = [{"x": X[:1] - 0.5, "p": _n(k)} for k in (-4, -1, 0, 2, 3)]
    feeds.append({"x": np.ones((4, 3), np.float32), "p": _n(1)})
    _check(model, optimized, feeds)

"""Lists as real exporters write them (issue 49), each in its smallest form, structure and
numbers: a row appended in a Loop that comes out of an ``If`` (the dynamo exporter's
``EmbeddingBag``), a split by a vector of ones as long as the axis (TorchScript's
``repeat_interleave``), read at a Loop counter declared ``[1]`` (TorchScript declares it
so, and ONNX Runtime then feeds it so; the spec makes it a scalar). The exports themselves are in ``sample_models/torch``
(``dynamo_embedding_bag``, ``ts_repeat_interleave``) and ``tests/test_torch_exports.py``."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx.reference import ReferenceEvaluator

import seqpasses
from helpers import op_counts, sequence_op_count
from seqpasses.verification import REFERENCE_OVERRIDES

IF_ROW = """<ir_version: 8, opset_import: ["" : 18]>
g (float[N,4] x, int64 n) => (float[M,1,4] y) {
    t = Constant<value = bool {1}>()
    empty = SequenceEmpty<dtype = 1>()
    rows = Loop(n, t, empty) <body = step (int64 i, bool c, seq(float) acc) => (
            bool c_out, seq(float) out) {
        c_out = Identity(c)
        zero = Constant<value = int64 {0}>()
        first = Equal(i, zero)
        row = If(first) <
            then_branch = a () => (float[1,4] r) {
                idx = Constant<value = int64[1] {0}>()
                r = Gather<axis = 0>(x, idx)
            },
            else_branch = b () => (float[1,4] r2) {
                ones = Constant<value = int64[1] {1}>()
                r2 = Gather<axis = 0>(x, ones)
            }>
        out = SequenceInsert(acc, row)
    }>
    y = ConcatFromSequence<axis = 0, new_axis = 1>(rows)
}"""


def _undeclared_branches(text: str) -> onnx.ModelProto:
    """``text`` with the If's branch outputs declared with no shape (as the dynamo exporter
    writes them)."""
    model = onnx.parser.parse_model(text)
    loop = next(n for n in model.graph.node if n.op_type == "Loop")
    body = loop.attribute[0].g
    branch_if = next(n for n in body.node if n.op_type == "If")
    for attr in branch_if.attribute:
        for out in attr.g.output:
            out.type.tensor_type.ClearField("shape")
    return model


def _same(original: onnx.ModelProto, optimized: onnx.ModelProto, feeds: dict[str, object]) -> None:
    want = ReferenceEvaluator(original).run(None, feeds)
    for got in (
        # (onnx.reference's Loop concatenates scan outputs: REFERENCE_OVERRIDES stacks them)
        ReferenceEvaluator(optimized, new_ops=list(REFERENCE_OVERRIDES)).run(None, feeds),
        ort.InferenceSession(optimized.SerializeToString(), providers=["CPUExecutionProvider"]).run(
            None, feeds
        ),
    ):
        for a, b in zip(want, got, strict=True):
            assert a.shape == b.shape
            np.testing.assert_allclose(a, b, rtol=1e-6)  # (ONNX Runtime's tanh: 1 ulp off)


def _lowered(text: str, *rules: str) -> tuple[onnx.ModelProto, onnx.ModelProto]:
    """The model ``text`` and what optimize makes of it, with no sequence op left and each
    of ``rules`` among its rewrites."""
    model = onnx.parser.parse_model(text)
    report = seqpasses.Report()
    optimized = seqpasses.optimize(model, report=report)
    assert sequence_op_count(optimized) == 0, [(r.op_type, r.detail) for r in report.left]
    assert set(rules) <= {r.rule for r in report.rewrites}
    return model, optimized


def test_an_appended_row_out_of_an_if_is_typed_through_its_branches() -> None:
    model = _undeclared_branches(IF_ROW)
    report = seqpasses.Report()
    optimized = seqpasses.optimize(model, report=report)
    assert sequence_op_count(optimized) == 0, [(r.op_type, r.detail) for r in report.left]
    assert "loop-append-to-scan-output" in {r.rule for r in report.rewrites}
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    for n in (1, 3):
        _same(model, optimized, {"x": x, "n": np.array(n, dtype=np.int64)})


def test_branches_of_different_shapes_give_no_shape() -> None:
    """Where the branches disagree (a row of 4, a row of 3), the element has no provable
    shape: the list stays, and the model is unchanged in what it computes."""
    text = IF_ROW.replace(
        "r2 = Gather<axis = 0>(x, ones)",
        "r3 = Gather<axis = 0>(x, ones)\n"
        "                s = Constant<value = int64[1] {0}>()\n"
        "                e = Constant<value = int64[1] {3}>()\n"
        "                a1 = Constant<value = int64[1] {1}>()\n"
        "                r2 = Slice(r3, s, e, a1)",
    )
    model = _undeclared_branches(text)
    report = seqpasses.Report()
    optimized = seqpasses.optimize(model, report=report)
    assert sequence_op_count(optimized) > 0
    assert report.left


ONES_SPLIT = """<ir_version: 8, opset_import: ["" : 17]>
g (float[n,3] x, int64[%s] r) => (float[n,3] y, int64 count) {
    shape = Shape(r)
    ones = ConstantOfShape<value = int64[1] {1}>(shape)
    rows = SplitToSequence<axis = 0>(x, ones)
    count = SequenceLength(rows)
    t = Constant<value = bool {1}>()
    empty = SequenceEmpty<dtype = 1>()
    out = Loop(count, t, empty) <body = step (int64[1] i, bool c, seq(float) acc) => (
            bool c_out, seq(float) acc_out) {
        c_out = Identity(c)
        row = SequenceAt(rows, i)
        acc_out = SequenceInsert(acc, row)
    }>
    y = ConcatFromSequence<axis = 0>(out)
}"""


def test_a_split_by_ones_as_long_as_the_axis_is_a_split_into_rows() -> None:
    """``SplitToSequence(x, ConstantOfShape(Shape(r), 1))`` with ``r`` as long as ``x``
    (both ``n``): every piece is one row, as many as ``x`` has, whatever ``n`` is. The Loop
    counter is declared ``[1]`` (TorchScript does): the read is reshaped to what the Gather
    needs, whichever ONNX Runtime feeds."""
    model = onnx.parser.parse_model(ONES_SPLIT % "n")
    report = seqpasses.Report()
    optimized = seqpasses.optimize(model, report=report)
    assert sequence_op_count(optimized) == 0, [(r.op_type, r.detail) for r in report.left]
    assert "SplitToSequence" not in op_counts(optimized)
    for n in (1, 4):
        x = np.arange(3 * n, dtype=np.float32).reshape(n, 3)
        _same(model, optimized, {"x": x, "r": np.ones(n, dtype=np.int64)})


@pytest.mark.parametrize("length", ["m", "?"])
def test_a_split_by_ones_of_another_length_is_left(length: str) -> None:
    """A vector of ones not provably as long as the axis may not sum to it, and the split
    then fails at run time: it stays (and so does the failure)."""
    model = onnx.parser.parse_model(ONES_SPLIT % length)
    report = seqpasses.Report()
    optimized = seqpasses.optimize(model, report=report)
    assert "SplitToSequence" in op_counts(optimized)
    session = ort.InferenceSession(
        optimized.SerializeToString(), providers=["CPUExecutionProvider"]
    )
    with pytest.raises(Exception, match="split"):
        session.run(None, {"x": np.zeros((3, 3), np.float32), "r": np.ones(2, np.int64)})


# A Loop body's carried inputs declared with what the exporter guessed: a list of rank-0
# elements (``seq(float)`` in the text format) holding [2,3] and [3] tensors; a tensor declared [2,3] that doubles each step.
# ONNX Runtime tolerates the guesses in the original; an If rewritten in the body must not
# copy them into its new outputs, which ONNX Runtime enforces.
GUESSED_LIST = """<ir_version: 8, opset_import: ["" : 18]>
g (float[2,3] x, float[3] y, bool c, int64 n) => (float[A] o) {
  t = Constant<value = bool {1}>()
  l = SequenceConstruct(x, y)
  fl = Loop(n, t, l) <body = body (int64 i, bool go, seq(float) li) => (bool go2, seq(float) lo) {
    go2 = Identity(go)
    lo = If(c) <then_branch = tb () => (seq(float) r1) {
        zero = Constant<value = int64 {0}>()
        e = SequenceAt(li, zero)
        r1 = SequenceConstruct(e, e)
    }, else_branch = eb () => (seq(float) r2) {
        one = Constant<value = int64 {1}>()
        e3 = SequenceAt(li, one)
        r2 = SequenceConstruct(e3, e3)
    }>
  }>
  last = Constant<value = int64 {-1}>()
  element = SequenceAt(fl, last)
  o = Flatten<axis = 0>(element)
}"""

GUESSED_TENSOR = """<ir_version: 8, opset_import: ["" : 18]>
g (float[2,3] x, bool c, int64 n) => (float[A,3] o) {
  t = Constant<value = bool {1}>()
  fh = Loop(n, t, x) <body = body (int64 i, bool go, float[2,3] h) => (bool go2, float[2,3] ho) {
    go2 = Identity(go)
    lo = If(c) <then_branch = tb () => (seq(float[2,3]) r1) {
        r1 = SequenceConstruct(h, h)
    }, else_branch = eb () => (seq(float[2,3]) r2) {
        r2 = SequenceConstruct(h, x)
    }>
    ho = ConcatFromSequence<axis = 0>(lo)
  }>
  o = Identity(fh)
}"""


@pytest.mark.parametrize("text", [GUESSED_LIST, GUESSED_TENSOR], ids=["list", "tensor"])
def test_a_bodys_guessed_declarations_do_not_reach_what_a_rewrite_declares(text: str) -> None:
    model = onnx.parser.parse_model(text)
    report = seqpasses.Report()
    optimized = seqpasses.optimize(model, report=report)
    assert "if-static-sequences" in {r.rule for r in report.rewrites}
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    feeds = [
        {"x": x, "y": np.ones(3, np.float32), "c": np.array(c), "n": np.array(k, np.int64)}
        for c in (True, False)
        for k in (0, 1, 2)
    ]
    if "y" not in {i.name for i in model.graph.input}:
        feeds = [{k: v for k, v in f.items() if k != "y"} for f in feeds]
    check = seqpasses.verify(model, optimized, inputs=feeds, failures="must_match")
    assert check.ok and "onnxruntime" in check.engines, check.mismatch


# Guesses on values made inside a branch or body (value_info the exporter wrote for the first
# run: [2] and [3] where the run gives [3] and [6]): the If rewritten returns those values as
# its outputs, where ONNX Runtime enforces what they are declared.
GUESSED_IN_BRANCH = """<ir_version: 8, opset_import: ["" : 17]>
g (float[N] a, int64[1] k, bool b) => (float[?] y, float[?] y2) {
  st = Constant <value = int64[1] {0}> ()
  s = If(b) <then_branch = t () => (seq(float[?]) o1) <float[2] x1> {
      x1 = Slice(a, st, k)
      o1 = SequenceConstruct(x1, a)
    }, else_branch = e () => (seq(float[?]) o2) <float[2] y1, float[2] y3> {
      y1 = Slice(a, st, k)
      y3 = Neg(y1)
      o2 = SequenceConstruct(y3, a)
    }>
  st0 = Constant <value = int64 {0}> ()
  y = SequenceAt(s, st0)
  y2 = ConcatFromSequence <axis = 0> (s)
}"""

GUESSED_IN_BODY = """<ir_version: 8, opset_import: ["" : 17]>
g (int64 n, float[3] a, bool b) => (float[?] y, float[?] xf) {
  xf, ys = Loop(n, , a) <body = body (int64 i, bool cc, float[?] x) => (bool co, float[?] xo, float r) <float[3] x2> {
    co = Identity(cc)
    x2 = Identity(x)
    s = If(b) <then_branch = t () => (seq(float[?]) o1) {
        x1 = Neg(x2)
        o1 = SequenceConstruct(x1, x2)
      }, else_branch = e () => (seq(float[?]) o2) {
        o2 = SequenceConstruct(x2, x2)
      }>
    c = ConcatFromSequence <axis = 0> (s)
    r = ReduceSum <keepdims = 0> (c)
    xo = Concat <axis = 0> (x, a)
  }>
  y = Identity(ys)
}"""


@pytest.mark.parametrize(
    ("text", "feeds"),
    [
        (
            GUESSED_IN_BRANCH,
            [
                {"a": np.arange(5, dtype=np.float32), "k": np.array([k]), "b": np.array(b)}
                for k in (2, 3)
                for b in (True, False)
            ],
        ),
        (
            GUESSED_IN_BODY,
            [
                {"n": np.array(n), "a": np.arange(3, dtype=np.float32), "b": np.array(b)}
                for n in (0, 1, 3)
                for b in (True, False)
            ],
        ),
    ],
    ids=["branch", "body"],
)
def test_guesses_on_values_inside_a_branch_are_not_declared_as_its_outputs(
    text: str, feeds: list[dict[str, np.ndarray]]
) -> None:
    model = onnx.parser.parse_model(text)
    report = seqpasses.Report()
    optimized = seqpasses.optimize(model, report=report)
    assert "if-static-sequences" in {r.rule for r in report.rewrites}
    check = seqpasses.verify(model, optimized, inputs=feeds, failures="must_match")
    assert check.ok and "onnxruntime" in check.engines, check.mismatch


def test_an_error_that_mentions_allocation_is_not_one_of_memory() -> None:
    from seqpasses.verification.engines import _out_of_memory

    pre = "has shape {3} ... either supply unallocated output OrtValues or ensure the pre-allocated shapes match"
    assert not _out_of_memory(pre)
    assert _out_of_memory("std::bad_alloc")
    assert _out_of_memory("Failed to allocate memory for requested buffer of size 8")


TILED_ROW = """<ir_version: 8, opset_import: ["" : 17]>
g (float[B] a, float[B,C] h, int64 n) => (float[B,M,C] y) {
    t = Constant<value = bool {1}>()
    dims = Shape(h)
    k = Constant<value = int64 {1}>()
    c = Gather<axis = 0>(dims, k)
    empty = SequenceEmpty<dtype = 1>()
    rows = Loop(n, t, empty) <body = step (int64 i, bool cond, seq(float) acc) => (
            bool c_out, seq(float) out) {
        c_out = Identity(cond)
        axes = Constant<value = int64[1] {1}>()
        col = Unsqueeze(a, axes)
        zero = Constant<value = int64[1] {0}>()
        one = Constant<value = int64[1] {1}>()
        cc = Unsqueeze(c, zero)
        reps = Concat<axis = 0>(one, cc)
        size = Shape(reps)
        ones = ConstantOfShape<value = int64[1] {1}>(size)
        wide = Expand(col, ones)
        tiled = Tile(wide, reps)
        row = Add(tiled, h)
        out = SequenceInsert(acc, row)
    }>
    y = ConcatFromSequence<axis = 1, new_axis = 1>(rows)
}"""


def test_a_row_tiled_by_ones_of_a_computed_length_is_a_scan_output() -> None:
    """A CIF predictor's ``fire[:, None].repeat(1, hidden_size)``: TorchScript writes the
    ones that ``Expand`` reads as ``ConstantOfShape(Shape(repeats), 1)``; the row it appends
    is ``[B, C]`` every iteration (``sample_models/torch/ts_cif_predictor``)."""
    model, optimized = _lowered(TILED_ROW, "loop-append-to-scan-output")
    rng = np.random.default_rng(0)
    a = rng.standard_normal(2).astype(np.float32)
    h = rng.standard_normal((2, 3)).astype(np.float32)
    for n in (1, 4):
        _same(model, optimized, {"a": a, "h": h, "n": np.array(n, dtype=np.int64)})


STATES_AND_OUTPUTS = """<ir_version: 8, opset_import: ["" : 17]>
g (float[B,4] x, int64 n) => (float[B,M,8] y) {
    t = Constant<value = bool {1}>()
    h0 = Concat<axis = 1>(x, x)
    states = SequenceConstruct(h0, h0)
    empty = SequenceEmpty<dtype = 1>()
    s_out, rows = Loop(n, t, states, empty) <body = step (int64 i, bool cond, seq(float) s,
            seq(float) acc) => (bool c_out, seq(float) s_next, seq(float) out) {
        c_out = Identity(cond)
        p0 = Constant<value = int64 {0}>()
        p1 = Constant<value = int64 {1}>()
        s0 = SequenceAt(s, p0)
        s1 = SequenceAt(s, p1)
        sum = Add(s0, s1)
        n0 = Tanh(sum)
        n1 = Sigmoid(s1)
        s_next = SequenceConstruct(n0, n1)
        row = Mul(n0, n1)
        out = SequenceInsert(acc, row)
    }>
    y = ConcatFromSequence<axis = 1, new_axis = 1>(rows)
}"""


def test_a_step_output_whose_shape_hangs_on_a_list_of_states_is_a_scan_output() -> None:
    """A vocoder's sampling loop: GRU states travel in a list read by position, and each
    step's output, computed from them, is appended. Once the states are carried as their
    elements, the output's shape is proven and the list it is appended to becomes a scan
    output (``sample_models/torch/ts_vocoder_sampling``)."""
    model, optimized = _lowered(
        STATES_AND_OUTPUTS, "loop-carries-elements", "loop-append-to-scan-output"
    )
    x = np.random.default_rng(1).standard_normal((2, 4)).astype(np.float32)
    for n in (1, 3):
        _same(model, optimized, {"x": x, "n": np.array(n, dtype=np.int64)})


COUNTS_AND_BOXES = """<ir_version: 8, opset_import: ["" : 17]>
g (float[B,N,4] boxes, float[B,N] scores) => (float[M,4] kept, int64[B] counts) {
    t = Constant<value = bool {1}>()
    dims = Shape(scores)
    zero = Constant<value = int64 {0}>()
    b = Gather<axis = 0>(dims, zero)
    none = SequenceEmpty<dtype = 1>()
    nothing = SequenceEmpty<dtype = 7>()
    all_boxes, all_counts = Loop(b, t, none, nothing) <body = step (int64 i, bool c,
            seq(float) acc, seq(int64) cnt) => (bool c2, seq(float) acc2, seq(int64) cnt2) {
        c2 = Identity(c)
        row = Gather<axis = 0>(scores, i)
        half = Constant<value = float {0.5}>()
        keep = Greater(row, half)
        where = NonZero(keep)
        flat = Constant<value = int64[1] {-1}>()
        picks = Reshape(where, flat)
        image = Gather<axis = 0>(boxes, i)
        chosen = Gather<axis = 0>(image, picks)
        acc2 = SequenceInsert(acc, chosen)
        found = Shape(picks)
        count = Squeeze(found)
        cnt2 = SequenceInsert(cnt, count)
    }>
    kept = ConcatFromSequence<axis = 0>(all_boxes)
    counts = ConcatFromSequence<axis = 0, new_axis = 1>(all_counts)
}"""


def test_a_loop_carrying_two_lists_loses_both_in_one_run() -> None:
    """A detector's per-image postprocessing: the boxes kept per image (as many as pass the
    threshold: ragged) and their count (a scalar per image). The counts become a scan
    output; the rebuilt loop goes to every way again, and the boxes become a running
    concatenation in the same run (they were left, "not statically known", until a second
    run)."""
    model, optimized = _lowered(
        COUNTS_AND_BOXES, "loop-append-to-scan-output", "loop-running-concat"
    )
    rng = np.random.default_rng(2)
    for b in (1, 3):
        feeds = {
            "boxes": rng.standard_normal((b, 5, 4)).astype(np.float32),
            "scores": rng.random((b, 5)).astype(np.float32),
        }
        _same(model, optimized, feeds)


WHILE_SHORTER = """<ir_version: 8, opset_import: ["" : 17]>
g (float[2] x) => (float[?,2] y, int64 n) {
    s = SequenceConstruct(%(start)s)
    most = Constant<value = int64 {%(most)d}>()
    k = Constant<value = int64 {%(k)d}>()
    n0 = SequenceLength(s)
    go = %(go)s
    sl = Loop(most, go, s) <body = b (int64 i, bool c, seq(float[2]) si) => (bool co,
            seq(float[2]) so) {
        last = Constant<value = int64 {-1}>()
        e = SequenceAt(si, last)
        two = Constant<value = float {2.0}>()
        d = Mul(e, two)
        so = SequenceInsert(si, d)
        len = SequenceLength(so)
        co = Less(len, k)
    }>
    y = ConcatFromSequence<axis = 0, new_axis = 1>(sl)
    n = SequenceLength(sl)
}"""


@pytest.mark.parametrize(
    ("start", "most", "k", "go", "runs"),
    [
        ("x", 9223372036854775807, 5, "Less(n0, k)", 4),  # len 1 -> 5
        ("x, x", 9223372036854775807, 5, "Less(n0, k)", 3),  # len 2 -> 5
        ("x", 2, 5, "Less(n0, k)", 2),  # the trip count stops it first
        ("x, x", 9223372036854775807, 2, "Less(n0, k)", 0),  # not shorter: no iteration
        ("x, x", 9223372036854775807, 2, "Constant<value = bool {1}>()", 1),  # runs once
    ],
)
def test_a_while_loop_bounded_by_its_lists_length_runs_as_often_as_that_says(
    start: str, most: int, k: int, go: str, runs: int
) -> None:
    """TorchScript's ``while len(tokens) < k:`` (a greedy decoder): the loop's condition is
    the length of the list it grows by one each iteration, so it runs ``k`` minus the
    list's initial length times (at least once when it starts with a true condition; no
    more than its trip count): unrolled that many times, its lists folded. No iteration:
    left as it is."""
    text = WHILE_SHORTER % {"start": start, "most": most, "k": k, "go": go}
    model = onnx.parser.parse_model(text)
    report = seqpasses.Report()
    optimized = seqpasses.optimize(model, report=report)
    feeds = {"x": np.array([1.0, 3.0], np.float32)}
    _same(model, optimized, feeds)
    length = ort.InferenceSession(model.SerializeToString()).run(None, feeds)[1]
    assert int(length) == start.count("x") + runs
    if runs:
        assert sequence_op_count(optimized) == 0, [(r.op_type, r.detail) for r in report.left]
        assert "Loop" not in op_counts(optimized)
    else:
        assert "Loop" in op_counts(optimized)


ANCHORS = """<ir_version: 8, opset_import: ["" : 17]>
g (float[B,C,H,W] p3, float[B,C,U,V] p4) => (float[?,?,2] y) {
    s3 = Shape(p3)
    s4 = Shape(p4)
    two = Constant<value = int64 {2}>()
    three = Constant<value = int64 {3}>()
    h = Gather<axis = 0>(s3, two)
    w = Gather<axis = 0>(s3, three)
    u = Gather<axis = 0>(s4, two)
    v = Gather<axis = 0>(s4, three)
    zero = Constant<value = int64 {0}>()
    one = Constant<value = int64 {1}>()
    hw = Mul(h, w)
    uv = Mul(u, v)
    n3 = Range(zero, hw, one)
    n4 = Range(zero, uv, one)
    f3 = Cast<to = 1>(n3)
    f4 = Cast<to = 1>(n4)
    ax = Constant<value = int64[1] {1}>()
    c3 = Unsqueeze(f3, ax)
    c4 = Unsqueeze(f4, ax)
    a3 = Concat<axis = 1>(c3, c3)
    a4 = Concat<axis = 1>(c4, c4)
    b = Gather<axis = 0>(s3, zero)
    t = Constant<value = bool {1}>()
    none = SequenceEmpty<dtype = 1>()
    out = Loop(b, t, none) <body = step (int64 i, bool c, seq(float) acc) => (bool c2,
            seq(float) acc2) {
        c2 = Identity(c)
        image = Gather<axis = 0>(p3, i)
        flat = Constant<value = int64[1] {-1}>()
        all = Reshape(image, flat)
        first = Gather<axis = 0>(all, zero)
        l3 = Add(a3, first)
        l4 = Add(a4, first)
        row = Concat<axis = 0>(l3, l4)
        acc2 = SequenceInsert(acc, row)
    }>
    y = ConcatFromSequence<axis = 0, new_axis = 1>(out)
}"""


def test_a_row_whose_length_is_arithmetic_on_input_dims_is_a_scan_output() -> None:
    """torchvision's anchors per image: grid anchors of each level (``arange`` over a
    feature map's height and width) shifted per image and concatenated: every image's row is
    ``[H*W+U*V, 2]``, a size the inputs decide, the same at every iteration (it was not
    proven: only numbers and the inputs' own dim names were)."""
    model, optimized = _lowered(ANCHORS, "loop-append-to-scan-output")
    rng = np.random.default_rng(3)
    for b, h, w, u, v in ((2, 3, 4, 2, 2), (1, 1, 1, 1, 1), (3, 2, 5, 1, 3)):
        feeds = {
            "p3": rng.standard_normal((b, 2, h, w)).astype(np.float32),
            "p4": rng.standard_normal((b, 2, u, v)).astype(np.float32),
        }
        _same(model, optimized, feeds)

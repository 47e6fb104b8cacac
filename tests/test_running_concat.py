"""Loops that append ragged elements (tf2onnx's ragged map_fn) carry the running concatenation.

Each model is run before and after with ONNX Runtime on inputs that include zero iterations,
empty rows and elements that disagree outside the concatenation axis: the outputs agree, and
where the original fails the optimized model fails too.
"""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto as T
from onnx import helper as h

import seqpasses
from helpers import op_counts, sequence_op_count


def _ragged(
    readers: tuple[str, ...] = ("concat", "length"),
    axis: int = 0,
    initial: bool = False,
    columns: int | str = 3,
    concat_axes: tuple[int, ...] = (),
    dtype: int = T.FLOAT,
    x0_columns: int | str = 3,
) -> onnx.ModelProto:
    """``for i in range(len(X)): l.append(X[i][X[i][:, 0] > 0])``, then ``cat(l, axis)`` and
    ``len(l)``: each element has its own number of rows."""
    zero_value = h.make_tensor("fzero", dtype, [], [0])
    body = h.make_graph(
        [
            h.make_node("Gather", ["X", "i"], ["row"], axis=0),
            h.make_node("Gather", ["row", "zero"], ["col0"], axis=1),
            h.make_node("Greater", ["col0", "fzero"], ["mask"]),
            h.make_node("Compress", ["row", "mask"], ["kept"], axis=0),
            h.make_node("SequenceInsert", ["seq_in", "kept"], ["seq_out"]),
            h.make_node("Identity", ["cond_in"], ["cond_out"]),
        ],
        "body",
        [
            h.make_tensor_value_info("i", T.INT64, []),
            h.make_tensor_value_info("cond_in", T.BOOL, []),
            h.make_tensor_sequence_value_info("seq_in", dtype, [None, None]),
        ],
        [
            h.make_tensor_value_info("cond_out", T.BOOL, []),
            h.make_tensor_sequence_value_info("seq_out", dtype, [None, None]),
        ],
        [h.make_tensor("zero", T.INT64, [], [0]), zero_value],
    )
    start = (
        h.make_node("SequenceConstruct", ["X0"], ["s0"])
        if initial
        else h.make_node("SequenceEmpty", [], ["s0"], dtype=dtype)
    )
    nodes = [
        h.make_node("Shape", ["X"], ["xs"]),
        h.make_node("Gather", ["xs", "zi"], ["n"], axis=0),
        start,
        h.make_node("Loop", ["n", "", "s0"], ["s"], body=body),
    ]
    outputs = []
    for k, a in enumerate(concat_axes or ((axis,) if "concat" in readers else ())):
        nodes.append(h.make_node("ConcatFromSequence", ["s"], [f"Y{k}"], axis=a))
        outputs.append(h.make_tensor_value_info(f"Y{k}", dtype, [None, None]))
    if "length" in readers:
        nodes.append(h.make_node("SequenceLength", ["s"], ["L"]))
        outputs.append(h.make_tensor_value_info("L", T.INT64, []))
    inputs = [h.make_tensor_value_info("X", dtype, ["N", "R", columns])]
    if initial:
        inputs.append(h.make_tensor_value_info("X0", dtype, ["K", x0_columns]))
    graph = h.make_graph(nodes, "ragged", inputs, outputs, [h.make_tensor("zi", T.INT64, [], [0])])
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def _run(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray] | str:
    try:
        session = ort.InferenceSession(
            model.SerializeToString(), providers=["CPUExecutionProvider"]
        )
        return [np.asarray(r) for r in session.run(None, feeds)]
    except Exception:
        return "fails"


def _feeds(
    initial: bool, columns: int = 3, x0_columns: int = 3, positive: bool = False
) -> list[dict[str, np.ndarray]]:
    """Input sets: no row, rows of no element, and rows each keeping a different number of
    elements (``positive``: every element, so that every row keeps the same number)."""
    rng = np.random.default_rng(7)
    sets = []
    for shape in [(0, 4, columns), (1, 0, columns), (3, 5, columns), (4, 6, columns)]:
        x = rng.standard_normal(shape).astype(np.float32)
        feeds = {"X": np.abs(x) + 1 if positive else x}
        if initial:
            feeds["X0"] = rng.standard_normal((2, x0_columns)).astype(np.float32)
        sets.append(feeds)
    return sets


def _same_behaviour(before: onnx.ModelProto, after: onnx.ModelProto, feeds_sets: list) -> None:
    for feeds in feeds_sets:
        a, b = _run(before, feeds), _run(after, feeds)
        if isinstance(a, str) or isinstance(b, str):
            assert a == b, (feeds["X"].shape, a if isinstance(a, str) else "runs", b)
            continue
        assert len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            assert x.shape == y.shape and np.array_equal(x, y)


@pytest.mark.parametrize("initial", [False, True])
def test_ragged_rows_are_carried_as_one_growing_tensor(initial: bool) -> None:
    model = _ragged(initial=initial)
    report = seqpasses.Report()
    out = seqpasses.optimize(model, report=report)
    assert sequence_op_count(out) == 0
    assert "loop-running-concat" in {r.rule for r in report.rewrites}
    counts = op_counts(out)
    assert counts["Loop"] == 1 and counts["Concat"] == 1
    # the list may be empty only when it starts empty: then a check stays beside the read
    assert counts["Range"] == (0 if initial else 1)
    feeds = _feeds(initial)
    _same_behaviour(model, out, feeds)
    # zero iterations from an empty list: ConcatFromSequence fails, and so does the check
    if not initial:
        assert _run(out, feeds[0]) == "fails"
    assert seqpasses.verify(model, out, inputs=feeds[1:], failures="must_match").ok


def test_only_the_length_read_carries_a_count() -> None:
    model = _ragged(readers=("length",))
    out = seqpasses.optimize(model)
    assert sequence_op_count(out) == 0
    assert op_counts(out)["Concat"] == 0  # no rows are carried: only the count
    _same_behaviour(model, out, _feeds(False))


def test_elements_unlike_the_initial_one_fail_as_before() -> None:
    # X0 has 2 columns, the rows appended have 3: ConcatFromSequence fails after any
    # iteration, and the Concat in the body fails in the same runs
    model = _ragged(initial=True, x0_columns="D")
    out = seqpasses.optimize(model)
    assert sequence_op_count(out) == 0
    feeds = _feeds(True, x0_columns=2)
    # (ONNX Runtime's Concat skips an empty input, [0, 3] here: the run of one empty row
    # passes in both)
    assert [_run(model, f) == "fails" for f in feeds] == [False, False, True, True]
    _same_behaviour(model, out, feeds)


def test_elements_plainly_unlike_the_initial_one_are_left() -> None:
    # declared [K, 2] and [., 3]: a Concat of these would not load; the list stays
    model = _ragged(initial=True, x0_columns=2)
    report = seqpasses.Report()
    out = seqpasses.optimize(model, report=report)
    assert op_counts(out)["ConcatFromSequence"] == 1
    assert "differ outside the axis" in " ".join(r.detail for r in report.left)


def test_concatenation_along_another_axis() -> None:
    model = _ragged(axis=-2, initial=True)
    out = seqpasses.optimize(model)
    assert sequence_op_count(out) == 0
    _same_behaviour(model, out, _feeds(True))


def test_two_axes_keep_the_list_and_say_why() -> None:
    model = _ragged(readers=("concat",), concat_axes=(0, 1), initial=True)
    report = seqpasses.Report()
    out = seqpasses.optimize(model, report=report)
    assert op_counts(out)["ConcatFromSequence"] == 2
    reasons = " ".join(r.detail for r in report.left)
    assert "concatenated along more than one axis" in reasons
    # (rows of unlike sizes concatenated along axis 1 give ONNX Runtime uninitialized memory
    # rather than a failure: every row keeps all its elements here, and the set whose rows
    # have no element, [0, 3] beside [2, 3], is left out for the same reason)
    feeds = _feeds(True, positive=True)
    _same_behaviour(model, out, feeds[:1] + feeds[2:])


def test_symbolic_columns_read_off_the_input_make_the_empty_start() -> None:
    # no initial element; the columns are the input's dim "C": the empty [0, C] start is
    # built from Shape(X) before the loop
    model = _ragged(readers=("concat",), columns="C")
    out = seqpasses.optimize(model)
    assert sequence_op_count(out) == 0
    assert op_counts(out)["ConstantOfShape"] == 1
    _same_behaviour(model, out, _feeds(False, columns=5))

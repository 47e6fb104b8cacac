"""What a small integer vector holds before run time, entry by entry (``core/partial.py``), and
the Slice dims it proves: tf2onnx's strided slice on two axes with one end known only at run
time (``x[i, :n[i], :]``) ends the open axis at a constant, so each row is ``[?, min(D, end)]``,
the same every iteration, and its ragged ``map_fn`` loses its sequence ops."""

from __future__ import annotations

import warnings

import numpy as np
import onnx
import onnx_ir as ir
import onnxruntime as ort
import pytest

import seqpasses
from helpers import ROOT, sequence_op_count
from seqpasses.core.constants import constant_array
from seqpasses.core.partial import partial_vector

MODEL = ROOT / "sample_models" / "tf2onnx" / "tf_ragged_prefix_rows_by_length.onnx"

ENDS = """<ir_version: 8, opset_import: ["" : 15]>
g (int32[N] lengths, int64 i, float[A,B] x) => (int32[2] ends, bool[2] both, int64[2] dims) {
    n = Gather(lengths, i)
    axes = Constant<value = int64[1] {0}>()
    row = Unsqueeze(n, axes)
    zero = Constant<value = int32[1] {0}>()
    stack = Concat<axis = 0>(row, zero)
    as_float = Cast<to = 1>(stack)
    clamp = Constant<value = float[2] {-1000000000, 1000000000}>()
    high = Max(as_float, clamp)
    ends = Cast<to = 6>(high)
    big = Constant<value = int32 {1000000000}>()
    at_max = Equal(ends, big)
    never = Constant<value = bool[2] {0, 0}>()
    both = And(at_max, never)
    dims = Shape(x)
}"""


def _vectors(text: str, shapes: dict[str, ir.Shape] | None = None) -> dict[str, object]:
    model = ir.serde.deserialize_model(onnx.parser.parse_model(text))
    given = shapes or {}

    def shape(v: ir.Value) -> ir.Shape | None:
        if v.name in given:
            return given[v.name]
        if v.producer() is not None and v.producer().op_type == "Gather":  # type: ignore[union-attr]
            return ir.Shape([])
        return v.shape

    values = {v.name: v for node in model.graph for v in node.outputs}
    return {name: partial_vector(values[name], constant_array, shape) for name in values}


def test_a_clamped_end_is_known_where_it_does_not_hang_on_the_run() -> None:
    found = _vectors(ENDS, {"row": ir.Shape([1]), "stack": ir.Shape([2])})
    assert found["stack"] == [None, 0]
    assert found["ends"] == [None, 1_000_000_000]
    assert found["both"] == [False, False]  # (False and anything)
    assert found["dims"] == [ir.SymbolicDim("A"), ir.SymbolicDim("B")]  # (names, not numbers)


def test_a_shape_gives_its_numbers_its_names_and_nothing_for_an_unnamed_dim() -> None:
    text = ENDS.replace("float[A,B] x", "float[A,7] x")
    assert _vectors(text)["dims"] == [ir.SymbolicDim("A"), 7]
    text = ENDS.replace("float[A,B] x", "float[?,7] x")
    assert _vectors(text)["dims"] == [None, 7]


FILLED = """<ir_version: 8, opset_import: ["" : 15]>
g (float[B,C] x) => (int64[2] ones, int64[3] sevens, float[2] halves, int64[2] zeros) {
    two = Constant<value = int64[1] {2}>()
    three = Constant<value = int64[1] {3}>()
    ones = ConstantOfShape<value = int64[1] {1}>(two)
    sevens = ConstantOfShape<value = int64[1] {7}>(three)
    halves = ConstantOfShape<value = float[1] {0.5}>(two)
    dims = Shape(x)
    rank = Shape(dims)
    zeros = ConstantOfShape<value = int64[1] {0}>(rank)
}"""


def test_a_constant_of_shape_of_a_known_length_is_that_many_of_its_value() -> None:
    # (``repeat(1, n)``: TorchScript writes the ones as ConstantOfShape(Shape(repeats)))
    found = _vectors(FILLED, {"dims": ir.Shape([2])})
    assert found["ones"] == [1, 1]
    assert found["sevens"] == [7, 7, 7]
    assert found["halves"] is None or found["halves"] == [None, None]  # (not integers)
    assert found["zeros"] == [0, 0]  # (its length read from a rank)


def _feeds() -> dict[str, np.ndarray]:
    return {
        k: np.asarray(v) for k, v in seqpasses.load_inputs(MODEL.with_suffix(".npz"))[0].items()
    }


def _optimized(model: onnx.ModelProto) -> tuple[onnx.ModelProto, seqpasses.Report]:
    report = seqpasses.Report()
    with warnings.catch_warnings():  # (tf2onnx declares an output with no shape: lenient)
        warnings.simplefilter("ignore", seqpasses.InputWarning)
        return seqpasses.optimize(model, report=report), report


def _run(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> np.ndarray:
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return np.asarray(session.run(None, feeds)[0])


@pytest.mark.parametrize("cap", [1_000_000_000, 3])
def test_two_axis_strided_slice_map_fn_loses_its_sequence_ops(cap: int) -> None:
    model = onnx.load(MODEL)
    if cap != 1_000_000_000:  # the open axis ended at 3, below the rows' width 4
        body = next(n for n in model.graph.node if n.op_type == "Loop").attribute[0].g
        clamp = next(t for t in body.initializer if t.name == "const_fold_opt__110")
        clamp.CopyFrom(onnx.numpy_helper.from_array(np.array([-1e9, cap], np.float32), clamp.name))
    out, report = _optimized(model)
    assert sequence_op_count(model) == 3 and sequence_op_count(out) == 0, report.left
    assert {r.rule for r in report.rewrites} == {"loop-running-concat"}
    assert "Min" in {n.op_type for n in out.graph.node}  # (the empty start's width, capped)
    width = out.graph.output[0].type.tensor_type.shape.dim[1].dim_param
    assert width == f"min(unk__115,{cap})"
    feeds = _feeds()
    want, got = _run(model, feeds), _run(out, feeds)
    assert want.shape == got.shape == (15, min(4, cap)) and np.array_equal(want, got)
    assert seqpasses.verify(model, out, inputs=[feeds], failures="must_match").ok


SLICE = """<ir_version: 8, opset_import: ["" : 15]>
g (float[N,D] x, float[N,7] y, int64 n) => (float[?,?] a, float[?,?] b, float[?,?] c) {
    axes = Constant<value = int64[1] {0}>()
    row = Unsqueeze(n, axes)
    open = Constant<value = int64[1] {9223372036854775807}>()
    five = Constant<value = int64[1] {5}>()
    huge = Constant<value = int64[1] {1099511627776}>()
    two = Constant<value = int64[1] {2}>()
    wrapped = Mul(huge, two)
    starts = Constant<value = int64[2] {0, 0}>()
    both = Constant<value = int64[2] {0, 1}>()
    to_end = Concat<axis = 0>(row, open)
    to_five = Concat<axis = 0>(row, five)
    to_wrapped = Concat<axis = 0>(row, wrapped)
    a = Slice(x, starts, to_end, both)
    b = Slice(y, starts, to_five, both)
    c = Slice(x, starts, to_wrapped, both)
}"""


def test_slice_dims_from_ends_known_in_part() -> None:
    from seqpasses.core.shapes import ShapeOracle

    model = ir.serde.deserialize_model(onnx.parser.parse_model(SLICE))
    oracle = ShapeOracle(15)
    found = {}
    for node in model.graph:
        if node.op_type == "Slice":
            inputs = [oracle.known(v) if v is not None else None for v in node.inputs]
            found[node.outputs[0].name] = oracle.infer(node, inputs)[0][1]
    shown = {name: [getattr(d, "value", d) for d in shape] for name, shape in found.items()}
    assert shown["a"] == [None, "D"]  # (to an end past any size: the axis itself)
    assert shown["b"] == [None, 5]  # (a number where the axis is one)
    # a product the run may wrap (int64 here: 2^41, but the type is not tracked) is not read
    assert shown["c"][1] is None


@pytest.mark.parametrize("size", [0, 1, 5])
@pytest.mark.parametrize("step", [1, 2, -1, -3])
@pytest.mark.parametrize("start", [-10, -5, -1, 0, 2, 5, 9, 2**62])
@pytest.mark.parametrize("end", [-10, -6, -1, 0, 3, 5, 2**62])
def test_slice_lengths_are_onnx_s(size: int, step: int, start: int, end: int) -> None:
    # the spec's clamping, as ONNX Runtime runs it; onnx.reference slices as numpy does, which
    # differs stepping back from before the first element (x[-10:-10:-1] of 5: one element)
    from seqpasses.core.slices import _slice_length

    model = onnx.parser.parse_model(
        f"""<ir_version: 8, opset_import: ["" : 15]>
        g (float[{size}] x) => (float[?] y) {{
            s = Constant<value = int64[1] {{{start}}}>()
            e = Constant<value = int64[1] {{{end}}}>()
            a = Constant<value = int64[1] {{0}}>()
            t = Constant<value = int64[1] {{{step}}}>()
            y = Slice(x, s, e, a, t)
        }}"""
    )
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    ran = session.run(None, {"x": np.arange(size, dtype=np.float32)})[0]
    assert _slice_length(size, start, end, step) == ran.shape[0]

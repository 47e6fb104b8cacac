"""Reduced models an independent generator (written from the spec alone) found seqpasses
failing on: each must optimize, with no more sequence ops, to a model onnx's full check takes
and ONNX Runtime runs as it runs the input (a failure counts as an output)."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest

import seqpasses
from helpers import sequence_op_count

CASES: dict[str, tuple[str, dict[str, object]]] = {
    "if_zero_outputs": (
        # an If whose branches both give empty lists was left with no outputs
        """
<
   ir_version: 9,
   opset_import: ["" : 19]
>
g (bool cond1) => (seq(bool[]) s13) {
   s10 = If (cond1) <else_branch: graph = branch12 () => (seq(bool[]) s9) {
      c4 = Constant <value: tensor = float[3,1] c4_val {2,-2,-4}> ()
      s8 = SequenceEmpty <dtype: int = 9> ()
      s9 = Identity (s8)
   }, then_branch: graph = branch11 () => (seq(bool[]) s2) {
      s2 = SequenceEmpty <dtype: int = 9> ()
   }>
   s13 = SequenceErase (s10)
}
""",
        {"cond1": np.array(True)},
    ),
    "more_seq_ops": (
        # a Loop passing a list through, its list a graph output, carried as one tensor: written back, one sequence op more
        """
<
   ir_version: 7,
   opset_import: ["" : 15]
>
g (float[2,N0] x14) => (seq(float[]) s13, seq(float[]) s15, seq(float16[]) s4, seq(float16[]) s12)
   <float16[3,2] w2 =  {15360,15360,50176,15360,48128,49152}>
{
   k1 = Constant <value: tensor = bool k1_val {1}> ()
   c3 = Constant <value: tensor = float16[3,2] c3_val {0,17408,0,0,49664,15360}> ()
   s4 = SequenceConstruct (w2, c3)
   s12 = Loop ("", k1, s4) <body: graph = body11 (int64 it5, bool cin6, seq(float16[]) ls7) => (bool t10, seq(float16[]) s8) {
      s8 = Identity (ls7)
      k9 = Constant <value: tensor = int64 k9_val {1}> ()
      t10 = Less (it5, k9)
   }>
   s13 = SequenceEmpty ()
   s15 = SequenceConstruct (x14)
}
""",
        {"x14": np.zeros((2, 3), np.float32)},
    ),
    "concat_axis_exposed": (
        # a failing ConcatFromSequence of scalars, their shape now declared: the checker rejects the axis
        """
<
   ir_version: 7,
   opset_import: ["" : 15]
>
g () => (seq(float16[]) s24) {
   k1 = Constant <value: tensor = bool k1_val {1}> ()
   s2 = SequenceEmpty <dtype: int = 6> ()
   s17, t18, t19 = Loop ("", k1, s2) <body: graph = body16 (int64 it3, bool cin4, seq(int32[]) ls5) => (bool t12, seq(int32[]) s10, float[] t13, int32[] t14) {
      t7 = Cast <to: int = 6> (it3)
      s8 = SequenceInsert (ls5, t7)
      k9 = Constant <value: tensor = int64 k9_val {-2}> ()
      s10 = SequenceErase (s8, k9)
      k11 = Constant <value: tensor = int64 k11_val {1}> ()
      t12 = Less (it3, k11)
      t13 = Cast <to: int = 1> (it3)
      k15 = Constant <value: tensor = int64 k15_val {-1}> ()
      t14 = SequenceAt (s10, k15)
   }>
   t20 = ConcatFromSequence <axis: int = -1, new_axis: int = 0> (s17)
   c23 = Constant <value: tensor = float16[3,3] c23_val {0,15360,48128,48128,0,49152,49664,49152,0}> ()
   s24 = SequenceConstruct (c23, c23, c23)
}
""",
        {},
    ),
    "shape_conflict_exposed": (
        # an If inlined shows the checker an Add of [3,2,3] and [0]: the input goes back unchanged
        """
<
   ir_version: 7,
   opset_import: ["" : 11]
>
g (float16[N0] x1, float16[1,2] x2, double[3,2,3] x12) => (int64 k7) {
   c3 = Constant <value: tensor = float16[3] c3_val {48128,0,49152}> ()
   s4 = SequenceConstruct (x1, x2, c3, c3)
   t6 = SequenceLength (s4)
   k7 = Constant <value: tensor = int64 k7_val {2}> ()
   t8 = Equal (t6, k7)
   t23, t24 = If (t8) <else_branch: graph = branch26 () => (double[] t19, bool[] t22) {
      c18 = Constant <value: tensor = double[0] c18_val {}> ()
      t19 = Identity (c18)
      s20 = SequenceEmpty <dtype: int = 9> ()
      k21 = Constant <value: tensor = int64 k21_val {2}> ()
      t22 = SequenceAt (s20, k21)
   }, then_branch: graph = branch25 () => (double[] t13, bool[] t14) {
      t13 = Identity (x12)
      t14 = Identity (t8)
   }>
   t27 = Add (x12, t23)
}
""",
        {
            "x1": np.zeros(3, np.float16),
            "x2": np.zeros((1, 2), np.float16),
            "x12": np.zeros((3, 2, 3)),
        },
    ),
    "stacked_output_and_kept_reader": (
        # a list edited at a run-time position, a graph output and read by an insert that stays: written back twice, one sequence op more (made again with such lists left as sequences)
        """
<
   ir_version: 10,
   opset_import: ["" : 21]
>
g (int64[N0,N1] x1, int64 pos3, int32 pos6) => (seq(int64[]) s4, seq(int64[]) s7, int64[1,2] c5, seq(int64[]) s2) {
   s2 = SequenceConstruct (x1, x1)
   s4 = SequenceInsert (s2, x1, pos3)
   c5 = Constant <value: tensor = int64[1,2] c5_val {0,1}> ()
   s7 = SequenceInsert (s4, c5, pos6)
   t8 = Cast <to: int = 11> (c5)
}
""",
        {"x1": np.zeros((2, 3), np.int64), "pos3": np.array(1), "pos6": np.array(0, np.int32)},
    ),
    "optional_of_an_output_list": (
        # OptionalGetElement(Optional(s)), s and the result both graph outputs: an Identity of s, not a second SequenceConstruct
        """
<
   ir_version: 8,
   opset_import: ["" : 17]
>
g (seq(int64[]) sx5) => (seq(float[]) s4, seq(float[]) s2) {
   c1 = Constant <value: tensor = float[3,3,2] c1_val {4,4,4,-4,-1,0,1,4,3,1,0,2,-3,3,4,4,0,4}> ()
   s2 = SequenceConstruct (c1)
   opt3 = Optional (s2)
   s4 = OptionalGetElement (opt3)
   t6 = ConcatFromSequence <axis: int = -1, new_axis: int = 1> (sx5)
   c7 = Constant <value: tensor = int64 c7_val {3}> ()
   s8 = SequenceInsert (sx5, c7)
   k9 = Constant <value: tensor = int64 k9_val {3}> ()
   s10 = SequenceErase (sx5, k9)
}
""",
        {"sx5": [np.zeros(2, np.int64)]},
    ),
}


def _run(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[object] | str:
    options = ort.SessionOptions()
    options.log_severity_level = 4
    try:
        session = ort.InferenceSession(model.SerializeToString(), options)
        return [np.asarray(v).tolist() for v in session.run(None, feeds)]
    except Exception:
        return "fails"


@pytest.mark.parametrize("name", sorted(CASES))
def test_independent_repro(name: str) -> None:
    text, feeds = CASES[name]
    model = onnx.parser.parse_model(text)
    onnx.checker.check_model(model, full_check=True)
    optimized = seqpasses.optimize(model)
    onnx.checker.check_model(optimized, full_check=True)
    assert sequence_op_count(optimized) <= sequence_op_count(model)
    assert _run(optimized, feeds) == _run(model, feeds)


def test_an_input_whose_result_the_checker_rejects_goes_back_unchanged() -> None:
    model = onnx.parser.parse_model(CASES["shape_conflict_exposed"][0])
    report = seqpasses.Report()
    optimized = seqpasses.optimize(model, report=report)
    assert "onnx's full check would reject" in report.unchanged
    assert not report.rewrites and not report.changed
    assert [n.op_type for n in optimized.graph.node] == [n.op_type for n in model.graph.node]


@pytest.mark.parametrize("name", ["shape_conflict_exposed", "stacked_output_and_kept_reader"])
def test_an_onnx_ir_model_holds_the_result_made_again_or_handed_back(name: str) -> None:
    # optimize_ir works in place: a result made again on a fresh copy (or the input handed
    # back) must end up in the caller's model, not the first try's changes
    import onnx_ir as ir

    model = onnx.parser.parse_model(CASES[name][0])
    held = ir.serde.deserialize_model(model)
    result = ir.serde.serialize_model(seqpasses.optimize_ir(held))
    onnx.checker.check_model(result, full_check=True)
    assert sequence_op_count(result) <= sequence_op_count(model)
    assert _run(result, CASES[name][1]) == _run(model, CASES[name][1])

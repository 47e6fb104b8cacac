"""Shape inference for sequences: exact element shapes, lengths and concat sizes, never contradicting ONNX."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx.reference import ReferenceEvaluator

import seqpasses
from helpers import SAMPLES, conformance_cases, run_cli

SEED_SHAPES = {
    "concat_from_sequence_axis0": (6, 3),
    "concat_from_sequence_axis1": (2, 9),
    "concat_from_sequence_new_axis": (3, 2, 3),
}


@pytest.mark.parametrize("name", sorted(SEED_SHAPES))
def test_operator_page_examples(name: str) -> None:
    model = onnx.load(SAMPLES / f"{name}.onnx")
    model.graph.output[0].type.tensor_type.ClearField("shape")  # forget the declared answer
    facts = seqpasses.shape_facts(model)
    assert facts["output"].shape == SEED_SHAPES[name]
    assert facts["seq"].kind == "sequence" and facts["seq"].length == 3
    assert facts["seq"].element_shapes == ((2, 3), (2, 3), (2, 3))


def test_symbolic_sums_keep_their_names() -> None:
    model = onnx.parser.parse_model("""<ir_version: 8, opset_import: ["" : 18]>
g (float[N,3] a, float[M,3] b) => (float[?,3] y, float[?,3] z, float[?,3] w) {
  s = SequenceConstruct(a, b)
  y = ConcatFromSequence<axis = 0>(s)
  t = SequenceConstruct(a, a, a)
  z = ConcatFromSequence<axis = 0>(t)
  u = SequenceInsert(s, b)
  w = ConcatFromSequence<axis = 0>(u)
}""")
    facts = seqpasses.shape_facts(model)
    assert facts["y"].shape == ("M+N", 3)
    assert facts["z"].shape == ("3*N", 3)
    assert facts["w"].shape == ("2*M+N", 3)
    # the same sums end up in the model's value_info / outputs
    inferred = seqpasses.infer_shapes(model)
    dims = [d.dim_param for d in inferred.graph.output[1].type.tensor_type.shape.dim]
    assert dims[0] == "3*N"


def test_split_lengths_elements_and_sequence_length_values() -> None:
    model = onnx.parser.parse_model("""<ir_version: 8, opset_import: ["" : 18]>
g (float[5,2] x) => (int64 n, float[?,?] last) {
  two = Constant<value = int64 {2}>()
  s = SplitToSequence<axis = 0>(x, two)
  n = SequenceLength(s)
  minus = Constant<value = int64 {-1}>()
  last = SequenceAt(s, minus)
}""")
    facts = seqpasses.shape_facts(model)
    assert facts["s"].length == 3
    assert facts["s"].element_shapes == ((2, 2), (2, 2), (1, 2))
    assert facts["s"].shape == (None, 2)
    assert facts["n"].value == 3
    assert facts["last"].shape == (1, 2)


def test_sequence_values_stay_sequences_in_the_model() -> None:
    model = onnx.load(SAMPLES / "list_ops_opset11.onnx")
    inferred = seqpasses.infer_shapes(model)
    kinds = {vi.name: vi.type.WhichOneof("value") for vi in inferred.graph.value_info}
    for name in ("empty", "s1", "s2", "s3", "s4", "s5"):
        assert kinds[name] == "sequence_type"
    onnx.checker.check_model(inferred, full_check=True)


def _models() -> list[Path]:
    return sorted(SAMPLES.glob("*.onnx")) + [c / "model.onnx" for c in conformance_cases()]


def _onnx_facts(model: onnx.ModelProto) -> dict[str, onnx.TypeProto]:
    inferred = onnx.shape_inference.infer_shapes(model, data_prop=True)
    graph = inferred.graph
    return {v.name: v.type for v in [*graph.input, *graph.value_info, *graph.output]}


def _leaf(t: onnx.TypeProto) -> tuple[str, onnx.TypeProto.Tensor | None]:
    """The outer kind of a type and the tensor type at its leaf (None when not a tensor)."""
    outer = t.WhichOneof("value") or ""
    while t.WhichOneof("value") in ("sequence_type", "optional_type"):
        t = getattr(t, t.WhichOneof("value")).elem_type
    return outer, t.tensor_type if t.WhichOneof("value") == "tensor_type" else None


@pytest.mark.parametrize("path", _models(), ids=lambda p: f"{p.parent.name}/{p.stem}")
def test_never_contradicts_onnx_and_knows_at_least_as_much(path: Path) -> None:
    model = onnx.load(path)
    ours = seqpasses.shape_facts(model)
    theirs = _onnx_facts(model)
    # a list a Loop gives back: its element shape is claimed only as induction proves it (onnx
    # takes the body's declaration: ONNX's own test_loop13_seq declares rank-0 elements, the
    # run gives [1], [2], ...); what seqpasses claims there must still agree with onnx
    from_loops = {out for node in model.graph.node if node.op_type == "Loop" for out in node.output}
    for fact in ours.values:
        if fact.graph != "main" or fact.name not in theirs:
            continue
        if fact.name in from_loops and fact.kind == "sequence" and fact.shape is None:
            continue
        kind, tensor = _leaf(theirs[fact.name])
        expected_kind = {
            "tensor_type": "tensor",
            "sequence_type": "sequence",
            "optional_type": "optional",
        }
        assert fact.kind == expected_kind.get(kind, fact.kind), fact.name
        if tensor is None or not tensor.elem_type:
            continue
        assert fact.dtype == onnx.TensorProto.DataType.Name(tensor.elem_type).lower(), fact.name
        if not tensor.HasField("shape"):
            continue
        assert fact.shape is not None, f"{fact.name}: onnx knows the rank, seqpasses does not"
        assert len(fact.shape) == len(tensor.shape.dim), fact.name
        for ours_dim, dim in zip(fact.shape, tensor.shape.dim, strict=True):
            if dim.HasField("dim_value"):
                assert ours_dim == dim.dim_value, f"{fact.name}: {fact.shape} vs onnx"


def test_shapes_command_table_and_json() -> None:
    table = run_cli("shapes", SAMPLES / "unbind_stack.onnx")
    assert table.returncode == 0, table.stderr
    lines = table.stdout.splitlines()
    assert lines[0].split() == ["value", "graph", "kind", "dtype", "shape", "length"]
    assert any(line.split()[:5] == ["parts", "main", "sequence", "float", "[3]"] for line in lines)
    assert any(line.split()[0] == "count" and line.rstrip().endswith("= 4") for line in lines)
    data = json.loads(run_cli("shapes", SAMPLES / "unbind_stack.onnx", "--json").stdout)
    parts = next(v for v in data["values"] if v["name"] == "parts")
    assert parts["length"] == 4 and parts["element_shapes"] == [[3]] * 4


UNBIND_THEN_CAT = onnx.parser.parse_model("""<ir_version: 8, opset_import: ["" : 17]>
g (float[3,4] x, int64 i) => (float[4] y, float[?,?] z, float[?,?] w) {
  one = Constant<value = int64 {1}>()
  s = SplitToSequence<axis = 0, keepdims = 0>(x, one)
  y = SequenceAt(s, i)
  z = ConcatFromSequence<axis = 0, new_axis = 1>(s)
  w = Transpose<perm = [1, 0]>(z)
}""")


def test_an_unbind_claims_what_the_model_computes_and_it_flows_on() -> None:
    # onnx's inference reads the spec's letter (elements [1,4]); ONNX Runtime and PyTorch
    # squeeze them ([4]): seqpasses claims [4], and what follows is inferred from it
    facts = seqpasses.shape_facts(UNBIND_THEN_CAT)
    assert facts["s"].shape == (4,)
    assert facts["z"].shape == (3, 4)
    assert facts["w"].shape == (4, 3)
    inferred = onnx.shape_inference.infer_shapes(UNBIND_THEN_CAT)
    s = next(v for v in inferred.graph.value_info if v.name == "s")
    assert len(s.type.sequence_type.elem_type.tensor_type.shape.dim) == 2  # (onnx: [1,4])


def test_a_model_seqpasses_writes_passes_onnx_s_check_where_the_facts_disagree_with_it() -> None:
    # a written model must pass onnx's full check, whose inference claims [1,4]: there the
    # value (and what depends on it) is declared without a shape, not with a wrong one
    model = onnx.load(SAMPLES / "torch" / "ts_drop_weakest.onnx")
    optimized = seqpasses.optimize(model, infer_shapes=True)
    onnx.checker.check_model(optimized, full_check=True)


def test_loop_outputs_get_the_shapes_induction_proves() -> None:
    facts = seqpasses.shape_facts(SAMPLES / "torch" / "ts_append_data_dependent.onnx")
    assert facts["/Loop_output_0"].shape == (2, 3)  # a carried tensor
    loop = facts["/Loop_output_1"]  # a carried list, grown by appends of [2,3]
    assert loop.kind == "sequence" and loop.shape == (2, 3)


def test_models_onnx_ir_cannot_hold_get_onnx_s_facts_not_a_crash() -> None:
    facts = seqpasses.shape_facts(SAMPLES / "wild" / "sklearn_logreg.onnx")
    assert facts.outputs and any(f.kind == "tensor" and f.shape for f in facts.values)


def test_per_node_inference_tells_inputs_of_one_name_apart() -> None:
    # During a walk, values of different graphs can share a name (onnx_ir names new values per
    # graph: a Split output of the main graph and an axes Constant of a loop body both "val_1").
    # The axes' value must not be taken for the data's: Unsqueeze([4,1], axes=[1]) is [4,1,1].
    import numpy as np
    import onnx_ir as ir

    from seqpasses.core.shapes import ShapeOracle

    data = ir.Value(name="val_1", type=ir.TensorType(ir.DataType.FLOAT), shape=ir.Shape([4, 1]))
    axes = ir.node("Constant", [], {"value": ir.tensor(np.array([1], dtype=np.int64))})
    axes.outputs[0].name = "val_1"
    axes.outputs[0].type, axes.outputs[0].shape = ir.TensorType(ir.DataType.INT64), ir.Shape([1])
    node = ir.node("Unsqueeze", [data, axes.outputs[0]])
    node.outputs[0].name = "val_2"
    oracle = ShapeOracle(15)
    ((type_, shape),) = oracle.infer(node, [(v.type, v.shape) for v in node.inputs if v])
    assert type_ == ir.TensorType(ir.DataType.FLOAT)
    assert shape == ir.Shape([4, 1, 1])


STATES_IN_A_LIST = """<ir_version: 8, opset_import: ["" : 17]>
g (float[B,4] x, int64 n) => (float[?,?,?] y, float[?,?] last) {
    t = Constant<value = bool {1}>()
    h0 = Concat<axis = 1>(x, x)
    states = SequenceConstruct(h0, h0)
    empty = SequenceEmpty<dtype = 1>()
    s_out, last, rows = Loop(n, t, states, x, empty) <body = step (int64 i, bool cond,
            seq(float) s, float[B,4] prev, seq(float) acc) => (bool c_out, seq(float) s_next,
            float[B,4] x_next, seq(float) out) {
        c_out = Identity(cond)
        p0 = Constant<value = int64 {0}>()
        p1 = Constant<value = int64 {1}>()
        s0 = SequenceAt(s, p0)
        s1 = SequenceAt(s, p1)
        n0 = Tanh(s0)
        n1 = Sigmoid(s1)
        s_next = SequenceConstruct(n0, n1)
        row = Mul(n0, n1)
        half = Constant<value = int64[2] {0, 4}>()
        four = Constant<value = int64[2] {9223372036854775807, 8}>()
        axes = Constant<value = int64[2] {0, 1}>()
        x_next = Slice(row, half, four, axes)
        out = SequenceInsert(acc, row)
    }>
    y = ConcatFromSequence<axis = 1, new_axis = 1>(rows)
}"""


def test_lists_a_loop_carries_are_proven_together() -> None:
    """A vocoder's sampling loop: each step's output and the carried tensor are computed
    from states the loop carries in a list, read by position. The induction assumes every
    list's elements at once: the output list's elements and the carried tensor hang on the
    states list's, and each is proven only with it (before, each list was assumed alone:
    the output's shape was unknown). Checked on a run."""
    model = onnx.parser.parse_model(STATES_IN_A_LIST)
    facts = seqpasses.shape_facts(model)
    assert facts["y"].shape == ("B", None, 8)
    assert facts["last"].shape == ("B", 4)
    assert facts["rows"].shape == ("B", 8)  # (a list: the shape its elements share)
    feeds = {"x": np.ones((2, 4), np.float32), "n": np.array(3, np.int64)}
    y, last = ReferenceEvaluator(model).run(None, feeds)
    assert y.shape == (2, 3, 8) and last.shape == (2, 4)


def test_a_scan_output_onnx_gives_a_rank_keeps_the_rank_induction_proves() -> None:
    """tf2onnx's ``map_fn`` writes each row's length as a scan output of its while loop: a
    scalar per iteration, so a vector. onnx's claim of what a loop gives is not taken (it
    is the initial value's shape for what a body carries); what induction proves of the
    scan output is, and it was not made where onnx had claimed something."""
    model = onnx.load(SAMPLES / "tf2onnx" / "tf_ragged_boolean_mask.onnx")
    facts = seqpasses.shape_facts(model)
    assert facts["map/while_loop:3"].shape == (None,)
    feeds = {"x": np.ones((3, 4), np.float32)}
    model.graph.output.append(onnx.helper.make_empty_tensor_value_info("map/while_loop:3"))
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    assert session.run(None, feeds)[-1].shape == (3,)  # (onnx.reference's Loop: (3, 1))


GROWING = """<ir_version: 8, opset_import: ["" : 18]>
g (float[B,3] x, int64 n) => (float[?,?] y, float[?,?,?] z) {
    t = Constant<value = bool {1}>()
    zero = Constant<value = int64[1] {0}>()
    three = Constant<value = int64[1] {3}>()
    dims = Concat<axis = 0>(zero, three)
    e = ConstantOfShape<value = float[1] {0}>(dims)
    y, z = Loop(n, t, e) <body = step (int64 i, bool c, float[?,?] acc) => (bool c2,
            float[?,?] acc2, float[?,?] seen) {
        c2 = Identity(c)
        acc2 = Concat<axis = 0>(acc, x)
        seen = ReduceSum<keepdims = 1>(acc2, zero)
    }>
}"""


def test_a_carried_tensor_that_grows_keeps_its_rank_and_the_dims_that_hold() -> None:
    """A running concatenation carried by a Loop grows each iteration: its first dim is
    open, its rank and last dim hold at every iteration (induction widens the assumption
    instead of dropping it), and what the body computes from it is known: a sum of its rows,
    stacked, is [n, 1, 3]."""
    model = onnx.parser.parse_model(GROWING)
    facts = seqpasses.shape_facts(model)
    assert facts["y"].shape == (None, 3)
    assert facts["z"].shape == (None, 1, 3)
    feeds = {"x": np.ones((2, 3), np.float32), "n": np.array(3, np.int64)}
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    y, z = session.run(None, feeds)
    assert y.shape == (6, 3) and z.shape == (3, 1, 3)


def test_a_count_an_exporter_traced_is_not_claimed() -> None:
    """A detector's boxes, concatenated after a loop over the images: TorchScript declares
    the output ``[3, 4]``, as many boxes as passed the threshold in its sample run. The
    concatenation's axis grows with a run-time count: ``shapes`` claims the 4, not the 3
    (other stored inputs give other counts)."""
    path = SAMPLES / "torch" / "ts_detection_postprocess.onnx"
    model = onnx.load(path)
    declared = [d.dim_value for d in model.graph.output[0].type.tensor_type.shape.dim]
    assert declared == [3, 4]
    facts = seqpasses.shape_facts(model)
    assert facts[model.graph.output[0].name].shape == (None, 4)
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    rows = {
        session.run(None, {k: np.asarray(v) for k, v in feeds.items()})[0].shape[0]
        for feeds in seqpasses.load_inputs(path.with_suffix(".npz"))
    }
    assert rows - {3}, rows

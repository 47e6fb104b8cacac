"""The Python API: ModelProto, onnx_ir Model and path inputs; passes in a PassManager; reports."""

from __future__ import annotations

from pathlib import Path

import onnx
import onnx_ir as ir
import onnx_ir.passes.common as common_passes
import pytest

import seqpasses
from helpers import SAMPLES, io_signature, refold_modified, sequence_op_count

SAMPLE_FILES = sorted(SAMPLES.glob("*.onnx"))


def test_model_proto_in_model_proto_out_and_the_argument_is_unchanged() -> None:
    model = onnx.load(SAMPLES / "concat_from_sequence_axis0.onnx")
    before = model.SerializeToString(deterministic=True)
    optimized = seqpasses.optimize(model)
    assert isinstance(optimized, onnx.ModelProto)
    assert model.SerializeToString(deterministic=True) == before
    assert [n.op_type for n in optimized.graph.node] == ["Concat"]


def test_ir_model_is_optimized_in_place() -> None:
    model = ir.load(SAMPLES / "sequence_erase_neg2.onnx")
    result = seqpasses.optimize(model)
    assert result is model
    assert [n.op_type for n in model.graph] == ["SequenceConstruct"]


@pytest.mark.parametrize("as_str", [True, False])
def test_path_input(as_str: bool) -> None:
    path = SAMPLES / "unbind_stack.onnx"
    optimized = seqpasses.optimize(str(path) if as_str else path)
    assert isinstance(optimized, onnx.ModelProto)
    assert sequence_op_count(optimized) == 0


def test_passes_compose_in_a_pass_manager() -> None:
    model = ir.load(SAMPLES / "list_ops_opset11.onnx")
    manager = ir.passes.PassManager(
        [
            seqpasses.FoldSequencesPass(),
            common_passes.RemoveUnusedNodesPass(),
            common_passes.TopologicalSortPass(),
        ],
        steps=3,
        early_stop=True,
    )
    result = manager(model)
    assert result.modified
    proto = ir.serde.serialize_model(result.model)
    onnx.checker.check_model(proto, full_check=True)
    assert sequence_op_count(proto) == 0
    assert seqpasses.FoldSequencesPass()(result.model).modified is False


def test_report_names_rewrites_and_reasons() -> None:
    model = onnx.parser.parse_model("""<ir_version: 8, opset_import: ["" : 18]>
g (float[2] a, float[3] b, int64 i) => (float[?] y, int64 n) {
  s = SequenceConstruct(a, b)
  n = SequenceLength(s)
  y = SequenceAt(s, i)
}""")  # (elements of two shapes: not one tensor either)
    report = seqpasses.Report()
    seqpasses.optimize(model, report=report)
    assert [r.rule for r in report.rewrites] == ["sequence-length"]
    reasons = {r.op_type: r.detail for r in report.left}
    assert "graph input" in reasons["SequenceAt"]
    assert "consumed by SequenceAt" in reasons["SequenceConstruct"]
    assert report.sequence_ops_before == 3 and report.sequence_ops_after == 2
    assert "sequence ops: 3 -> 2" in report.table()


KEPT_SAMPLES = {"unlike_shapes"}  # elements of unlike shapes at run-time positions


@pytest.mark.parametrize("path", SAMPLE_FILES, ids=[p.stem for p in SAMPLE_FILES])
def test_samples_optimize_keep_their_interface_and_are_deterministic(path: Path) -> None:
    model = onnx.load(path)
    first = seqpasses.optimize(model)
    second = seqpasses.optimize(model)
    assert first.SerializeToString(deterministic=True) == second.SerializeToString(
        deterministic=True
    )
    onnx.checker.check_model(first, full_check=True)
    assert io_signature(first) == io_signature(model)
    if path.stem in KEPT_SAMPLES:  # the sample of what cannot go: nothing is rewritten
        assert sequence_op_count(first) == sequence_op_count(model)
    else:
        assert sequence_op_count(first) < sequence_op_count(model)
    report = seqpasses.verify(model, first)
    assert report.ok, report.mismatch
    assert refold_modified(first) is False


OPERATOR_PAGE = {
    "concat_from_sequence_axis0": (["Concat"], (6, 3)),
    "concat_from_sequence_axis1": (["Concat"], (2, 9)),
    "concat_from_sequence_new_axis": (
        ["Unsqueeze", "Unsqueeze", "Unsqueeze", "Concat"],  # (the axes: an initializer)
        (3, 2, 3),
    ),
    "sequence_erase_default": (["SequenceConstruct"], None),
    "sequence_erase_neg2": (["SequenceConstruct"], None),
    "sequence_erase_pos1": (["SequenceConstruct"], None),
}


@pytest.mark.parametrize("name", sorted(OPERATOR_PAGE))
def test_operator_page_examples(name: str) -> None:
    ops, shape = OPERATOR_PAGE[name]
    model = onnx.load(SAMPLES / f"{name}.onnx")
    optimized = seqpasses.optimize(model)
    assert [n.op_type for n in optimized.graph.node] == ops
    if shape is not None:
        dims = [d.dim_value for d in optimized.graph.output[0].type.tensor_type.shape.dim]
        assert tuple(dims) == shape
    assert seqpasses.verify(model, optimized).ok


def test_rewrite_groups_can_be_skipped_or_selected_by_name() -> None:
    model = onnx.parser.parse_model("""<ir_version: 8, opset_import: ["" : 18]>
g (float[2] a, float[2] b) => (float[4] y, bool h) {
  s = SequenceConstruct(a, b)
  o = Optional(s)
  h = OptionalHasElement(o)
  y = ConcatFromSequence<axis = 0>(s)
}""")
    skipped = seqpasses.optimize(model, skip=["optional"])
    assert "OptionalHasElement" in {n.op_type for n in skipped.graph.node}
    assert "ConcatFromSequence" not in {n.op_type for n in skipped.graph.node}
    only = seqpasses.optimize(model, only=["optional"])
    assert "ConcatFromSequence" in {n.op_type for n in only.graph.node}
    assert "OptionalHasElement" not in {n.op_type for n in only.graph.node}
    with pytest.raises(ValueError, match="unknown pass"):
        seqpasses.optimize(model, skip=["no-such-pass"])
    assert set(seqpasses.REWRITES) >= {"sequence-ops", "if-inline", "loop-scan"}


@pytest.mark.parametrize("name", ["torch/ts_rnn_cell", "if_reads_list", "run_time_reads"])
def test_op_counts_agree_on_a_model_proto_and_an_ir_model(name: str) -> None:
    proto = onnx.load(SAMPLES / f"{name}.onnx")
    counts = seqpasses.count_ops(proto)
    assert counts == seqpasses.count_ops(ir.from_proto(proto))
    assert seqpasses.count_sequence_ops(proto) == sequence_op_count(proto) > 0
    if name == "torch/ts_rnn_cell":  # the Loop body's nodes are counted too
        assert counts["SequenceInsert"] == 1 and counts["Loop"] == 1


def test_the_onnx_ir_pass_reports_as_optimize_does() -> None:
    import onnx_ir as ir

    path = SAMPLES / "torch" / "ts_list_edits.onnx"
    by_pass = seqpasses.Report()
    result = seqpasses.FoldSequencesPass(None, by_pass)(ir.load(path))
    by_optimize = seqpasses.Report()
    seqpasses.optimize(path, report=by_optimize)
    assert result.modified
    assert by_pass.sequence_ops_before == 9 == by_optimize.sequence_ops_before
    assert by_pass.ops_after == by_optimize.ops_after
    assert by_pass.summary() == by_optimize.summary() == "sequence ops: 9 -> 0, 4 rewrites, 0 left"
    assert [r.rule for r in by_pass.rewrites] == [r.rule for r in by_optimize.rewrites]
    assert "ConcatFromSequence" in by_pass.table()


def test_the_onnx_ir_pass_refuses_a_model_proto_in_one_line() -> None:
    with pytest.raises(TypeError, match=r"runs on an onnx_ir\.Model, not ModelProto"):
        seqpasses.FoldSequencesPass()(onnx.load(SAMPLES / "torch" / "ts_list_edits.onnx"))


def test_fold_options_refuse_what_optimize_refuses() -> None:
    with pytest.raises(ValueError, match="unknown pass nosuch"):
        seqpasses.FoldOptions(disabled=frozenset({"nosuch"}))
    with pytest.raises(ValueError, match="unknown pass nosuch"):
        seqpasses.optimize(onnx.load(SAMPLES / "unbind_stack.onnx"), skip=["nosuch"])
    with pytest.raises(ValueError, match="--max-split must be at least 1"):
        seqpasses.FoldOptions(max_split=0)


def test_the_table_totals_says_one_line_when_nothing_changed_and_counts_optionals_apart() -> None:
    kept = onnx.parser.parse_model("""<ir_version: 8, opset_import: ["" : 18]>
    g (float[2] x) => (optional(float[2]) y, float[2] z) {
      y = Optional(x)
      z = Relu(x)
    }""")
    report = seqpasses.Report()
    seqpasses.optimize(kept, report=report)
    assert report.table().splitlines() == [
        "ops: 2 nodes of 2 op types, the same before and after",
        "sequence ops: 0 -> 0, 0 rewrites, 0 left",  # (the Optional is not a sequence op)
        "optional ops: 1 -> 1, 1 left",
    ]
    changed = seqpasses.Report()
    seqpasses.optimize(onnx.load(SAMPLES / "unbind_stack.onnx"), report=changed)
    lines = changed.table().splitlines()
    assert lines[-2].split() == ["total", "6", "4", "-2"]
    assert changed.as_dict()["nodes_before"] == 6 and changed.as_dict()["nodes_after"] == 4


def test_a_contradicted_declaration_is_said_once_with_what_replaces_it() -> None:
    # TorchScript declares del l[p]'s concatenation [n, 3]; it computes a vector
    report = seqpasses.Report()
    seqpasses.optimize(onnx.load(SAMPLES / "torch" / "ts_list_del_at.onnx"), report=report)
    said = [n for n in report.notes if "contradicts" in n]
    assert said == [
        "output '5': declared shape [ConcatFromSequence5_dim_0,3] contradicts what the graph "
        "computes, [?]: declared so instead"
    ], report.notes

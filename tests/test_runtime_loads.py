"""What ONNX Runtime loads, it loads after seqpasses: a run that rewrites nothing writes the
input as it was (TVM's concat_from_sequence test with new_axis=2, invalid by the spec, came
back with a declaration ONNX Runtime's inference refuses), and a result ONNX Runtime would
refuse loses what it added or goes back unchanged."""

from __future__ import annotations

from pathlib import Path

import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

import seqpasses
from helpers import run_cli


def _tvm_concat(rewritable: bool) -> onnx.ModelProto:
    nodes = [
        helper.make_node("SequenceConstruct", ["a", "b"], ["s"]),
        helper.make_node("ConcatFromSequence", ["s"], ["y"], axis=0, new_axis=2),
    ]
    outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)]
    if rewritable:  # a second list, which is lowered
        nodes += [
            helper.make_node("SequenceConstruct", ["a", "b"], ["t"]),
            helper.make_node("ConcatFromSequence", ["t"], ["z"], axis=0),
        ]
        outputs.append(helper.make_tensor_value_info("z", TensorProto.FLOAT, None))
    graph = helper.make_graph(
        nodes,
        "concat_from_sequence",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, [16, 8]) for n in "ab"],
        outputs,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)])


def _loads(path: Path) -> bool:
    try:
        ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    except Exception:
        return False
    return True


def test_a_run_that_rewrites_nothing_writes_the_input_as_it_was(tmp_path: Path) -> None:
    source = tmp_path / "in.onnx"
    onnx.save(_tvm_concat(rewritable=False), source)
    out = tmp_path / "out.onnx"
    result = run_cli("optimize", source, "-o", out)  # (shapes are filled by default)
    assert result.returncode == 0, result.stderr
    assert "written unchanged: no rewrite applies (2 sequence op(s) left)" in result.stdout
    assert "new_axis 2 is not 0 or 1" in result.stdout  # (the reason is still given)
    assert out.read_bytes() == source.read_bytes()
    assert _loads(out)


def test_a_declaration_runtime_refuses_is_dropped(tmp_path: Path) -> None:
    source = tmp_path / "in.onnx"
    onnx.save(_tvm_concat(rewritable=True), source)
    assert _loads(source)
    out = tmp_path / "out.onnx"
    result = run_cli("optimize", source, "-o", out)
    assert result.returncode == 0, result.stderr
    assert "ONNX Runtime's inference rejects them" in result.stdout
    assert _loads(out)
    assert [n.op_type for n in onnx.load(out).graph.node].count("ConcatFromSequence") == 1
    assert seqpasses.verify(source, out).ok


def test_a_model_without_sequence_ops_is_left_alone() -> None:
    # a constant-condition If is no sequence op: a model without any is handed back whole
    branch = helper.make_graph(
        [helper.make_node("Relu", ["x"], ["r"])],
        "then",
        [],
        [helper.make_tensor_value_info("r", TensorProto.FLOAT, [2])],
    )
    other = helper.make_graph(
        [helper.make_node("Neg", ["x"], ["q"])],
        "else",
        [],
        [helper.make_tensor_value_info("q", TensorProto.FLOAT, [2])],
    )
    nodes = [
        helper.make_node(
            "Constant", [], ["c"], value=helper.make_tensor("c", TensorProto.BOOL, [], [1])
        ),
        helper.make_node("If", ["c"], ["y"], then_branch=branch, else_branch=other),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    report = seqpasses.Report()
    assert seqpasses.optimize(model, report=report) == model
    assert report.unchanged == "it holds no sequence or optional op" and not report.rewrites


@pytest.mark.parametrize("infer", [False, True])
def test_the_api_hands_back_the_input_when_nothing_applies(infer: bool) -> None:
    model = _tvm_concat(rewritable=False)
    report = seqpasses.Report()
    assert seqpasses.optimize(model, report=report, infer_shapes=infer) == model
    assert not report.changed and [left.op_type for left in report.left] == [
        "SequenceConstruct",
        "ConcatFromSequence",
    ]

"""What the mutation fuzzer (tests/mutation_fuzz.py) found, each reduced to a model of its
own: a rewrite that made an invalid model or one ONNX Runtime refuses, a constant of a type a
position cannot have, a dim too large to materialize, a model only a full check rejects."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto as T
from onnx import helper as h

import seqpasses
from helpers import SAMPLES, run_cli, sequence_op_count


def _seq(dims: list[int | str] | None = None) -> onnx.TypeProto:
    return h.make_sequence_type_proto(h.make_tensor_type_proto(T.FLOAT, dims or [2]))


def _save(model: onnx.ModelProto, path: Path) -> Path:
    onnx.save(model, path)
    return path


def _rotating_lists() -> onnx.ModelProto:
    """A Loop carrying lists ``a`` and ``b``: each step ``a`` becomes ``b`` as it was and ``b``
    grows by one row (the body hands its input ``b`` on as its output for ``a``)."""
    body = h.make_graph(
        [
            h.make_node("Cast", ["i"], ["f"], to=T.FLOAT),
            h.make_node("Mul", ["x", "f"], ["m"]),
            h.make_node("SequenceInsert", ["b", "m"], ["b2"]),
            h.make_node("Identity", ["c"], ["c2"]),
        ],
        "body",
        [
            h.make_tensor_value_info("i", T.INT64, []),
            h.make_tensor_value_info("c", T.BOOL, []),
            h.make_value_info("a", _seq()),
            h.make_value_info("b", _seq()),
        ],
        [
            h.make_tensor_value_info("c2", T.BOOL, []),
            h.make_value_info("b", _seq()),
            h.make_value_info("b2", _seq()),
        ],
    )
    graph = h.make_graph(
        [
            h.make_node("Constant", [], ["n"], value=h.make_tensor("n", T.INT64, [], [4])),
            h.make_node("Constant", [], ["t"], value=h.make_tensor("t", T.BOOL, [], [1])),
            h.make_node("SequenceConstruct", ["x"], ["e"]),
            h.make_node("SequenceConstruct", ["x"], ["s"]),
            h.make_node("Loop", ["n", "t", "e", "s"], ["la", "lb"], body=body),
            h.make_node("ConcatFromSequence", ["la"], ["ya"], axis=0, new_axis=1),
            h.make_node("ConcatFromSequence", ["lb"], ["yb"], axis=0, new_axis=1),
        ],
        "g",
        [h.make_tensor_value_info("x", T.FLOAT, [2])],
        [
            h.make_tensor_value_info("ya", T.FLOAT, ["p", "q"]),
            h.make_tensor_value_info("yb", T.FLOAT, ["r", "s"]),
        ],
    )
    return h.make_model(graph, opset_imports=[h.make_opsetid("", 18)])


def test_a_carried_list_the_body_hands_on_as_another_is_not_a_scan_output() -> None:
    model = _rotating_lists()
    optimized = seqpasses.optimize(model)
    onnx.checker.check_model(optimized, full_check=True)
    assert sequence_op_count(optimized) == 0
    report = seqpasses.verify(model, optimized, runs=3)
    assert report.ok and report.verified, report


def test_a_list_read_by_a_concat_of_an_invalid_new_axis_loads_where_the_input_loads(
    tmp_path: Path,
) -> None:
    """ONNX Runtime loads ``ConcatFromSequence(new_axis=-2)`` while the list's elements are
    unknown, and refused it once a rewrite made them known: such a result must not be written."""
    graph = h.make_graph(
        [
            h.make_node("SequenceConstruct", ["x", "x"], ["s"]),
            h.make_node("SequenceInsert", ["s", "x"], ["t"]),
            h.make_node("ConcatFromSequence", ["t"], ["y"], axis=0, new_axis=-2),
        ],
        "g",
        [h.make_tensor_value_info("x", T.FLOAT, ["n", 2])],
        [h.make_tensor_value_info("y", T.FLOAT, None)],
    )
    source = _save(h.make_model(graph, opset_imports=[h.make_opsetid("", 18)]), tmp_path / "m.onnx")
    ort.InferenceSession(str(source), providers=["CPUExecutionProvider"])
    out = tmp_path / "out.onnx"
    result = run_cli("optimize", source, "-o", out)
    assert result.returncode == 0, result.stderr
    ort.InferenceSession(str(out), providers=["CPUExecutionProvider"])


def test_a_position_of_a_complex_type_is_left_not_a_fault(tmp_path: Path) -> None:
    position = h.make_tensor("p", T.COMPLEX64, [], [1 + 0j])
    graph = h.make_graph(
        [
            h.make_node("Constant", [], ["p"], value=position),
            h.make_node("SequenceConstruct", ["x", "x"], ["s"]),
            h.make_node("SequenceAt", ["s", "p"], ["y"]),
        ],
        "g",
        [h.make_tensor_value_info("x", T.FLOAT, [2])],
        [h.make_tensor_value_info("y", T.FLOAT, [2])],
    )
    source = _save(h.make_model(graph, opset_imports=[h.make_opsetid("", 18)]), tmp_path / "m.onnx")
    for command in (["optimize", source, "-o", tmp_path / "o.onnx"], ["shapes", source]):
        result = run_cli(*command)
        assert result.returncode in (0, 2), result.stderr
        assert "bug in seqpasses" not in result.stderr


def test_a_list_as_long_as_a_huge_dim_is_not_materialized() -> None:
    """Erasing at a run-time position from a list split off a ``[2**62, 3]`` input asked
    numpy for a 2**62-element range of positions."""
    graph = h.make_graph(
        [
            h.make_node("Constant", [], ["one"], value=h.make_tensor("one", T.INT64, [], [1])),
            h.make_node("SplitToSequence", ["x", "one"], ["s"], axis=0, keepdims=0),
            h.make_node("SequenceErase", ["s", "p"], ["t"]),
            h.make_node("ConcatFromSequence", ["t"], ["y"], axis=0),
            h.make_node("SequenceLength", ["t"], ["n"]),
        ],
        "g",
        [
            h.make_tensor_value_info("x", T.FLOAT, [2**62, 3]),
            h.make_tensor_value_info("p", T.INT64, []),
        ],
        [h.make_tensor_value_info("y", T.FLOAT, ["m", 3]), h.make_tensor_value_info("n", 7, [])],
    )
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 18)])
    optimized = seqpasses.optimize(model)
    assert sequence_op_count(optimized) <= sequence_op_count(model)
    for tensor in optimized.graph.initializer:
        assert np.prod(tensor.dims) <= 4096


def test_a_model_only_a_full_check_rejects_is_bad_input(tmp_path: Path) -> None:
    """The loop of ``ts_unbind_loop_stack`` with its append made a ``SplitToSequence`` of the
    list (which the plain checker does not type): the passes made more sequence ops of it,
    and the self-check called that a fault of seqpasses. It is the input's: refused in one
    line, or (since the body's declared list is no longer trusted, nothing the passes do
    there fails) written with fewer sequence ops; never an internal error."""
    model = onnx.load(SAMPLES / "torch" / "ts_unbind_loop_stack.onnx")
    loop = next(node for node in model.graph.node if node.op_type == "Loop")
    body = loop.attribute[0].g
    insert = next(node for node in body.node if node.op_type == "SequenceInsert")
    insert.op_type = "SplitToSequence"
    onnx.checker.check_model(model)  # (the plain check passes)
    source = _save(model, tmp_path / "m.onnx")
    result = run_cli("optimize", source, "-o", tmp_path / "o.onnx")
    assert result.returncode in (0, 2), result.stderr
    assert "bug in seqpasses" not in result.stderr and "Traceback" not in result.stderr
    if result.returncode == 2:
        assert "fails onnx's full check" in result.stderr
        assert len(result.stderr.splitlines()) == 1
    else:
        assert sequence_op_count(onnx.load(tmp_path / "o.onnx")) < sequence_op_count(model)

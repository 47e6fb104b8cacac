"""onnx's inference in linear pieces (seqpasses.core.onnx_inference) answers as onnx's own
does: the same strict verdicts and the same types, on every sample model, rule file and
conformance case, and on graphs of many subgraphs and calls, where the pieces are used; the
self-check built on it rejects what onnx's full check rejects."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper

from helpers import CONFORMANCE, RULES, SAMPLES, parse_rule
from seqpasses.checks.selfcheck import passes_checker
from seqpasses.core import onnx_inference
from seqpasses.core.onnx_inference import infer
from seqpasses.core.skeleton import LIGHT_BYTES, proto_skeleton

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
from shapes import SHAPES


def _models() -> list[tuple[str, onnx.ModelProto]]:
    found = [(p.relative_to(SAMPLES).as_posix(), onnx.load(p)) for p in SAMPLES.rglob("*.onnx")]
    for path in sorted(RULES.glob("*.rule")):
        rule = parse_rule(path)
        found += [(f"{path.stem}:before", rule.before), (f"{path.stem}:after", rule.after)]
    for path in sorted(CONFORMANCE.glob("onnx-node/*/model.onnx")):
        found.append((path.parent.name, onnx.load(path)))
    return found


def _whole(model: onnx.ModelProto, strict: bool) -> tuple[onnx.ModelProto | None, str]:
    try:
        inferred = onnx.shape_inference.infer_shapes(
            model, check_type=strict, strict_mode=strict, data_prop=not strict
        )
    except Exception as error:
        return None, str(error).splitlines()[0]
    return inferred, ""


def _pieces(model: onnx.ModelProto, strict: bool) -> tuple[onnx.ModelProto | None, str]:
    try:
        inferred = infer(model, strict=strict, data_prop=not strict)
    except Exception as error:
        return None, str(error).splitlines()[0]
    return inferred, ""


def _types(model: onnx.ModelProto) -> dict[str, str]:
    """Main-graph types, onnx's made-up dim names (unk__N, numbered by visit) as one."""
    graph = model.graph
    return {
        info.name: re.sub(r"unk__\d+", "unk", str(info.type))
        for info in [*graph.value_info, *graph.output]
    }


def _agree(model: onnx.ModelProto) -> None:
    _, theirs = _whole(model, strict=True)
    _, ours = _pieces(model, strict=True)
    assert bool(theirs) == bool(ours), (theirs, ours)
    whole, _ = _whole(model, strict=False)
    pieces, _ = _pieces(model, strict=False)
    assert whole is not None and pieces is not None
    assert _types(pieces) == _types(whole)


@pytest.fixture(autouse=True)
def _always_in_pieces(monkeypatch: pytest.MonkeyPatch) -> None:
    # (small models are inferred whole: make every model go through the pieces)
    monkeypatch.setattr(onnx_inference, "_whole_is_cheaper", lambda *_: False)


MODELS = _models()


@pytest.mark.parametrize("model", [m for _, m in MODELS], ids=[n for n, _ in MODELS])
def test_the_pieces_answer_as_onnx_does(model: onnx.ModelProto) -> None:
    _agree(model)


@pytest.mark.parametrize("shape", ["many loops", "if chain", "many functions", "mixed"])
def test_graphs_of_many_subgraphs_and_calls(shape: str) -> None:
    _agree(SHAPES[shape](3000))


def _loop_model(body_nodes: list[onnx.NodeProto], body_out: onnx.ValueInfoProto) -> onnx.ModelProto:
    body = h.make_graph(
        [h.make_node("Identity", ["c"], ["c_out"]), *body_nodes],
        "body",
        [
            h.make_tensor_value_info("i", T.INT64, []),
            h.make_tensor_value_info("c", T.BOOL, []),
            h.make_tensor_value_info("v", T.FLOAT, [2, 3]),
        ],
        [h.make_tensor_value_info("c_out", T.BOOL, []), body_out],
    )
    nodes = [
        h.make_node("Loop", ["n", "", "x"], ["y"], body=body),
        h.make_node("Relu", ["y"], ["z"]),
    ]
    graph = h.make_graph(
        nodes,
        "g",
        [
            h.make_tensor_value_info("x", T.FLOAT, [2, 3]),
            h.make_tensor_value_info("n", T.INT64, []),
        ],
        [h.make_tensor_value_info("z", T.FLOAT, [2, 3])],
    )
    return h.make_model(graph, opset_imports=[h.make_opsetid("", 18)])


def test_the_self_check_rejects_a_type_conflict_in_a_body() -> None:
    bad = _loop_model(
        [
            h.make_node("Cast", ["i"], ["fi"], to=T.INT64),
            h.make_node("Add", ["v", "fi"], ["v_out"]),  # float + int64
        ],
        h.make_tensor_value_info("v_out", T.FLOAT, [2, 3]),
    )
    onnx.checker.check_model(bad)  # (structurally sound: only inference sees it)
    with pytest.raises(Exception, match="inconsistent type"):
        onnx.checker.check_model(bad, full_check=True)
    assert "(op_type:Add): B has inconsistent type tensor(int64)" in passes_checker(bad)


def test_the_self_check_rejects_a_body_output_of_the_wrong_rank() -> None:
    bad = _loop_model(
        [
            h.make_node("ReduceSum", ["v"], ["v_out"], keepdims=0),  # rank 0, declared rank 2
        ],
        h.make_tensor_value_info("v_out", T.FLOAT, [2, 3]),
    )
    with pytest.raises(Exception, match="ShapeInferenceError"):
        onnx.checker.check_model(bad, full_check=True)
    assert "ShapeInferenceError" in passes_checker(bad)
    good = _loop_model(
        [h.make_node("Relu", ["v"], ["v_out"])], h.make_tensor_value_info("v_out", T.FLOAT, [2, 3])
    )
    assert passes_checker(good) == ""


def test_a_skeleton_types_the_weights_and_keeps_their_bytes_out() -> None:
    weight = numpy_helper.from_array(np.ones((64, 64), np.float32), "w")
    shape = numpy_helper.from_array(np.array([128], np.int64), "s")
    graph = h.make_graph(
        [h.make_node("MatMul", ["x", "w"], ["y"]), h.make_node("Reshape", ["y", "s"], ["z"])],
        "g",
        [h.make_tensor_value_info("x", T.FLOAT, [2, 64])],
        [h.make_tensor_value_info("z", T.FLOAT, [128])],
        [weight, shape],
    )
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 18)])
    skeleton = proto_skeleton(model)
    assert weight.ByteSize() >= LIGHT_BYTES and skeleton.hidden == {"w"}
    assert skeleton.proto.ByteSize() < 1000
    assert [t.name for t in skeleton.proto.graph.initializer] == ["s"]  # (data propagation)
    assert passes_checker(skeleton.proto) == ""
    assert skeleton.full({"w": weight}).SerializeToString() == model.SerializeToString()
    # the skeleton's check sees what the weights' dims say: a Reshape they contradict
    bad = onnx.ModelProto()
    bad.CopyFrom(model)
    bad.graph.initializer[1].CopyFrom(numpy_helper.from_array(np.array([100], np.int64), "s"))
    assert "ShapeInferenceError" in passes_checker(proto_skeleton(bad).proto)

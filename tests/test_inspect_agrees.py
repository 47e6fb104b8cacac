"""``inspect`` gives optimize's own answers: every sequence op it says is removed is gone from
what ``optimize`` writes for the same model, and every one it says is left is still there,
on every sample model and export (the one path: ``pipeline.optimize_loaded``)."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import onnx
import pytest

import seqpasses
from helpers import SAMPLES, all_nodes
from seqpasses.cli.views import inspect_command
from seqpasses.core.ops import SEQUENCE_OPS
from seqpasses.options import Options

MODELS = sorted(SAMPLES.rglob("*.onnx"))


def _named(model: onnx.ModelProto) -> onnx.ModelProto:
    """Every node named uniquely (as inspect names them), so both answers can be matched."""
    for k, node in enumerate(all_nodes(model)):
        node.name = f"n{k}"
    return model


def _sequence_names(model: onnx.ModelProto) -> set[str]:
    return {
        node.name
        for node in all_nodes(model)
        if node.op_type in SEQUENCE_OPS and node.domain in ("", "ai.onnx")
    }


def test_there_are_models_with_sequence_ops_left() -> None:
    # (the comparison below means something only where some ops stay)
    assert sum(1 for p in MODELS if "unlike_shapes" in p.name) == 1


@pytest.mark.parametrize("path", MODELS, ids=lambda p: p.relative_to(SAMPLES).as_posix())
def test_inspect_and_optimize_agree(
    path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = _named(onnx.load(path))
    source = tmp_path / "in.onnx"
    onnx.save(model, source)
    assert inspect_command(source, Options()) == 0
    printed = capsys.readouterr().out
    assert "sequence ops:" in printed
    rows = [line.split() for line in printed.splitlines()[1:] if line.split()]
    removed = {r[1] for r in rows if r[0] in SEQUENCE_OPS and "removed:" in r}
    left = {r[1] for r in rows if r[0] in SEQUENCE_OPS and "left:" in r}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", seqpasses.InputWarning)
        out = seqpasses.optimize(model)
    kept = _sequence_names(out)
    assert not removed & kept, f"inspect says removed, optimize keeps: {removed & kept}"
    assert left <= kept, f"inspect says left, optimize removes: {left - kept}"


def _exporter_named() -> onnx.ModelProto:
    """Exporter-style names where one is another's prefix plus ``_1`` (torchvision's RAFT,
    scripted and exported at opset 16: inspect once matched '/SequenceConstruct_1' to
    '/SequenceConstruct' and said 9 of 17 left where optimize left 6): '/SequenceConstruct'
    is folded away; '/SequenceConstruct_1' stays, read by a Slice (the exporter's list slice
    ``coords[::-1]``, which ONNX does not define on sequences)."""
    h = onnx.helper
    tensor = onnx.TensorProto.FLOAT
    nodes = [
        h.make_node("SequenceConstruct", ["a", "b"], ["s0"], name="/SequenceConstruct"),
        h.make_node("ConcatFromSequence", ["s0"], ["y"], axis=0, name="/ConcatFromSequence"),
        h.make_node("SequenceConstruct", ["a", "b"], ["s1"], name="/SequenceConstruct_1"),
        h.make_node("Slice", ["s1", "start", "end", "axis", "step"], ["r"], name="/Slice_4"),
        h.make_node("ConcatFromSequence", ["r"], ["z"], axis=0, name="/ConcatFromSequence_1"),
    ]
    constants = [
        onnx.numpy_helper.from_array(np.array([v], np.int64), name)
        for name, v in (("start", -1), ("end", -(2**63)), ("axis", 0), ("step", -1))
    ]
    graph = h.make_graph(
        nodes,
        "raft_like",
        [h.make_tensor_value_info(n, tensor, [2, 3]) for n in "ab"],
        [
            h.make_tensor_value_info("y", tensor, [4, 3]),
            h.make_tensor_value_info("z", tensor, [4, 3]),
        ],
        constants,
    )
    return h.make_model(graph, opset_imports=[h.make_opsetid("", 16)])


def test_inspect_prints_optimizes_records_whatever_the_names(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "raft_like.onnx"
    onnx.save(_exporter_named(), source)
    assert inspect_command(source, Options()) == 0
    lines = capsys.readouterr().out.splitlines()
    fates = {line.split()[1]: line for line in lines[1:-2]}
    assert "  removed: " in fates["/SequenceConstruct"]
    assert "  removed: " in fates["/ConcatFromSequence"]
    assert (
        "left: a sequence read by Slice '/Slice_4', which ONNX does not define on sequences"
        in (fates["/SequenceConstruct_1"])
    )
    assert (
        "sequence comes from Slice '/Slice_4', which ONNX does not"
        in (fates["/ConcatFromSequence_1"])
    )
    report = seqpasses.Report()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", seqpasses.InputWarning)
        seqpasses.optimize(source, report=report)
    assert lines[-2] == "4 sequence ops: 2 would be removed, 2 left"
    assert lines[-1] == report.summary() == "sequence ops: 4 -> 2, 1 rewrites, 2 left"


@pytest.mark.parametrize("path", MODELS, ids=lambda p: p.relative_to(SAMPLES).as_posix())
def test_inspect_counts_are_optimizes_records(
    path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # (names as the exporters wrote them: no renaming)
    assert inspect_command(path, Options()) == 0
    lines = capsys.readouterr().out.splitlines()
    report = seqpasses.Report()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", seqpasses.InputWarning)
        seqpasses.optimize(path, report=report)
    assert lines[-1] == report.summary().splitlines()[-1]
    left = sum(1 for line in lines[1:] if "  left" in line and line.split()[0] in SEQUENCE_OPS)
    copies = [line for line in lines if "copies (unrolled or inlined)" in line]
    sequence_left = [r for r in report.left if r.op_type in SEQUENCE_OPS]
    if not copies and "added" not in lines[-2] and "optional" not in lines[-1]:
        assert left == len(sequence_left), (left, len(sequence_left))

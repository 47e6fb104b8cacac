"""``inspect`` gives optimize's own answers: every sequence op it says is removed is gone from
what ``optimize`` writes for the same model, and every one it says is left is still there,
on every sample model and export (the one path: ``pipeline.optimize_loaded``)."""

from __future__ import annotations

import warnings
from pathlib import Path

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
    removed = {r[1] for r in rows if r[0] in SEQUENCE_OPS and r[-1] == "removed"}
    left = {r[1] for r in rows if r[0] in SEQUENCE_OPS and "left:" in r}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", seqpasses.InputWarning)
        out = seqpasses.optimize(model)
    kept = _sequence_names(out)
    assert not removed & kept, f"inspect says removed, optimize keeps: {removed & kept}"
    assert left <= kept, f"inspect says left, optimize removes: {left - kept}"

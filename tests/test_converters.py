"""Models other converters make: tf2onnx's ragged ``map_fn`` (a Loop appending rows of a
different length each iteration, read by ConcatFromSequence), exported by
scripts/export_tf2onnx_models.py with TensorFlow's own results checked against ONNX Runtime's.

Each loses every sequence op, keeps its Loop, and gives ONNX Runtime's results on the stored
inputs exactly; both evaluators agree through ``verify``.
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest

import seqpasses
from helpers import ROOT, op_counts, sequence_op_count

TF2ONNX = sorted((ROOT / "sample_models" / "tf2onnx").glob("*.onnx"))


def _run(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return [np.asarray(r) for r in session.run(None, feeds)]


def test_the_tf2onnx_models_are_here() -> None:
    assert len(TF2ONNX) == 8


@pytest.mark.parametrize("path", TF2ONNX, ids=lambda p: p.stem)
def test_tf2onnx_ragged_map_fn_loses_every_sequence_op(path: Path) -> None:
    model = onnx.load(path)
    assert sequence_op_count(model) >= 3
    report = seqpasses.Report()
    with warnings.catch_warnings():  # (tf2onnx declares an output with no shape: lenient)
        warnings.simplefilter("ignore", seqpasses.InputWarning)
        out = seqpasses.optimize(model, report=report)
    assert sequence_op_count(out) == 0, [r.detail for r in report.left]
    assert op_counts(out)["Loop"] == op_counts(model)["Loop"]
    assert {r.rule for r in report.rewrites} == {"loop-running-concat"}
    feeds = {
        k: np.asarray(v) for k, v in seqpasses.load_inputs(path.with_suffix(".npz"))[0].items()
    }
    for want, got in zip(_run(model, feeds), _run(out, feeds), strict=True):
        assert want.shape == got.shape and np.array_equal(want, got)
    assert seqpasses.verify(model, out, inputs=[feeds], failures="must_match").ok

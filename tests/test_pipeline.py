"""seqpasses inside export pipelines: torch's dynamo exporter, onnx_ir passes, onnxscript.

The dynamo test needs torch and is skipped without it (the suite never depends on torch);
onnxscript comes with the test extra.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnx_ir as ir
import onnx_ir.passes.common as common
import onnxruntime as ort
import pytest

import seqpasses
from helpers import SAMPLES, op_counts, sequence_op_count, stored_runs
from test_torch_exports import _assert_matches

TORCH = SAMPLES / "torch"


def _run(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[object]:
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return list(session.run(None, feeds))


def test_on_the_model_of_a_dynamo_export_before_saving(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")

    class Chunks(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            a, b, c = torch.chunk(x, 3, dim=1)
            return torch.cat([c, a * b], 1)

    x = torch.randn(2, 6)
    program = torch.onnx.export(Chunks(), (x,), dynamo=True, verbose=False)
    report = seqpasses.Report()
    same = seqpasses.optimize(program.model, report=report)  # the onnx_ir.Model, in place
    assert same is program.model
    program.save(tmp_path / "chunks.onnx")
    saved = onnx.load(tmp_path / "chunks.onnx")
    onnx.checker.check_model(saved, full_check=True)
    assert sequence_op_count(saved) == 0
    (got,) = _run(saved, {"x": x.numpy()})
    np.testing.assert_allclose(got, Chunks()(x).numpy(), rtol=1e-6)


def test_in_a_pass_manager_next_to_onnx_ir_passes() -> None:
    model = ir.load(TORCH / "ts_list_edits.onnx")
    manager = ir.passes.PassManager(
        [
            seqpasses.FoldSequencesPass(),
            common.RemoveUnusedNodesPass(),
            common.CommonSubexpressionEliminationPass(),
            common.TopologicalSortPass(),
        ],
        steps=3,
        early_stop=True,
    )
    result = manager(model)
    assert result.modified
    proto = ir.to_proto(result.model)
    onnx.checker.check_model(proto, full_check=True)
    assert sequence_op_count(proto) == 0
    for feeds, expected in stored_runs(TORCH / "ts_list_edits.onnx"):
        _assert_matches(_run(proto, feeds), expected, "pass manager")
    # a second run of the pass itself finds nothing left to do
    assert not seqpasses.FoldSequencesPass()(result.model).modified


@pytest.mark.parametrize("name", ["ts_rnn_cell", "ts_list_edits", "ts_loop_reads_list"])
def test_onnxscript_optimizer_after_seqpasses(name: str) -> None:
    optimizer = pytest.importorskip("onnxscript.optimizer")
    original = onnx.load(TORCH / f"{name}.onnx")
    ours = seqpasses.optimize(original)
    combined = optimizer.optimize(seqpasses.optimize(original))
    alone = optimizer.optimize(onnx.load(TORCH / f"{name}.onnx"))

    onnx.checker.check_model(combined, full_check=True)
    assert sequence_op_count(combined) == 0
    assert sum(op_counts(combined).values()) <= sum(op_counts(ours).values())
    assert sequence_op_count(alone) > 0  # onnxscript alone keeps these lists
    for feeds, expected in stored_runs(TORCH / f"{name}.onnx"):
        _assert_matches(_run(combined, feeds), expected, "seqpasses + onnxscript")

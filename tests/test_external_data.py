"""Models whose weights live in external data files, end to end through the CLI."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper

import seqpasses
from helpers import run_cli, sequence_op_count

MODEL = """<ir_version: 8, opset_import: ["" : 18]>
g (float[64,32] x) => (float[64,64] y) {
  s = SequenceConstruct(x, w)
  y = ConcatFromSequence<axis = 1>(s)
}"""


def _saved_with_external_data(folder: Path) -> Path:
    model = onnx.parser.parse_model(MODEL)
    weights = np.arange(64 * 32, dtype=np.float32).reshape(64, 32)
    model.graph.initializer.append(numpy_helper.from_array(weights, "w"))
    path = folder / "big.onnx"
    onnx.save(
        model,
        path,
        save_as_external_data=True,
        all_tensors_to_one_file=True,
        location="big.onnx.data",
        size_threshold=0,
    )
    return path


def test_external_data_in_and_out(tmp_path: Path) -> None:
    source = _saved_with_external_data(tmp_path)
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    result = run_cli("optimize", source, "-o", out_dir / "opt.onnx", "--check")
    assert result.returncode == 0, result.stderr
    # the weights stay external, beside the output, and the model still loads and computes
    assert (out_dir / "opt.onnx.data").stat().st_size == 64 * 32 * 4
    assert (out_dir / "opt.onnx").stat().st_size < 64 * 32 * 4
    optimized = onnx.load(out_dir / "opt.onnx")
    assert sequence_op_count(optimized) == 0
    assert seqpasses.verify(onnx.load(source), optimized).ok


def test_external_data_can_be_inlined_or_named(tmp_path: Path) -> None:
    source = _saved_with_external_data(tmp_path)
    out = tmp_path / "named.onnx"
    result = run_cli("optimize", source, "-o", out, "--external-data", "weights.bin")
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "weights.bin").exists()
    assert seqpasses.verify(onnx.load(source), onnx.load(out)).ok


def test_inline_model_written_with_external_data_on_request(tmp_path: Path) -> None:
    model = onnx.parser.parse_model(MODEL)
    model.graph.initializer.append(numpy_helper.from_array(np.ones((64, 32), np.float32), "w"))
    source = tmp_path / "inline.onnx"
    onnx.save(model, source)
    result = run_cli("optimize", source, "-o", tmp_path / "ext.onnx", "--external-data")
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "ext.onnx.data").exists()
    assert seqpasses.verify(model, onnx.load(tmp_path / "ext.onnx")).ok


def test_output_is_byte_identical_run_after_run(tmp_path: Path) -> None:
    source = Path(__file__).resolve().parent.parent / "sample_models" / "split_edit_cat.onnx"
    first, second = tmp_path / "a.onnx", tmp_path / "b.onnx"
    assert run_cli("optimize", source, "-o", first).returncode == 0
    assert run_cli("optimize", source, "-o", second).returncode == 0
    assert first.read_bytes() == second.read_bytes()

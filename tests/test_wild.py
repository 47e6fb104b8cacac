"""Models from the wild: lenient input, types onnx_ir cannot hold, real exports, input-shape
overrides, local functions, and one interface for every entry point.

The models are in sample_models/wild/ (scripts/make_foreign_models.py,
scripts/export_wild_models.py) and sample_models/local_function.onnx; each ``.npz`` holds
input sets and, where the outputs are tensors, the outputs of the original (ONNX Runtime's, or
PyTorch's for the exports).
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnx_ir as ir
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper

import seqpasses
from helpers import ROOT as REPO
from helpers import run_cli, sequence_op_count, stored_runs

WILD = REPO / "sample_models" / "wild"
LENIENT = ["lenient_no_output_shape", "lenient_old_ir_version"]
SKLEARN = ["sklearn_logreg", "sklearn_forest", "sklearn_scaler_logreg"]
EXPORTS = ["ts11_rdnet_mini", "ts17_res2net_mini", "ts17_vovnet_mini"]


def runs(name: str) -> tuple[list[dict[str, np.ndarray]], list[list[np.ndarray]]]:
    """The stored input sets of ``name`` and the original's outputs (empty when not tensors)."""
    pairs = stored_runs(WILD / f"{name}.onnx")
    if not pairs:  # outputs that are not tensors (ZipMap): input sets only
        return seqpasses.load_inputs(WILD / f"{name}.npz"), []
    return [feeds for feeds, _ in pairs], [outputs for _, outputs in pairs]


def run_ort(model: onnx.ModelProto | Path, feeds: dict[str, np.ndarray]) -> list[Any]:
    source = str(model) if isinstance(model, Path) else model.SerializeToString()
    session = ort.InferenceSession(source, providers=["CPUExecutionProvider"])
    return list(session.run(None, feeds))


def one_line_refusal(result: Any, text: str) -> None:
    assert result.returncode == 2, result.stdout + result.stderr
    assert len(result.stderr.splitlines()) == 1 and "Traceback" not in result.stderr
    assert text in result.stderr, result.stderr


# -- 1. lenient input -------------------------------------------------------------------------


@pytest.mark.parametrize("name", LENIENT)
def test_a_model_the_checker_rejects_but_ort_runs_is_optimized_with_one_warning(
    name: str, tmp_path: Path
) -> None:
    source, out = WILD / f"{name}.onnx", tmp_path / "out.onnx"
    with pytest.raises(onnx.checker.ValidationError):
        onnx.checker.check_model(onnx.load(source))
    result = run_cli("optimize", source, "-o", out, "--check")
    assert result.returncode == 0, result.stderr
    warning = [line for line in result.stderr.splitlines() if "warning" in line]
    assert len(warning) == 1 and "the ONNX checker says" in warning[0], result.stderr
    assert "outputs agree" in result.stdout
    optimized = onnx.load(out)
    assert sequence_op_count(optimized) == 0 < sequence_op_count(onnx.load(source))
    inputs, outputs = runs(name)
    for feeds, expected in zip(inputs, outputs, strict=True):
        np.testing.assert_allclose(run_ort(out, feeds)[0], expected[0], rtol=1e-6)


@pytest.mark.parametrize("name", LENIENT)
def test_strict_input_refuses_what_the_checker_rejects(name: str, tmp_path: Path) -> None:
    out = tmp_path / "out.onnx"
    result = run_cli("optimize", WILD / f"{name}.onnx", "-o", out, "--strict-input")
    one_line_refusal(result, "the model fails the ONNX checker")
    assert not out.exists()


def _neither_loads() -> onnx.ModelProto:
    node = helper.make_node("NoSuchOp", ["x"], ["y"])
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])
    graph = helper.make_graph([node], "g", [x], [helper.make_tensor_value_info("y", 1, [2])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_a_model_neither_the_checker_nor_ort_loads_is_refused(tmp_path: Path) -> None:
    source, out = tmp_path / "bad.onnx", tmp_path / "out.onnx"
    onnx.save(_neither_loads(), source)
    result = run_cli("optimize", source, "-o", out)
    one_line_refusal(result, "ONNX Runtime cannot load it either")
    assert not out.exists()


def test_the_api_takes_and_refuses_what_the_cli_does() -> None:
    lenient = onnx.load(WILD / "lenient_no_output_shape.onnx")
    report = seqpasses.Report()
    with pytest.warns(seqpasses.InputWarning, match="the ONNX checker says"):
        optimized = seqpasses.optimize(lenient, report=report)
    assert report.warnings and sequence_op_count(optimized) == 0
    with pytest.raises(seqpasses.BadInputError, match="fails the ONNX checker"):
        seqpasses.optimize(lenient, strict_input=True)
    with pytest.raises(seqpasses.BadInputError, match="ONNX Runtime cannot load it"):
        seqpasses.optimize(_neither_loads())
    with pytest.raises(seqpasses.BadInputError, match="ONNX Runtime cannot load it"):
        seqpasses.optimize(ir.serde.deserialize_model(_neither_loads()))


# -- 2. types onnx_ir cannot hold -------------------------------------------------------------


@pytest.mark.parametrize("name", SKLEARN)
def test_a_zipmap_model_is_written_unchanged_with_a_note(name: str, tmp_path: Path) -> None:
    source, out, report = WILD / f"{name}.onnx", tmp_path / "out.onnx", tmp_path / "r.json"
    result = run_cli("optimize", source, "-o", out, "--report", report)
    assert result.returncode == 0, result.stderr
    assert "written unchanged: onnx_ir cannot hold its sequence-of-map values" in result.stdout
    assert onnx.load(out) == onnx.load(source)
    data = json.loads(report.read_text())
    assert data["unchanged"] and data["changed"] is False
    inputs, _ = runs(name)
    for feeds in inputs:
        before, after = run_ort(source, feeds), run_ort(out, feeds)
        np.testing.assert_array_equal(before[0], after[0])  # the labels
        assert before[1] == after[1]  # the ZipMap: one {label: probability} per row


def test_the_api_hands_a_zipmap_model_back_unchanged() -> None:
    model = onnx.load(WILD / "sklearn_forest.onnx")
    report = seqpasses.Report()
    result = seqpasses.optimize(model, report=report)
    assert result == model and result is not model
    assert "onnx_ir cannot hold" in report.unchanged and not report.changed


def test_a_folder_summary_separates_optimized_unchanged_and_failed(tmp_path: Path) -> None:
    source, out = tmp_path / "in", tmp_path / "out"
    source.mkdir()
    for name in ("sklearn_logreg", "ts17_vovnet_mini", "silero_vad"):
        (source / f"{name}.onnx").write_bytes((WILD / f"{name}.onnx").read_bytes())
    (source / "broken.onnx").write_bytes(b"not a model")
    result = run_cli("optimize", source, "-o", out, "-v")
    assert result.returncode == 1  # the broken one
    # (silero_vad holds no sequence op: written as it was, its constant Ifs included)
    assert "4 models: 1 optimized, 2 unchanged, 1 failed" in result.stdout, result.stdout
    assert "silero_vad.onnx: sequence ops 0 -> 0" in result.stdout
    assert "written unchanged: it holds no sequence or optional op" in result.stdout
    assert "written unchanged: onnx_ir cannot hold" in result.stdout
    assert "rewrite " in result.stdout  # -v lists rewrites in folder mode too
    assert (out / "sklearn_logreg.onnx").exists() and not (out / "broken.onnx").exists()


# -- 4./5. real exports and models without sequence ops ----------------------------------------


@pytest.mark.parametrize("name", EXPORTS)
def test_real_exports_lose_every_sequence_op_and_keep_pytorchs_numbers(name: str) -> None:
    model = onnx.load(WILD / f"{name}.onnx")
    assert sequence_op_count(model) > 20
    optimized = seqpasses.optimize(model)
    onnx.checker.check_model(optimized, full_check=True)
    assert sequence_op_count(optimized) == 0
    inputs, outputs = runs(name)
    for feeds, expected in zip(inputs, outputs, strict=True):
        np.testing.assert_allclose(run_ort(optimized, feeds)[0], expected[0], atol=1e-4)
    assert seqpasses.verify(model, optimized, inputs=inputs[:1]).ok


def test_silero_vad_comes_out_equivalent_verified_and_no_bigger() -> None:
    model = onnx.load(WILD / "silero_vad.onnx")
    optimized = seqpasses.optimize(model)
    before, after = seqpasses.count_ops(model), seqpasses.count_ops(optimized)
    assert sum(after.values()) <= sum(before.values()) and after["If"] <= before["If"]
    inputs, outputs = runs("silero_vad")
    report = seqpasses.verify(model, optimized, inputs=inputs)
    assert report.verified and report.ok, report.mismatch
    for feeds, expected in zip(inputs, outputs, strict=True):
        for got, want in zip(run_ort(optimized, feeds), expected, strict=True):
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


# -- 6. what onnxsim users reach for ------------------------------------------------------------


def _unbind_over_batch() -> onnx.ModelProto:
    return onnx.parser.parse_model(
        """<ir_version: 8, opset_import: ["" : 18]>
        g (float[N, 3] x) => (float[N, 3] y) {
            rows = SplitToSequence<axis = 0, keepdims = 0>(x)
            first = SequenceAt(rows, zero)
            n = SequenceLength(rows)
            y = ConcatFromSequence<axis = 0, new_axis = 1>(rows)
            zero = Constant<value = int64 {0}>()
        }"""
    )


def test_input_shape_makes_a_list_static_and_says_what_it_enabled(tmp_path: Path) -> None:
    model = _unbind_over_batch()
    model.graph.node.insert(0, model.graph.node.pop())  # the Constant first
    source, out = tmp_path / "in.onnx", tmp_path / "out.onnx"
    onnx.save(model, source)
    result = run_cli("optimize", source, "-o", out, "--input-shape", "x:2,3", "--check")
    assert result.returncode == 0, result.stderr
    assert "input shape x: [N, 3] -> [2, 3]" in result.stdout
    assert "--input-shape let" in result.stdout and "more sequence op(s) go" in result.stdout
    optimized = onnx.load(out)
    assert sequence_op_count(optimized) == 0
    dims = [d.dim_value for d in optimized.graph.output[0].type.tensor_type.shape.dim]
    assert dims == [2, 3]  # the dim named N is fixed wherever the graph names it
    report = seqpasses.Report()
    api = seqpasses.optimize(model, input_shapes={"x": [2, 3]}, report=report)
    assert sequence_op_count(api) == 0 and any("input shape x" in n for n in report.notes)


@pytest.mark.parametrize(
    ("option", "text"),
    [
        ("y:2,3", "no graph input of that name"),
        ("x:2,3,4", "rank 3, but the model declares [N, 3]"),
        ("x:2,4", "dim 1 is 4, but the model declares [N, 3]"),
        ("x:2;3", "dims must be whole numbers"),
        ("2,3", "expected NAME:D1,D2"),
    ],
)
def test_bad_input_shapes_are_refused_in_one_line(option: str, text: str, tmp_path: Path) -> None:
    model = _unbind_over_batch()
    model.graph.node.insert(0, model.graph.node.pop())
    source, out = tmp_path / "in.onnx", tmp_path / "out.onnx"
    onnx.save(model, source)
    one_line_refusal(run_cli("optimize", source, "-o", out, "--input-shape", option), text)
    assert not out.exists()


def test_output_dash_is_refused_not_written_as_a_file(tmp_path: Path) -> None:
    source = REPO / "sample_models" / "unbind_stack.onnx"
    result = run_cli("optimize", source, "-o", "-")
    one_line_refusal(result, "-o /dev/stdout to write the model to standard output")
    assert not Path("-").exists()


def test_inline_functions_removes_local_functions_and_keeps_the_numbers(tmp_path: Path) -> None:
    source = REPO / "sample_models" / "local_function.onnx"
    kept, inlined = tmp_path / "kept.onnx", tmp_path / "inlined.onnx"
    assert run_cli("optimize", source, "-o", kept).returncode == 0
    result = run_cli("optimize", source, "-o", inlined, "--inline-functions", "--check")
    assert result.returncode == 0, result.stderr
    assert "inlined 1 model-local function(s)" in result.stdout
    assert len(onnx.load(kept).functions) == 1  # no sequence op in it: it stays by default
    out = onnx.load(inlined)
    assert not out.functions and sequence_op_count(out) == 0
    assert all(node.domain != "pkg.custom" for node in out.graph.node)
    assert seqpasses.verify(onnx.load(source), out).ok


# -- 7. one interface ---------------------------------------------------------------------------


def test_every_entry_point_takes_a_proto_an_ir_model_or_a_path(tmp_path: Path) -> None:
    path = REPO / "sample_models" / "unbind_stack.onnx"
    proto = onnx.load(path)
    for model in (proto, ir.serde.deserialize_model(proto), path, str(path)):
        assert seqpasses.count_sequence_ops(model) == 4
        assert seqpasses.count_ops(model)["SplitToSequence"] == 1
        assert seqpasses.infer_shapes(model) is not None
        assert seqpasses.verify(proto, model, runs=1).ok
    optimized = seqpasses.optimize(path, skip="stacked")  # a string is one group's name
    assert sequence_op_count(optimized) == 0


def test_optimize_of_a_path_with_external_data_can_be_saved_anywhere(tmp_path: Path) -> None:
    model = onnx.load(WILD / "ts17_vovnet_mini.onnx")
    source = tmp_path / "a" / "m.onnx"
    source.parent.mkdir()
    onnx.save(model, source, save_as_external_data=True, location="m.data", size_threshold=0)
    optimized = seqpasses.optimize(source)
    elsewhere = tmp_path / "b.onnx"
    onnx.save(optimized, elsewhere)
    (tmp_path / "a" / "m.data").unlink()  # the saved model does not need the input's data
    inputs, outputs = runs("ts17_vovnet_mini")
    np.testing.assert_allclose(run_ort(elsewhere, inputs[0])[0], outputs[0][0], atol=1e-4)


def test_conflicting_options_are_refused(tmp_path: Path) -> None:
    source, out = REPO / "sample_models" / "unbind_stack.onnx", tmp_path / "o.onnx"
    one_line_refusal(run_cli("optimize", source, "-o", out, "-q", "-v"), "contradict")
    one_line_refusal(run_cli("optimize", source, "-o", out, "--check-runs", "2"), "needs --check")
    assert not out.exists()


def test_inspect_names_nodes_by_their_names_even_when_repeated(tmp_path: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = run_cli("inspect", REPO / "sample_models" / "torch" / "ts_nested_loops.onnx")
    assert result.returncode == 0, result.stderr
    rows = result.stdout.splitlines()[1:]
    assert rows and not any(" '#" in row or row.split()[1].startswith("#") for row in rows if row)


def test_input_dash_points_at_dev_stdin(tmp_path: Path) -> None:
    result = run_cli("optimize", "-", "-o", tmp_path / "out.onnx")
    one_line_refusal(result, "(standard input is /dev/stdin)")

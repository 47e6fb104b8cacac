"""No byte is read from outside the model's folder: every external tensor, wherever it sits
(graph, subgraph, attribute, model-local function, called or not, any IR version), passes one
gate before anything is read; honest external data next to the model still works from any
working folder."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto as T
from onnx import helper as h

import hostile
import seqpasses
from helpers import run_cli

ESCAPES = [
    "function_absolute_ir7",
    "function_absolute_ir10_uncalled",
    "function_dotdot",
    "function_symlink",
    "initializer_absolute",
    "attribute_dotdot",
    "subgraph_symlink",
    "offset_past_the_file",
    "length_past_the_file",
]


def _refused(result: subprocess.CompletedProcess[str]) -> None:
    assert result.returncode == 2, result.stderr
    assert len(result.stderr.splitlines()) == 1, result.stderr
    assert "refused, nothing read" in result.stderr
    assert "'raw" in result.stderr  # the tensor is named


API_ENTRIES = {
    "optimize": seqpasses.optimize,
    "infer_shapes": seqpasses.infer_shapes,
    "shape_facts": seqpasses.shape_facts,
    "verify": lambda path: seqpasses.verify(path, path),
}


@pytest.mark.parametrize("entry", [*API_ENTRIES, "count_ops"])
def test_every_api_entry_reads_files_the_same_way(tmp_path: Path, entry: str) -> None:
    call = API_ENTRIES.get(entry, seqpasses.count_ops)
    garbage = tmp_path / "garbage.onnx"
    garbage.write_bytes(b"not a model at all")
    for path, text in (
        (tmp_path / "missing.onnx", "no such file"),
        (garbage, "not an ONNX model"),
        (tmp_path, "is a directory"),
    ):
        with pytest.raises(seqpasses.BadInputError, match=text):
            call(path)


@pytest.mark.parametrize("case", ESCAPES)
def test_external_data_outside_the_model_or_its_file_is_refused(tmp_path: Path, case: str) -> None:
    model = hostile.CASES[case](tmp_path)
    out = tmp_path / "out.onnx"
    _refused(run_cli("optimize", model, "-o", out))
    assert not out.exists()
    for name, entry in API_ENTRIES.items():  # one gate for every entry of the API
        with pytest.raises(seqpasses.BadInputError, match="refused, nothing read"):
            entry(model)
            pytest.fail(f"{name} read {case}")


def test_every_command_passes_the_same_gate(tmp_path: Path) -> None:
    model = hostile.function_symlink(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    _refused(run_cli("optimize", model, "-o", out / "o.onnx", "--check"))
    _refused(run_cli("inspect", model))
    _refused(run_cli("shapes", model))
    folder = run_cli("optimize", model.parent, "-o", out / "folder")
    assert folder.returncode == 1 and "refused, nothing read" in folder.stdout
    assert not list(out.rglob("*.onnx"))


def test_a_proto_with_external_data_and_no_folder_is_refused(tmp_path: Path) -> None:
    model = hostile.honest_function_data(tmp_path)
    proto = onnx.load(model, load_external_data=False)
    with pytest.raises(seqpasses.BadInputError, match="without the folder it was loaded from"):
        seqpasses.optimize(proto)


def _run(path: Path | onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    source = str(path) if isinstance(path, Path) else path.SerializeToString()
    session = ort.InferenceSession(source, providers=["CPUExecutionProvider"])
    (y,) = session.run(None, {"x": x})
    return np.asarray(y)


def test_a_function_with_honest_external_data_works_from_another_folder(tmp_path: Path) -> None:
    model = hostile.honest_function_data(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    out = tmp_path / "out"
    out.mkdir()
    result = subprocess.run(
        [sys.executable, "-m", "seqpasses", "optimize", str(model), "-o", str(out / "o.onnx")],
        capture_output=True,
        text=True,
        cwd=elsewhere,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "warning" not in result.stderr  # (the checker is not sent to the working folder)
    x = np.arange(4, dtype=np.uint8)
    expected = _run(model, x)
    assert _run(out / "o.onnx", x).tolist() == expected.tolist() == [*range(8), *range(4)]
    optimized = seqpasses.optimize(model)  # the API reads the data into the result
    assert seqpasses.count_sequence_ops(optimized) == 0
    assert _run(optimized, x).tolist() == expected.tolist()


def test_a_lenient_model_warning_lists_every_complaint(tmp_path: Path) -> None:
    # a graph output without a shape, and an uncalled function the checker rejects: ONNX
    # Runtime loads the model, and the warning names both complaints, not only the first
    broken = h.make_function(
        "local", "Bad", ["a"], ["b"], [h.make_node("Relu", ["a"], ["b"], bogus=1)],
        [h.make_opsetid("", 18)],
    )  # fmt: skip
    graph = h.make_graph(
        [
            h.make_node("SequenceConstruct", ["x", "x"], ["s"]),
            h.make_node("ConcatFromSequence", ["s"], ["y"], axis=0),
        ],
        "g",
        [h.make_tensor_value_info("x", T.FLOAT, [2])],
        [h.make_value_info("y", h.make_tensor_type_proto(T.FLOAT, None))],
    )
    graph.output[0].type.tensor_type.ClearField("shape")
    model = h.make_model(
        graph,
        opset_imports=[h.make_opsetid("", 18), h.make_opsetid("local", 1)],
        functions=[broken],
        ir_version=8,
    )
    path = tmp_path / "lenient.onnx"
    onnx.save(model, path)
    result = run_cli("optimize", path, "-o", tmp_path / "o.onnx")
    assert result.returncode == 0, result.stderr
    warning = result.stderr.strip()
    assert "(2 complaints)" in warning and "function local::Bad" in warning
    strict = run_cli("optimize", path, "-o", tmp_path / "s.onnx", "--strict-input")
    assert strict.returncode == 2 and "function local::Bad" in strict.stderr

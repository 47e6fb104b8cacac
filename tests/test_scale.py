"""Models of the size users ship: weights are bytes to carry, not to copy. A model file's large
inline weights are read where they lie (seqpasses.wire), written a weight at a time; --check
hands ONNX Runtime the weights on disk (it maps them) and onnx.reference only what the
rewrite changed; a model of more than 2 GB is verified by both evaluators."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

import seqpasses
from helpers import read_pty
from seqpasses.io import LAZY_FILE_BYTES, read_model
from seqpasses.verification.engines import Held, ort_session

_PEAK = r"""
import json, resource, subprocess, sys
process = subprocess.run(sys.argv[1:], capture_output=True, text=True)
print(json.dumps({"code": process.returncode, "out": process.stdout + process.stderr,
                  "peak": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024}))
"""


def _peak(*args: str | Path) -> tuple[int, str, int]:
    """Run the CLI in a process of its own: its exit code, what it printed, its peak RSS."""
    command = [sys.executable, "-m", "seqpasses", *map(str, args)]
    result = subprocess.run(
        [sys.executable, "-c", _PEAK, *command], capture_output=True, text=True, check=True
    )
    data = json.loads(result.stdout)
    return int(data["code"]), str(data["out"]), int(data["peak"])


def _gathering_model(tables: list[onnx.TensorProto], rows: int) -> onnx.ModelProto:
    """Each weight table read at two rows (a lookup: ONNX Runtime maps the table, reads two
    rows), then a list of the rows concatenated by a sequence chain."""
    nodes = []
    for k, table in enumerate(tables):
        nodes.append(helper.make_node("Gather", [table.name, "rows"], [f"r{k}"], axis=0))
    names = [f"r{k}" for k in range(len(tables))]
    nodes += [
        helper.make_node("SequenceConstruct", names, ["parts"]),
        helper.make_node("SequenceErase", ["parts", "last"], ["kept"]),
        helper.make_node("ConcatFromSequence", ["kept"], ["y"], axis=0),
        helper.make_node("SequenceLength", ["parts"], ["count"]),
    ]
    width = tables[0].dims[1]
    graph = helper.make_graph(
        nodes,
        "gathering",
        [helper.make_tensor_value_info("rows", TensorProto.INT64, [2])],
        [
            helper.make_tensor_value_info("y", TensorProto.FLOAT, [2 * (len(tables) - 1), width]),
            helper.make_tensor_value_info("count", TensorProto.INT64, []),
        ],
        [*tables, numpy_helper.from_array(np.array(-1, np.int64), "last")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.graph.input[0].type.tensor_type.shape.dim[0].dim_value = 2
    del rows
    return model


def _external_table(name: str, folder: Path, rows: int, width: int, offset: int) -> TensorProto:
    tensor = TensorProto(name=name, data_type=TensorProto.FLOAT, dims=[rows, width])
    tensor.data_location = TensorProto.EXTERNAL
    for key, value in (
        ("location", "tables.bin"),
        ("offset", str(offset)),
        ("length", str(rows * width * 4)),
    ):
        entry = tensor.external_data.add()
        entry.key, entry.value = key, value
    return tensor


def test_a_model_over_2_gb_with_external_data_is_checked_by_both_evaluators(tmp_path: Path) -> None:
    rows, width, count = 1 << 16, 1024, 9  # nine tables of 256 MiB: 2.25 GiB
    size = rows * width * 4
    folder = tmp_path / "model"
    folder.mkdir()
    with open(folder / "tables.bin", "wb") as data:  # (sparse: zeros, no disk written)
        data.truncate(size * count)
        for k in range(count):  # one row of each table set, to compare something
            data.seek(k * size + width * 4)
            data.write(np.full(width, k + 1, np.float32).tobytes())
    tables = [_external_table(f"t{k}", folder, rows, width, k * size) for k in range(count)]
    model = _gathering_model(tables, rows)
    source = folder / "model.onnx"
    onnx.save(model, source)
    np.savez(tmp_path / "inputs.npz", rows=np.array([1, 3], np.int64))
    out = tmp_path / "out" / "o.onnx"
    out.parent.mkdir()
    code, printed, peak = _peak(
        "optimize", source, "-o", out, "--check", "--check-inputs", tmp_path / "inputs.npz"
    )
    assert code == 0, printed
    assert "verified on onnx.reference (1 run(s)), onnxruntime (1 run(s))" in printed
    assert "sequence ops: 4 -> 0" in printed
    assert peak < size * count / 2, f"peak {peak / 2**20:.0f} MiB for 2.25 GiB of weights"
    # (weights carried, but the last table: its one read was erased from the list)
    assert (out.parent / "o.onnx.data").stat().st_size == size * (count - 1)
    session = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"])
    y, n = session.run(None, {"rows": np.array([1, 3], np.int64)})
    assert n == 9 and y.shape == (16, 1024)
    assert y[::2, 0].tolist() == [float(k + 1) for k in range(8)] and not y[1::2].any()


def _inline_model(tmp_path: Path) -> Path:
    tables = [
        numpy_helper.from_array(np.full((1024, 1024), k, np.float32), f"t{k}") for k in range(5)
    ]
    path = tmp_path / "inline.onnx"
    onnx.save(_gathering_model(tables, 1024), path)
    assert path.stat().st_size >= LAZY_FILE_BYTES
    return path


def test_inline_weights_are_read_where_they_lie_and_written_whole(tmp_path: Path) -> None:
    source = _inline_model(tmp_path)
    lazy, folder = read_model(source)
    assert folder == tmp_path
    locations = {
        t.name: {e.key: e.value for e in t.external_data}.get("location")
        for t in lazy.graph.initializer
    }
    assert locations == {f"t{k}": "inline.onnx" for k in range(5)} | {"last": None}
    assert lazy.ByteSize() < 4096  # (the weights' 20 MiB stay in the file)
    # ONNX Runtime reads them from the file itself
    session = ort_session(Held(lazy, folder))
    y, n = session.run(None, {"rows": np.array([0, 1], np.int64)})
    assert n == 5 and y[:, 0].tolist() == [0, 0, 1, 1, 2, 2, 3, 3]
    out = tmp_path / "out.onnx"
    code, printed, _ = _peak("optimize", source, "-o", out, "--check")
    assert code == 0 and "verified on onnx.reference" in printed, printed
    written = onnx.load(out)  # inline, as the input was, and what the API gives
    assert not any(t.data_location == TensorProto.EXTERNAL for t in written.graph.initializer)
    assert written == seqpasses.optimize(onnx.load(source))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["inline.onnx", "out.onnx"]


def test_an_unchanged_model_is_written_byte_for_byte(tmp_path: Path) -> None:
    source = _inline_model(tmp_path)
    out = tmp_path / "same.onnx"
    code, printed, _ = _peak("optimize", source, "-o", out, "--max-split", "2")
    assert code == 0 and "written unchanged" in printed, printed
    assert out.read_bytes() == source.read_bytes()


def test_a_model_protobuf_cannot_hand_over_is_said_so() -> None:
    big = onnx.ModelProto()
    big.graph.initializer.add().raw_data = b"\0" * (1 << 31)
    with pytest.raises(ValueError, match="2 GB or more in memory"):
        ort_session(Held(big))


def test_progress_shows_on_a_terminal_only(tmp_path: Path) -> None:
    import os
    import pty

    source = Path(__file__).resolve().parent.parent / "sample_models" / "unbind_stack.onnx"
    command = [sys.executable, "-m", "seqpasses", "optimize", str(source), "-o"]
    leader, follower = pty.openpty()
    process = subprocess.run(
        [*command, str(tmp_path / "a.onnx"), "--check"],
        stdout=subprocess.PIPE,
        stderr=follower,
        check=False,
        timeout=120,
    )
    os.close(follower)
    shown = read_pty(leader)
    assert process.returncode == 0
    for stage in (
        b"loading",
        b"rewriting sequence ops",
        b"self-check",
        b"--check: onnxruntime runs the original",
        b"--check: onnxruntime runs the optimized model",
        b"--check: onnx.reference runs",
        b"saving",
    ):
        assert b"seqpasses: " + stage in shown, shown
    assert shown.endswith(b"\r\x1b[K")  # (the line is cleared at the end)
    quiet = subprocess.run(
        [*command, str(tmp_path / "b.onnx"), "--check"], capture_output=True, check=False
    )
    assert quiet.returncode == 0 and quiet.stderr == b""  # (a pipe: no progress)

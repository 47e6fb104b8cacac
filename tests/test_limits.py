"""Limits checked before work is done: small hostile models finish in bounded memory with the
node left and its reason; folder mode never overwrites an input, stops a slow model and
survives a worker that dies; odd inputs get exit 2 with one line, or what the docs promise."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest

import hostile
import seqpasses
from helpers import SAMPLES, run_cli, sequence_op_count

BLOW_UPS = [
    "split_sizes_million",
    "split_sizes_million_in_branch",
    "unbind_million",
    "tile_position",
    "tile_position_in_branch",
    "range_split_sizes",
    "nested_loops",
    "wide_construct",
    "huge_dims",
    "large_dim_split",
    "split_outputs_million",
]


@pytest.mark.parametrize("case", BLOW_UPS)
def test_a_small_hostile_model_stays_within_a_gigabyte(case: str) -> None:
    # (the seconds are printed by `python tests/hostile.py`, not asserted: speed is measured
    # in benchmarks; the bound here is memory, and the run must end at all)
    code, _, peak = hostile.measure(case, timeout=120)
    assert code == "0", code
    assert peak < 1024, f"{case}: peak {peak:.0f} MiB"


def _left_kinds(path: Path) -> tuple[onnx.ModelProto, set[str]]:
    report = seqpasses.Report()
    optimized = seqpasses.optimize(path, report=report)
    onnx.checker.check_model(optimized, full_check=True)
    return optimized, {left.kind for left in report.left}


def test_a_split_past_max_split_is_left_with_its_reason(tmp_path: Path) -> None:
    optimized, kinds = _left_kinds(hostile.split_sizes_million(tmp_path))
    assert "limit" in kinds
    assert all(len(node.output) <= 4096 for node in optimized.graph.node)


def test_an_unbind_past_max_split_is_read_without_a_split(tmp_path: Path) -> None:
    optimized, _ = _left_kinds(hostile.unbind_million(tmp_path))
    ops = {node.op_type for node in optimized.graph.node}
    assert "Split" not in ops and seqpasses.count_sequence_ops(optimized) == 0
    x = np.arange(10**6, dtype=np.float32)
    session = ort.InferenceSession(
        optimized.SerializeToString(), providers=["CPUExecutionProvider"]
    )
    assert np.array_equal(session.run(None, {"x": x})[0], x)


def test_constants_too_big_to_fold_are_not_folded(tmp_path: Path) -> None:
    # Tile([0], [6e8]) is never evaluated: the read stays at a run-time position
    optimized, _ = _left_kinds(hostile.tile_position(tmp_path))
    assert {"Tile", "Gather"} <= {node.op_type for node in optimized.graph.node}
    optimized, _ = _left_kinds(hostile.range_split_sizes(tmp_path / "range"))
    assert "Range" in {node.op_type for node in optimized.graph.node}


def test_nested_loops_share_one_node_budget(tmp_path: Path) -> None:
    path = hostile.nested_loops(tmp_path)
    before = seqpasses.count_ops(path).total()
    report = seqpasses.Report()
    optimized = seqpasses.optimize(path, report=report, node_budget=2000)
    assert seqpasses.count_ops(optimized).total() <= before + 2000
    assert any("node budget" in left.detail for left in report.left), report.left
    # a budget that fits unrolls them all: the list is gone
    small = hostile.nested_loops(tmp_path / "small", depth=2, trips=3)
    assert sequence_op_count(seqpasses.optimize(small)) == 0


def test_a_node_wider_than_max_split_leaves_the_model_as_it_was(tmp_path: Path) -> None:
    # the bound holds before anything proportional to the node's outputs is built: no
    # checker, no onnx_ir model, no shape inference, no self-check, no verification
    code, _, peak = hostile.measure("split_outputs_million", 120, extra=("--check",))
    assert code == "0" and peak < 1024, (code, peak)
    path = hostile.split_outputs_million(tmp_path, count=5000)
    report = seqpasses.Report()
    optimized = seqpasses.optimize(path, report=report)
    assert optimized == onnx.load(path)
    assert "more than --max-split 4096" in report.unchanged
    assert [(left.op_type, left.kind) for left in report.left] == [
        ("SequenceConstruct", "limit"),
        ("ConcatFromSequence", "limit"),
    ]
    assert sequence_op_count(seqpasses.optimize(path, max_split=5000)) == 0


def test_declared_input_shapes_are_claims_not_facts(tmp_path: Path) -> None:
    # a negative dim is free; a declared shape too large to draw is not drawn: --check says
    # why it compared nothing (exit 4), never an internal error
    negative = run_cli(
        "optimize", hostile.negative_dim(tmp_path), "-o", tmp_path / "n.onnx", "--check"
    )
    assert negative.returncode == 0, negative.stderr
    assert "verified on onnx.reference (3 run(s)), onnxruntime (3 run(s))" in negative.stdout
    huge = run_cli(
        "optimize", hostile.declared_huge_input(tmp_path), "-o", tmp_path / "h.onnx", "--check"
    )
    assert huge.returncode == 4, huge.stderr
    assert "ask for more than 1 GiB per input set" in huge.stdout
    assert (tmp_path / "h.onnx").exists()


def test_dims_past_int64_are_facts_not_arrays(tmp_path: Path) -> None:
    optimized, kinds = _left_kinds(hostile.huge_dims(tmp_path))
    assert "limit" in kinds
    assert "ConcatFromSequence" in {node.op_type for node in optimized.graph.node}


def test_a_negative_declared_dim_is_unknown(tmp_path: Path) -> None:
    path = hostile.negative_dim(tmp_path)
    out = tmp_path / "o.onnx"
    assert run_cli("optimize", path, "-o", out).returncode == 0

    def outcome(model: Path, n: int) -> list[float] | str:
        session = ort.InferenceSession(str(model), providers=["CPUExecutionProvider"])
        try:
            return [float(v) for v in session.run(None, {"x": np.arange(n, dtype=np.float32)})[0]]
        except Exception:
            return "fails"  # (no chunk at all: the concatenation of an empty list fails)

    for n in (0, 3, 5):
        assert outcome(out, n) == outcome(path, n)
    assert outcome(out, 3) == [0.0, 1.0, 2.0]


def test_an_opset_newer_than_onnx_knows_is_written_unchanged(tmp_path: Path) -> None:
    path = hostile.opset_99(tmp_path)
    out = tmp_path / "o.onnx"
    result = run_cli("optimize", path, "-o", out)
    assert result.returncode == 0, result.stderr
    assert "written unchanged" in result.stdout and "opset 99 is newer" in result.stdout
    assert onnx.load(out) == onnx.load(path)
    inspected = run_cli("inspect", path)
    assert inspected.returncode == 0 and "2 sequence ops: all left" in inspected.stdout


# -- folder mode ---------------------------------------------------------------------------


def _folder(root: Path) -> Path:
    (root / "m" / "m").mkdir(parents=True)
    for target in (root / "m" / "a.onnx", root / "m" / "m" / "a.onnx"):
        target.write_bytes((SAMPLES / "unbind_stack.onnx").read_bytes())
    return root / "m"


@pytest.mark.parametrize("output", ["same", "inside", "holding"])
def test_folder_mode_refuses_any_overlap_of_input_and_output(tmp_path: Path, output: str) -> None:
    source = _folder(tmp_path)
    target = {"same": source, "inside": source / "out", "holding": tmp_path}[output]
    given = {p: p.read_bytes() for p in source.rglob("*.onnx")}
    result = run_cli("optimize", source / "m" if output == "holding" else source, "-o", target)
    assert result.returncode == 2 and len(result.stderr.splitlines()) == 1, result.stderr
    assert {p: p.read_bytes() for p in source.rglob("*.onnx")} == given


def test_folder_mode_into_a_folder_it_cannot_make_is_exit_2(tmp_path: Path) -> None:
    source = _folder(tmp_path)
    (tmp_path / "file").write_text("not a folder")
    result = run_cli("optimize", source, "-o", tmp_path / "file" / "out")
    assert result.returncode == 2, result.stderr
    assert len(result.stderr.splitlines()) == 1 and "Traceback" not in result.stderr


def _slow_folder(root: Path) -> Path:
    folder = root / "models"
    folder.mkdir()
    (folder / "good.onnx").write_bytes((SAMPLES / "unbind_stack.onnx").read_bytes())
    hostile.nested_loops(folder / "slow")  # with a large --node-budget: many seconds
    return folder


def test_folder_mode_stops_a_model_past_its_timeout(tmp_path: Path) -> None:
    source = _slow_folder(tmp_path)
    args = ["optimize", source, "-o", tmp_path / "out", "--node-budget", "100000000"]
    result = run_cli(*args, "--timeout", "3", "-j", "2")
    assert result.returncode == 1, result.stderr
    assert "2 models: 1 optimized, 0 unchanged, 1 failed" in result.stdout
    assert "failed: slow/model.onnx: stopped after 3 s (--timeout)" in result.stdout
    assert (tmp_path / "out" / "good.onnx").exists()


def _children(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*/children"):
        found.extend(int(p) for p in task.read_text().split())
    return found


@pytest.mark.skipif(not Path("/proc/self/task").exists(), reason="needs Linux /proc")
def test_folder_mode_survives_a_worker_that_dies(tmp_path: Path) -> None:
    source = _slow_folder(tmp_path)
    command = [sys.executable, "-m", "seqpasses", "optimize", str(source)]
    command += ["-o", str(tmp_path / "out"), "--node-budget", "100000000", "-j", "1"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    killed = False
    first: int | None = None  # the good model's worker (-j 1: it runs alone, first)
    deadline = time.monotonic() + 60
    while not killed and time.monotonic() < deadline and process.poll() is None:
        time.sleep(0.05)
        for child in _children(process.pid):
            if first is None:
                first = child
            elif child != first:  # the worker of the slow model (the second)
                os.kill(child, signal.SIGKILL)  # as the out-of-memory killer would
                killed = True
    out, err = process.communicate(timeout=60)
    assert killed, (out, err)
    assert process.returncode == 1, err
    assert "2 models: 1 optimized, 0 unchanged, 1 failed" in out
    assert "slow/model.onnx: its worker process died of SIGKILL" in out


# -- options and files that make no sense ----------------------------------------------------


def test_inspect_with_an_unknown_pass_is_exit_2() -> None:
    result = run_cli("inspect", SAMPLES / "unbind_stack.onnx", "--skip", "nosuchpass")
    assert result.returncode == 2 and "unknown pass nosuchpass" in result.stderr
    assert len(result.stderr.splitlines()) == 1


def test_check_inputs_are_checked_against_the_graph_inputs(tmp_path: Path) -> None:
    model = SAMPLES / "unbind_stack.onnx"
    x = onnx.load(model).graph.input[0]
    shape = [d.dim_value or 2 for d in x.type.tensor_type.shape.dim]
    not_npz = tmp_path / "inputs.npz"
    not_npz.write_text("not an npz")
    wrong_name, wrong_dtype = tmp_path / "name.npz", tmp_path / "dtype.npz"
    np.savez(wrong_name, y=np.zeros(shape, np.float32))
    np.savez(wrong_dtype, **{x.name: np.zeros(shape, np.int64)})
    for inputs, said in (
        (not_npz, "not an .npz"),
        (wrong_name, "names no graph input"),
        (wrong_dtype, "is int64, the input is float32"),
    ):
        out = tmp_path / "o.onnx"
        result = run_cli("optimize", model, "-o", out, "--check", "--check-inputs", inputs)
        assert result.returncode == 2, result.stderr
        assert said in result.stderr and len(result.stderr.splitlines()) == 1, result.stderr
        assert not out.exists()

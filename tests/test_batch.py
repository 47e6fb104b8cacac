"""``seqpasses optimize DIR -o OUTDIR``: layout, external data, jobs, progress, failures."""

from __future__ import annotations

import json
import os
import pty
import shutil
import subprocess
import sys
from pathlib import Path

import onnx

import seqpasses
from helpers import SAMPLES, read_pty, run_cli, sequence_op_count
from test_external_data import _saved_with_external_data


def _tree(root: Path) -> Path:
    """A folder of models: nested, one with external data, one broken."""
    source = root / "models"
    (source / "nested" / "deeper").mkdir(parents=True)
    shutil.copy(SAMPLES / "unbind_stack.onnx", source / "unbind_stack.onnx")
    shutil.copy(SAMPLES / "split_edit_cat.onnx", source / "nested" / "split_edit_cat.onnx")
    shutil.copy(SAMPLES / "torch" / "ts_rnn_cell.onnx", source / "nested" / "deeper" / "rnn.onnx")
    _saved_with_external_data(source / "nested")
    (source / "nested" / "broken.onnx").write_bytes(b"not a model")
    (source / "notes.txt").write_text("not a model, not an .onnx file: ignored\n")
    return source


GOOD = [
    "nested/big.onnx",
    "nested/deeper/rnn.onnx",
    "nested/split_edit_cat.onnx",
    "unbind_stack.onnx",
]


def test_folder_keeps_layout_and_external_data_and_reports_failures(tmp_path: Path) -> None:
    source = _tree(tmp_path)
    out, report = tmp_path / "out", tmp_path / "batch.json"
    result = run_cli("optimize", source, "-o", out, "--check", "--report", report)

    assert result.returncode == 1  # one model failed ...
    for relative in GOOD:  # ... and every other one was still written
        model = onnx.load(out / relative)
        onnx.checker.check_model(model, full_check=True)
        assert sequence_op_count(model) == 0
        assert seqpasses.verify(onnx.load(source / relative), model).ok
    assert (out / "nested" / "big.onnx.data").stat().st_size == 64 * 32 * 4
    assert not (out / "nested" / "broken.onnx").exists()
    assert not (out / "notes.txt").exists()
    assert "5 models: 4 optimized, 0 unchanged, 1 failed" in result.stdout
    assert "failed: nested/broken.onnx: " in result.stdout
    assert "not an ONNX model" in result.stderr and "Traceback" not in result.stderr
    data = json.loads(report.read_text())
    by_path = {m["path"]: m for m in data["models"]}
    assert sorted(by_path) == sorted([*GOOD, "nested/broken.onnx"])
    assert by_path["nested/broken.onnx"]["ok"] is False
    assert by_path["nested/deeper/rnn.onnx"]["sequence_ops_before"] == 3
    assert by_path["nested/deeper/rnn.onnx"]["sequence_ops_after"] == 0
    totals = data["totals"]
    assert (totals["models"], totals["written"], totals["failed"]) == (5, 4, 1)
    assert totals["sequence_ops_before"] > totals["sequence_ops_after"]


def test_parallel_jobs_write_the_same_bytes(tmp_path: Path) -> None:
    source = _tree(tmp_path)
    (source / "nested" / "broken.onnx").unlink()
    one = run_cli("optimize", source, "-o", tmp_path / "one", "-q")
    two = run_cli("optimize", source, "-o", tmp_path / "two", "--jobs", "2", "-q")
    assert one.returncode == 0 and two.returncode == 0, one.stderr + two.stderr
    assert one.stdout == "" and two.stdout == ""  # -q: nothing on success
    for relative in GOOD:
        assert (tmp_path / "one" / relative).read_bytes() == (
            tmp_path / "two" / relative
        ).read_bytes()


def test_plain_lines_off_a_terminal_and_a_bar_on_one(tmp_path: Path) -> None:
    source = _tree(tmp_path)
    plain = run_cli("optimize", source, "-o", tmp_path / "plain")
    assert "[1/5]" in plain.stdout and "\r" not in plain.stdout + plain.stderr
    assert "ok   unbind_stack.onnx: sequence ops 4 -> 0" in plain.stdout

    shutil.copy(SAMPLES / "wild" / "lenient_no_output_shape.onnx", source / "lenient.onnx")
    leader, follower = pty.openpty()  # a real terminal for stderr
    command = [
        sys.executable,
        "-m",
        "seqpasses",
        "optimize",
        str(source),
        "-o",
        str(tmp_path / "tty"),
    ]
    process = subprocess.run(
        command, stdout=subprocess.PIPE, stderr=follower, timeout=120, check=False
    )
    os.close(follower)
    bar = read_pty(leader).decode()
    assert process.returncode == 1
    assert "\r[" in bar and "6/6" in bar
    assert "FAIL nested/broken.onnx" in bar
    assert b"[1/5]" not in process.stdout  # the bar replaces the per-model lines
    # (and what those lines would have noted is listed after the summary)
    assert b"note: lenient.onnx: " in process.stdout and b"the ONNX checker says" in process.stdout


def test_folder_errors_are_one_line(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    result = run_cli("optimize", empty, "-o", tmp_path / "out")
    assert result.returncode == 2
    assert result.stderr.strip() == f"seqpasses: error: {empty}: no .onnx files under this folder"
    source = _tree(tmp_path)
    inside = run_cli("optimize", source, "-o", source / "out")
    assert inside.returncode == 2 and "must not be inside the input folder" in inside.stderr
    jobs = run_cli("optimize", source, "-o", tmp_path / "o", "--jobs", "0")
    assert jobs.returncode == 2 and "--jobs must be at least 1" in jobs.stderr
    # one rule with a single model's run: the folder holding what -o names must exist
    deep = run_cli("optimize", source, "-o", tmp_path / "no" / "such" / "out")
    assert deep.returncode == 2 and not (tmp_path / "no").exists()
    assert f"{tmp_path / 'no' / 'such'}: output folder does not exist" in deep.stderr
    one = run_cli("optimize", source / "unbind_stack.onnx", "-o", tmp_path / "no" / "m.onnx")
    assert one.returncode == 2 and f"{tmp_path / 'no'}: output folder does not exist" in one.stderr


def test_folder_mode_names_each_model_it_could_not_verify(tmp_path: Path) -> None:
    from test_files_and_checks import CUSTOM  # an op no evaluator knows: nothing to compare

    source = tmp_path / "models"
    source.mkdir()
    onnx.save(CUSTOM, source / "custom.onnx")
    shutil.copy(SAMPLES / "unbind_stack.onnx", source / "fine.onnx")
    result = run_cli("optimize", source, "-o", tmp_path / "out", "--check")
    assert result.returncode == 4, result.stderr
    assert "1 not verified" in result.stdout
    line = next(li for li in result.stdout.splitlines() if li.startswith("  not verified:"))
    assert line.startswith("  not verified: custom.onnx: onnx.reference could not load")


def test_folder_mode_counts_and_names_the_models_it_did_not_check(tmp_path: Path) -> None:
    # models written unchanged are not compared: the summary, their lines and the JSON say so
    source = tmp_path / "in"
    source.mkdir()
    shutil.copy(SAMPLES / "unbind_stack.onnx", source / "a.onnx")
    for name in ("sklearn_logreg", "silero_vad"):
        shutil.copy(SAMPLES / "wild" / f"{name}.onnx", source / f"{name}.onnx")
    report = tmp_path / "report.json"
    result = run_cli("optimize", source, "-o", tmp_path / "out", "--check", "--report", report)
    assert result.returncode == 0, result.stdout + result.stderr
    assert (
        "3 models: 1 optimized, 2 unchanged, 0 failed, 1 verified, 2 not checked (written unchanged)"
        in (result.stdout)
    )
    assert (
        "  not checked: silero_vad.onnx: written unchanged: it holds no sequence or optional op"
        in (result.stdout)
    )
    assert "sklearn_logreg.onnx: sequence ops 0 -> 0 (" in result.stdout
    assert ", not checked)" in result.stdout
    totals = json.loads(report.read_text())["totals"]
    assert totals["not_checked"] == 2 and totals["not_verified"] == 0 and totals["verified"] == 1
    assert totals["not_checked_models"] == ["silero_vad.onnx", "sklearn_logreg.onnx"]

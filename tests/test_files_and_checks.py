"""Never lose a user's file, never claim a check that did not happen.

Every path the CLI writes is checked before anything is written; --check says exactly what each
evaluator compared; user mistakes are one line and exit 2.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest

import seqpasses
from helpers import SAMPLES, run_cli, sequence_op_count
from seqpasses.verification import load_inputs
from test_external_data import _saved_with_external_data

SAMPLE = SAMPLES / "unbind_stack.onnx"
WILD = SAMPLES / "wild"


def _copy(tmp_path: Path, source: Path = SAMPLE, name: str = "in.onnx") -> tuple[Path, bytes]:
    path = tmp_path / name
    path.write_bytes(source.read_bytes())
    return path, path.read_bytes()


def _refused(result: subprocess.CompletedProcess[str], text: str) -> None:
    assert result.returncode == 2, result.stdout + result.stderr
    assert len(result.stderr.splitlines()) == 1 and "Traceback" not in result.stderr
    assert text in result.stderr, result.stderr


# -- no file but -o (and its external data) is written -----------------------------------------


def test_external_data_named_as_the_input_is_refused(tmp_path: Path) -> None:
    source, given = _copy(tmp_path)
    out = tmp_path / "out.onnx"
    _refused(
        run_cli("optimize", source, "-o", out, "--external-data", "in.onnx"),
        "the external data would overwrite a model",
    )
    assert source.read_bytes() == given and not out.exists()


def test_external_data_named_as_another_model_is_refused(tmp_path: Path) -> None:
    source, _ = _copy(tmp_path)
    other, kept = _copy(tmp_path, SAMPLES / "split_edit_cat.onnx", "other.onnx")
    out = tmp_path / "out.onnx"
    _refused(
        run_cli("optimize", source, "-o", out, "--external-data", "other.onnx"),
        "exists and is not the external data of out.onnx",
    )
    assert other.read_bytes() == kept and not out.exists()


def test_external_data_of_our_own_earlier_output_is_rewritten(tmp_path: Path) -> None:
    source = _saved_with_external_data(tmp_path)
    (tmp_path / "out").mkdir()
    out = tmp_path / "out" / "big.onnx"
    for _ in range(2):  # the second run replaces what the first one wrote
        result = run_cli("optimize", source, "-o", out, "--external-data", "weights.bin")
        assert result.returncode == 0, result.stderr
    assert (tmp_path / "out" / "weights.bin").stat().st_size == 64 * 32 * 4


def test_external_data_cannot_be_the_inputs_own(tmp_path: Path) -> None:
    source = _saved_with_external_data(tmp_path)
    data = tmp_path / "big.onnx.data"
    kept = data.read_bytes()
    out = tmp_path / "out.onnx"
    _refused(
        run_cli("optimize", source, "-o", out, "--external-data", "big.onnx.data"),
        "would overwrite the input's own external data",
    )
    _refused(run_cli("optimize", source, "-o", data), "refusing to overwrite the input's external")
    assert data.read_bytes() == kept and not out.exists()


@pytest.mark.parametrize("target", ["in.onnx", "out.onnx"])
def test_report_onto_a_model_is_refused(tmp_path: Path, target: str) -> None:
    source, given = _copy(tmp_path)
    out = tmp_path / "out.onnx"
    _refused(
        run_cli("optimize", source, "-o", out, "--report", tmp_path / target),
        "the report would overwrite",
    )
    assert source.read_bytes() == given and not out.exists()


def test_report_onto_a_file_that_is_not_a_report_is_refused(tmp_path: Path) -> None:
    source, _ = _copy(tmp_path)
    notes = tmp_path / "notes.txt"
    notes.write_text("mine\n")
    out = tmp_path / "out.onnx"
    _refused(
        run_cli("optimize", source, "-o", out, "--report", notes),
        "exists and is not a JSON report",
    )
    assert notes.read_text() == "mine\n" and not out.exists()
    earlier = tmp_path / "earlier.json"
    earlier.write_text("{}\n")  # an earlier report is ours to replace
    assert run_cli("optimize", source, "-o", out, "--report", earlier).returncode == 0
    assert json.loads(earlier.read_text())["sequence_ops_after"] == 0


# -- user mistakes are exit 2, with nothing half-written ------------------------------------


def test_report_into_a_missing_folder_writes_nothing(tmp_path: Path) -> None:
    source, _ = _copy(tmp_path)
    out = tmp_path / "out.onnx"
    _refused(
        run_cli("optimize", source, "-o", out, "--report", tmp_path / "no" / "r.json"),
        "report folder does not exist",
    )
    assert not out.exists()


def test_a_file_used_as_a_folder_is_exit_2(tmp_path: Path) -> None:
    source, _ = _copy(tmp_path)
    _refused(
        run_cli("optimize", source, "-o", tmp_path / "in.onnx" / "out.onnx"),
        "output folder is a file, not a folder",
    )
    _refused(
        run_cli("optimize", source, "-o", tmp_path / "out.onnx", "--report", source / "r.json"),
        "report folder is a file, not a folder",
    )


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_an_unwritable_output_folder_is_exit_2(tmp_path: Path) -> None:
    source, _ = _copy(tmp_path)
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(stat.S_IRUSR | stat.S_IXUSR)
    try:
        _refused(run_cli("optimize", source, "-o", locked / "out.onnx"), "is not writable")
    finally:
        locked.chmod(stat.S_IRWXU)


def test_written_files_follow_the_umask(tmp_path: Path) -> None:
    source, _ = _copy(tmp_path)
    for mask, mode in ((0o022, 0o644), (0o002, 0o664), (0o077, 0o600)):
        out = tmp_path / f"out{mask:o}.onnx"
        report = tmp_path / f"r{mask:o}.json"
        code = (
            f"import os, sys; os.umask({mask}); from seqpasses.cli import main; "
            f"sys.exit(main(['optimize', {str(source)!r}, '-o', {str(out)!r}, "
            f"'--report', {str(report)!r}, '-q']))"
        )
        result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
        assert result.returncode == 0, result.stderr
        assert stat.S_IMODE(out.stat().st_mode) == mode
        assert stat.S_IMODE(report.stat().st_mode) == mode
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]  # no leftovers


# -- honest verification -----------------------------------------------------------------


CUSTOM = onnx.parser.parse_model("""<ir_version: 8, opset_import: ["" : 18, "custom.domain" : 1]>
g (float[2] a, float[2] b) => (float[2] y, float[4] z) {
  s = SequenceConstruct(a, b)
  y = custom.domain.Mystery(a)
  z = ConcatFromSequence<axis = 0>(s)
}""")


def test_a_model_no_evaluator_can_run_is_not_verified_and_exit_4(tmp_path: Path) -> None:
    source = tmp_path / "custom.onnx"
    onnx.save(CUSTOM, source)
    out, report = tmp_path / "out.onnx", tmp_path / "r.json"
    result = run_cli("optimize", source, "-o", out, "--check", "--report", report)
    assert result.returncode == 4, result.stderr
    line = next(li for li in result.stdout.splitlines() if "verified" in li)
    assert line.startswith("not verified: onnx.reference could not load the original")
    assert "onnxruntime could not load the original" in line
    assert out.exists() and sequence_op_count(onnx.load(out)) == 0
    check = json.loads(report.read_text())["check"]
    assert check["status"] == "not verified" and check["ok"] is False
    assert [e["compared"] for e in check["engines"]] == [0, 0]


def test_both_failing_is_never_agreement() -> None:
    report = seqpasses.verify(CUSTOM, seqpasses.optimize(CUSTOM))
    assert not report.ok and not report.verified and report.engines == []
    assert str(report).startswith("not verified: ")


def test_a_partial_check_names_the_evaluator_left_out(tmp_path: Path) -> None:
    model = onnx.parser.parse_model("""<ir_version: 8, opset_import: ["" : 18]>
    g (double[2,3] a, double[2,3] b) => (double[4,3] y) {
      s = SequenceConstruct(a, b)
      c = ConcatFromSequence<axis = 0>(s)
      y = Hardmax(c)
    }""")  # ONNX Runtime has no double Hardmax; the reference evaluator has
    source = tmp_path / "hardmax.onnx"
    onnx.save(model, source)
    result = run_cli("optimize", source, "-o", tmp_path / "out.onnx", "--check")
    assert result.returncode == 0, result.stderr
    line = next(li for li in result.stdout.splitlines() if li.startswith("verified"))
    assert line.startswith("verified on onnx.reference (3 run(s)): outputs agree; not compared: ")
    assert "onnxruntime could not load the original (" in line


def test_without_onnxruntime_the_check_says_so(tmp_path: Path) -> None:
    out = tmp_path / "out.onnx"
    code = (
        "import sys; sys.modules['onnxruntime'] = None; from seqpasses.cli import main; "
        f"sys.exit(main(['optimize', {str(SAMPLE)!r}, '-o', {str(out)!r}, '--check']))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert "; not compared: onnxruntime ONNX Runtime is not installed" in result.stdout


def test_external_weights_are_verified_on_both_evaluators(tmp_path: Path) -> None:
    source = _saved_with_external_data(tmp_path)
    (tmp_path / "out").mkdir()
    result = run_cli("optimize", source, "-o", tmp_path / "out" / "big.onnx", "--check")
    assert result.returncode == 0, result.stderr
    assert "verified on onnx.reference (3 run(s)), onnxruntime (3 run(s)): outputs agree" in (
        result.stdout
    )


def test_a_conv_net_whose_fusions_move_the_floats_passes(tmp_path: Path) -> None:
    # timm's RDNet (a narrow configuration): with ONNX Runtime's fusions on, its float32
    # logits move by ~1.5e-6 between the original and the lowered graph; with them off the two
    # are bit-identical. The rewrite is what is checked, so the check passes.
    source = WILD / "ts11_rdnet_mini.onnx"
    out = tmp_path / "out.onnx"
    result = run_cli("optimize", source, "-o", out, "--check")
    assert result.returncode == 0, result.stderr
    assert "outputs agree" in result.stdout and sequence_op_count(onnx.load(out)) == 0


def test_inputs_the_original_fails_on_are_drawn_again(tmp_path: Path) -> None:
    # a loop whose trip count is an input: random draws of zero iterations make the original's
    # ConcatFromSequence fail (the documented difference), so they are not comparisons
    source = SAMPLES / "torch" / "ts_append_data_dependent.onnx"
    result = run_cli("optimize", source, "-o", tmp_path / "out.onnx", "--check")
    assert result.returncode == 0, result.stderr
    assert "onnx.reference (3 run(s)), onnxruntime (3 run(s)): outputs agree" in result.stdout
    assert (
        "  check: part of the verdict: 2 input set(s) drawn first were set aside, the original itself fails on them"
        in result.stdout
    )


def test_check_inputs_from_an_npz(tmp_path: Path) -> None:
    source = SAMPLES / "torch" / "ts_append_data_dependent.onnx"
    inputs = source.with_suffix(".npz")  # run0..run2 inputs, as exported with PyTorch
    out, report = tmp_path / "out.onnx", tmp_path / "r.json"
    result = run_cli(
        "optimize", source, "-o", out, "--check", "--check-inputs", inputs, "--report", report
    )
    assert result.returncode == 0, result.stderr
    engines = json.loads(report.read_text())["check"]["engines"]
    assert [(e["engine"], e["compared"]) for e in engines] == [
        ("onnx.reference", 3),
        ("onnxruntime", 3),
    ]
    loaded = load_inputs(inputs)
    assert [sorted(s) for s in loaded] == [["steps", "x"]] * 3
    assert int(loaded[1]["steps"]) == 1  # the stored runs, in order


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--check-runs", "2"], "--check-runs needs --check"),
        (["--check-inputs", "x.npz"], "--check-inputs needs --check"),
        (["--check", "--check-inputs", "missing.npz"], "no such file (--check-inputs)"),
        (["-q", "-v"], "-q and -v contradict each other"),
    ],
)
def test_options_that_make_no_sense_are_refused(
    tmp_path: Path, args: list[str], message: str
) -> None:
    _refused(run_cli("optimize", SAMPLE, "-o", tmp_path / "out.onnx", *args), message)
    assert not (tmp_path / "out.onnx").exists()


def test_check_time_is_reported_apart_from_the_passes(tmp_path: Path) -> None:
    report = tmp_path / "r.json"
    result = run_cli("optimize", SAMPLE, "-o", tmp_path / "o.onnx", "--check", "--report", report)
    assert result.returncode == 0
    data = json.loads(report.read_text())
    assert {"passes", "check", "self_check", "save"} <= set(data["timings_s"])
    assert all(e["seconds"] >= 0 for e in data["check"]["engines"])


def test_verify_accepts_what_optimize_accepts(tmp_path: Path) -> None:
    import onnx_ir as ir

    optimized = seqpasses.optimize(onnx.load(SAMPLE))
    saved = tmp_path / "o.onnx"
    onnx.save(optimized, saved)
    for before, after in (
        (SAMPLE, saved),
        (str(SAMPLE), ir.load(saved)),
        (onnx.load(SAMPLE), optimized),
    ):
        report = seqpasses.verify(before, after)  # type: ignore[arg-type]
        assert report.ok, report.mismatch
    assert np.isclose(seqpasses.verify(SAMPLE, saved).runs, 3)

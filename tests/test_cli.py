"""The real console entry point on real files: outputs, reports and bad input."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import onnx
import pytest

import seqpasses
from helpers import SAMPLES, op_counts, run_cli, sequence_op_count

SAMPLE = SAMPLES / "concat_from_sequence_new_axis.onnx"


def test_optimize_with_check_writes_a_model_without_sequence_ops(tmp_path: Path) -> None:
    out = tmp_path / "out.onnx"
    digest = hashlib.sha256(SAMPLE.read_bytes()).hexdigest()
    result = run_cli("optimize", SAMPLE, "-o", out, "--check")
    assert result.returncode == 0, result.stderr
    assert "sequence ops: 2 -> 0" in result.stdout
    assert "outputs agree" in result.stdout
    model = onnx.load(out)
    onnx.checker.check_model(model, full_check=True)
    assert sequence_op_count(model) == 0
    assert hashlib.sha256(SAMPLE.read_bytes()).hexdigest() == digest  # the input is never changed


def test_quiet_verbose_and_json_report(tmp_path: Path) -> None:
    out, report = tmp_path / "out.onnx", tmp_path / "report.json"
    quiet = run_cli(
        "optimize", SAMPLES / "unbind_stack.onnx", "-o", out, "-q", "--check", "--report", report
    )
    assert quiet.returncode == 0 and quiet.stdout == ""
    data = json.loads(report.read_text())
    assert data["sequence_ops_before"] == 4 and data["sequence_ops_after"] == 0
    assert data["check"]["ok"] is True
    assert {r["rule"] for r in data["rewrites"]} >= {"split-to-sequence", "sequence-length"}
    # what reproduces the run: the versions it ran with, its options and the check's settings
    run = data["run"]
    assert run["versions"]["seqpasses"] == seqpasses.__version__
    assert run["versions"]["onnx"] == onnx.__version__
    assert run["check"] == {"runs": 3, "inputs": None, "whole": False}
    assert run["options"]["max_unroll"] == 64
    verbose = run_cli("optimize", SAMPLES / "unbind_stack.onnx", "-o", out, "-v")
    assert "rewrite split-to-sequence" in verbose.stdout


def test_left_ops_are_listed_with_their_reason(tmp_path: Path) -> None:
    model = onnx.parser.parse_model("""<ir_version: 8, opset_import: ["" : 18]>
g (float[2] a, float[3] b, int64 i) => (float[?] y) {
  s = SequenceConstruct(a, b)
  y = SequenceAt(s, i)
}""")  # (elements of two shapes: not one tensor either)
    src = tmp_path / "in.onnx"
    onnx.save(model, src)
    result = run_cli("optimize", src, "-o", tmp_path / "out.onnx")
    assert result.returncode == 0
    assert "left SequenceAt" in result.stdout
    assert "'i' is a graph input" in result.stdout


def test_version() -> None:
    result = run_cli("--version")
    assert result.returncode == 0 and result.stdout.startswith("seqpasses ")


def _bad_models(tmp: Path) -> dict[str, Path]:
    cases: dict[str, Path] = {}
    cases["missing file"] = tmp / "missing.onnx"
    cases["a directory"] = tmp
    empty = tmp / "empty.onnx"
    empty.write_bytes(b"")
    cases["empty file"] = empty
    text = tmp / "text.onnx"
    text.write_text("this is not a model\n")
    cases["text"] = text
    truncated = tmp / "truncated.onnx"
    truncated.write_bytes(SAMPLE.read_bytes()[:40])
    cases["truncated protobuf"] = truncated
    dangling = onnx.parser.parse_model("""<ir_version: 8, opset_import: ["" : 18]>
g (float[2] a) => (float[2] y) {
  y = Add(a, nowhere)
}""")
    cases["dangling input"] = tmp / "dangling.onnx"
    onnx.save(dangling, cases["dangling input"])
    unknown = onnx.parser.parse_model("""<ir_version: 8, opset_import: ["" : 18]>
g (float[2] a) => (float[2] y) {
  y = NoSuchOp(a)
}""")
    cases["unknown op"] = tmp / "unknown.onnx"
    onnx.save(unknown, cases["unknown op"])
    no_opset = onnx.parser.parse_model("""<ir_version: 8, opset_import: ["" : 18]>
g (float[2] a) => (float[2] y) {
  y = Identity(a)
}""")
    del no_opset.opset_import[:]
    cases["no opset import"] = tmp / "no_opset.onnx"
    onnx.save(no_opset, cases["no opset import"])
    return cases


@pytest.mark.parametrize(
    "case",
    [
        "missing file",
        "a directory",
        "empty file",
        "text",
        "truncated protobuf",
        "dangling input",
        "unknown op",
        "no opset import",
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, case: str) -> None:
    source = _bad_models(tmp_path)[case]
    out = tmp_path / "out" / "never.onnx"
    out.parent.mkdir()
    result = run_cli("optimize", source, "-o", out)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert result.stderr.startswith("seqpasses: error: ")
    assert not out.exists()
    assert list(out.parent.iterdir()) == []


def test_missing_output_folder_is_exit_2(tmp_path: Path) -> None:
    result = run_cli("optimize", SAMPLE, "-o", tmp_path / "nope" / "out.onnx")
    assert result.returncode == 2
    assert "output folder does not exist" in result.stderr
    assert "Traceback" not in result.stderr


def test_output_flag_is_required() -> None:
    result = run_cli("optimize", SAMPLE)
    assert result.returncode == 2
    assert "-o" in result.stderr


def test_optimize_fills_in_shapes_unless_told_not_to(tmp_path: Path) -> None:
    source = SAMPLES / "split_edit_cat.onnx"
    filled, bare = tmp_path / "filled.onnx", tmp_path / "bare.onnx"
    assert run_cli("optimize", source, "-o", filled).returncode == 0
    report = tmp_path / "report.json"
    assert (
        run_cli("optimize", source, "-o", bare, "--no-infer-shapes", "--report", report).returncode
        == 0
    )
    info = {vi.name: vi for vi in onnx.load(filled).graph.value_info}
    dims = [d.dim_param or d.dim_value for d in info["scaled"].type.tensor_type.shape.dim]
    assert dims == ["B", 2]
    assert "shapes" not in json.loads(report.read_text())["timings_s"]


def test_inspect_lists_each_sequence_op_with_its_fate(tmp_path: Path) -> None:
    model = onnx.parser.parse_model("""<ir_version: 8, opset_import: ["" : 18]>
g (float[2] a, float[3] b, int64 i) => (float[?] y, int64 n) {
  s = SequenceConstruct(a, b)
  n = SequenceLength(s)
  y = SequenceAt(s, i)
}""")  # (elements of two shapes: not one tensor either)
    source = tmp_path / "in.onnx"
    onnx.save(model, source)
    result = run_cli("inspect", source)
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    # (removed, and by which rewrite)
    assert any(
        line.startswith("SequenceLength") and line.endswith("removed: sequence-length")
        for line in lines
    ), lines
    at = next(line for line in lines if line.startswith("SequenceAt"))
    assert "left: position 'i' is a graph input" in at
    assert lines[-2] == "3 sequence ops: 1 would be removed, 2 left"
    assert lines[-1] == "sequence ops: 3 -> 2, 1 rewrites, 2 left"  # (optimize's own line)
    assert onnx.load(source) == model  # inspect changes nothing


def test_passes_lists_the_rewrite_groups_and_unknown_names_are_rejected(tmp_path: Path) -> None:
    listing = run_cli("passes")
    assert listing.returncode == 0
    assert [line.split()[0] for line in listing.stdout.splitlines()][:2] == [
        "sequence-ops",
        "if-inline",
    ]
    bad = run_cli("optimize", SAMPLE, "-o", tmp_path / "o.onnx", "--skip", "nope")
    assert bad.returncode == 2 and "unknown pass nope" in bad.stderr
    assert not (tmp_path / "o.onnx").exists()


def test_skip_and_only_reach_the_passes(tmp_path: Path) -> None:
    rnn = SAMPLES / "torch" / "ts_rnn_cell.onnx"
    default = run_cli("optimize", rnn, "-o", tmp_path / "a.onnx", "-q")
    skipped = run_cli(
        "optimize", rnn, "-o", tmp_path / "b.onnx", "--skip", "loop-scan", "--skip", "stacked"
    )
    # the loop rewrite needs the sequence-ops group to know the list starts empty
    only = run_cli(
        "optimize", rnn, "-o", tmp_path / "c.onnx", "--only", "sequence-ops", "--only", "loop-scan"
    )
    assert default.returncode == skipped.returncode == only.returncode == 0
    assert sequence_op_count(onnx.load(tmp_path / "a.onnx")) == 0
    assert sequence_op_count(onnx.load(tmp_path / "b.onnx")) == 3
    assert sequence_op_count(onnx.load(tmp_path / "c.onnx")) == 0


def test_max_unroll_bounds_unrolling_and_says_why(tmp_path: Path) -> None:
    # l = [a, b]; 3 times: l.append(l[-2] + l[-1]) (a read two back: no carried form)
    model = onnx.parser.parse_model("""<ir_version: 8, opset_import: ["" : 18]>
g (float[2] a, float[2] b) => (float[5,2] y) {
  s = SequenceConstruct(a, b)
  n = Constant<value = int64 {3}>()
  t = Constant<value = bool {1}>()
  final = Loop(n, t, s) <body = body (int64 i, bool c, seq(float) l) => (bool co, seq(float) lo) {
    co = Identity(c)
    two = Constant<value = int64 {-2}>()
    one = Constant<value = int64 {-1}>()
    x = SequenceAt(l, two)
    z = SequenceAt(l, one)
    w = Add(x, z)
    lo = SequenceInsert(l, w)
  }>
  y = ConcatFromSequence<axis = 0, new_axis = 1>(final)
}""")
    source = tmp_path / "fib.onnx"
    onnx.save(model, source)
    unrolled = run_cli("optimize", source, "-o", tmp_path / "a.onnx", "-v", "--check")
    assert unrolled.returncode == 0, unrolled.stderr
    assert "rewrite loop-unroll: Loop '#3' 3 iterations" in unrolled.stdout, unrolled.stdout
    out = onnx.load(tmp_path / "a.onnx")
    assert sequence_op_count(out) == 0 and "Loop" not in op_counts(out)

    # (lists held as one tensor would carry it instead: switched off to show the reason)
    kept = run_cli(
        "optimize", source, "-o", tmp_path / "b.onnx", "--max-unroll", "2", "--skip", "stacked"
    )
    assert kept.returncode == 0
    assert "trip count 3 is above --max-unroll 2" in kept.stdout
    assert sequence_op_count(onnx.load(tmp_path / "b.onnx")) > 0
    inspect = run_cli("inspect", source, "--max-unroll", "2", "--skip", "stacked")
    assert "trip count 3 is above --max-unroll 2" in inspect.stdout
    carried = run_cli("optimize", source, "-o", tmp_path / "c.onnx", "--max-unroll", "2", "-v")
    assert "rewrite loop-carries-stacked" in carried.stdout
    assert sequence_op_count(onnx.load(tmp_path / "c.onnx")) == 0


def test_a_loop_reading_its_list_with_a_run_time_trip_count_carries_what_it_reads(
    tmp_path: Path,
) -> None:
    # ts_loop_reads_list reads l[-1] and len(l) in its body: unrolled by default; without
    # unrolling those reads become n0 + i and a carried last element, then a scan output
    model = SAMPLES / "torch" / "ts_loop_reads_list.onnx"
    result = run_cli("optimize", model, "-o", tmp_path / "b.onnx", "--max-unroll", "0", "-v")
    assert result.returncode == 0, result.stderr
    assert "rewrite loop-lift-reads" in result.stdout
    assert "rewrite loop-append-to-scan-output" in result.stdout
    out = onnx.load(tmp_path / "b.onnx")
    assert sequence_op_count(out) == 0 and op_counts(out)["Loop"] == 1


def test_inspect_explains_a_loop_it_cannot_rewrite() -> None:
    # elements of two shapes; a loop over a run-time trip count whose list grows by elements
    # twice as long each iteration: nothing can be held as one tensor
    result = run_cli("inspect", SAMPLES / "unlike_shapes.onnx")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    body_read = next(line for line in lines if line.startswith("SequenceAt") and ".body" in line)
    assert "carried by Loop" in body_read and "changes every iteration" in body_read
    assert "trip count 'steps' is a graph input, known only at run time" in body_read
    after = next(line for line in lines if line.startswith("ConcatFromSequence"))
    assert "not unrolled: trip count 'steps'" in after
    assert "not a scan output: the body also reads the list (SequenceAt" in after
    assert "not carried as one tensor: elements of shapes [2,3] and [4,3]" in after
    read = next(line for line in lines if line.startswith("SequenceAt") and "main " in line)
    assert "position 'i' is a graph input" in read and "[2,3] and [4,3]" in read
    assert lines[-2].startswith("5 sequence ops: 0 would be removed, 5 left")
    assert lines[-1] == "sequence ops: 5 -> 5, 0 rewrites, 5 left"
    # the same reads with elements of one shape: a Gather, slices, a loop carrying a tensor
    stacked = run_cli("inspect", SAMPLES / "run_time_reads.onnx")
    assert stacked.stdout.splitlines()[-2] == "7 sequence ops: 7 would be removed, 0 left"


def test_a_fault_of_seqpasses_is_one_line_and_exit_3(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # stands in for a bug in seqpasses' own passes (onnx and the file system stay real)
    import seqpasses.cli
    import seqpasses.cli.views
    import seqpasses.pipeline

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("simulated fault")

    monkeypatch.setattr(seqpasses.pipeline, "run_passes", broken)
    monkeypatch.setattr(seqpasses.cli.views, "optimize_loaded", broken)
    out = tmp_path / "out.onnx"
    code = seqpasses.cli.main(["optimize", str(SAMPLE), "-o", str(out)])
    err = capsys.readouterr().err
    assert code == 3 and not out.exists()
    assert len(err.splitlines()) == 1
    assert "internal error" in err and "RuntimeError: simulated fault" in err
    monkeypatch.setenv("SEQPASSES_TRACEBACK", "1")
    with pytest.raises(RuntimeError, match="simulated fault"):
        seqpasses.cli.main(["inspect", str(SAMPLE)])


def test_the_command_line_parses_before_it_loads_onnx() -> None:
    # --help, --version and usage errors answer without onnx, onnx_ir, numpy or onnxruntime
    # (benchmarks/startup.py measures the time): importing the CLI and failing on an argument
    # loads none of them
    code = (
        "import sys\n"
        "from seqpasses.cli import main\n"
        "try:\n"
        "    main(['optimize'])\n"
        "except SystemExit:\n"
        "    pass\n"
        "heavy = {'onnx', 'onnx_ir', 'numpy', 'onnxruntime'} & set(sys.modules)\n"
        "print(sorted(heavy))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False
    )
    assert result.stdout.strip() == "[]", result.stdout + result.stderr
    assert "the following arguments are required" in result.stderr


def test_commands_say_the_same_of_a_model_onnx_ir_cannot_hold(tmp_path: Path) -> None:
    model = SAMPLES / "wild" / "sklearn_logreg.onnx"
    optimized = run_cli("optimize", model, "-o", tmp_path / "o.onnx")
    assert optimized.returncode == 0 and "written unchanged" in optimized.stdout
    for command in ("inspect", "shapes"):
        result = run_cli(command, model)
        assert result.returncode == 0, result.stderr
        assert "onnx_ir cannot hold its sequence-of-map values" in result.stdout


def test_quiet_prints_nothing_on_success_even_with_check(tmp_path: Path) -> None:
    model = SAMPLES / "wild" / "silero_vad.onnx"  # (its LSTM overflows numpy's exp)
    result = run_cli("optimize", model, "-o", tmp_path / "o.onnx", "--check", "-q")
    assert result.returncode == 0, result.stderr
    assert result.stdout == "" and result.stderr == ""


def test_a_usage_error_is_one_line_with_where_to_look(tmp_path: Path) -> None:
    result = run_cli("optimize", SAMPLES / "unbind_stack.onnx")
    assert result.returncode == 2
    assert result.stderr == (
        "seqpasses optimize: error: the following arguments are required: -o/--output "
        "(see seqpasses optimize --help)\n"
    )


def _wait_for(process: subprocess.Popen[str], workers: bool) -> None:
    """Wait until ``process`` has loaded onnx (its native module is in the memory map: the
    process is inside its command's run) or, with ``workers``, has started a worker
    process; where /proc is not there, a few seconds."""
    import time

    proc = Path(f"/proc/{process.pid}")
    seen = proc / ("task" if workers else "maps")
    if not seen.exists():
        time.sleep(3.0 if workers else 1.5)
        return
    for _ in range(1000):
        if process.poll() is not None:
            return
        if workers and (proc / "task" / str(process.pid) / "children").read_text().strip():
            return
        if not workers and "onnx_cpp2py_export" in (proc / "maps").read_text():
            return
        time.sleep(0.01)


def _interrupted(
    argv: list[str], delay: float, group: bool = False, workers: bool = False, presses: int = 1
) -> tuple[int, str]:
    """Run the console program, send it Ctrl-C ``delay`` s after it has loaded onnx (or has
    started a worker, with ``workers``), to its whole process group as a terminal does when
    ``group``, ``presses`` times 0.1 s apart; its exit code and stderr."""
    import os
    import signal
    import time

    process = subprocess.Popen(
        [sys.executable, "-m", "seqpasses", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=group,
    )
    _wait_for(process, workers)
    time.sleep(delay)
    for press in range(presses):
        if press:
            time.sleep(0.1)
        if group:
            os.killpg(process.pid, signal.SIGINT)
        else:
            process.send_signal(signal.SIGINT)
    _, stderr = process.communicate(timeout=120)
    return process.returncode, stderr


def _staging_left(folder: Path) -> list[Path]:
    return [p for p in folder.rglob(".*") if ".onnx." in p.name]


def test_ctrl_c_says_nothing_was_written(tmp_path: Path) -> None:
    import hostile

    model = hostile.nested_loops(tmp_path, depth=3, trips=64)
    out = tmp_path / "out.onnx"
    code, stderr = _interrupted(["optimize", str(model), "-o", str(out)], 0.0)
    assert (code, stderr) == (130, "seqpasses: interrupted, nothing written\n")
    assert not out.exists() and not _staging_left(tmp_path)


def test_ctrl_c_at_any_moment_leaves_the_output_whole_or_absent_and_says_which(
    tmp_path: Path,
) -> None:
    """Interrupts spread over a whole run, its end included (once, an interrupt after the
    output was in place made Python exit by SIGINT, and the line said nothing was written
    when one that came during the renames was raised after them)."""
    import time

    import hostile

    model = hostile.nested_loops(tmp_path, depth=3, trips=64)
    out = tmp_path / "out.onnx"
    start = time.perf_counter()
    assert run_cli("optimize", model, "-o", out, "-q").returncode == 0
    whole = time.perf_counter() - start
    expected = onnx.load(out).SerializeToString()
    outcomes = set()
    for fraction in (0.35, 0.6, 0.8, 0.9, 1.0, 1.3):
        out.unlink(missing_ok=True)
        code, stderr = _interrupted(["optimize", str(model), "-o", str(out)], fraction * whole)
        assert code in (0, 130) and "Traceback" not in stderr, (fraction, code, stderr)
        if code == 130 and "nothing written" in stderr:
            assert stderr == "seqpasses: interrupted, nothing written\n"
            assert not out.exists()
        else:
            assert onnx.load(out).SerializeToString() == expected
            assert code == 0 or stderr.startswith(f"seqpasses: interrupted after writing {out}")
        assert not _staging_left(tmp_path)
        outcomes.add(code)
    assert 130 in outcomes


def test_ctrl_c_in_a_folder_run_stops_the_workers_and_writes_nothing(
    tmp_path: Path,
) -> None:
    """A folder run puts its models in place together at its end: an interrupt before then
    leaves nothing, the output folder it made included, and no worker behind."""
    import hostile

    source, target = tmp_path / "in", tmp_path / "out"
    source.mkdir()
    model = hostile.nested_loops(tmp_path, depth=3, trips=64)
    for name in ("a", "b", "c"):
        (source / f"{name}.onnx").write_bytes(model.read_bytes())
    argv = ["optimize", str(source), "-o", str(target), "--jobs", "2"]
    for group, presses in ((True, 1), (False, 1), (True, 3)):  # (3: a user pressing on)
        shutil.rmtree(target, ignore_errors=True)
        code, stderr = _interrupted(argv, 0.5, group=group, workers=True, presses=presses)
        assert code == 130 and "Traceback" not in stderr, stderr
        line = stderr.strip().splitlines()[-1]
        assert line.startswith("seqpasses: interrupted; nothing written (")
        assert "of 3 model(s) were done" in line
        assert not target.exists()

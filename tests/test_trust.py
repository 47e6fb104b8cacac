"""What a user trusts the CLI with, each case through the real console entry point:

1. writes are planned and safe (no model loads another's weights, no input or file outside
   the output is written, a failed report leaves the output as it was, no staging folder or
   worker outlives a signal, a replaced file keeps its mode);
2. malformed input gets exit 2 with one line, never exit 3 (and the API raises BadInputError);
3. a model of a few KB finishes within 10 s and 1 GB, or is refused;
4. text from the model reaches the terminal escaped;
5. a graph output listed twice keeps its name;
6. ONNX Runtime is not imported on a run that does not use it.
"""

from __future__ import annotations

import io
import os
import resource
import shutil
import signal
import subprocess
import sys
import time
import zipfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper

import seqpasses
from helpers import SAMPLES, run_cli
from hostile import _external
from seqpasses.errors import BadInputError

SAMPLE = SAMPLES / "unbind_stack.onnx"
PLACEHOLDER = "XXXX"
NOT_UTF8 = b"\xff\xfe\xfd\xfc"
OPSETS = [h.make_opsetid("", 18)]
LOCAL = [h.make_opsetid("", 18), h.make_opsetid("local", 1)]
GIB = 1 << 30


# -- helpers -----------------------------------------------------------------------------------


def _save(model: onnx.ModelProto | bytes, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = model if isinstance(model, bytes) else model.SerializeToString()
    path.write_bytes(data)
    return path


def _model(
    nodes: Sequence[onnx.NodeProto],
    inputs: Sequence[onnx.ValueInfoProto],
    outputs: Sequence[onnx.ValueInfoProto],
    initializers: Sequence[T] = (),
    functions: Sequence[onnx.FunctionProto] = (),
    ir_version: int = 8,
) -> onnx.ModelProto:
    graph = h.make_graph(list(nodes), "g", list(inputs), list(outputs), list(initializers))
    return h.make_model(
        graph,
        opset_imports=LOCAL if functions else OPSETS,
        ir_version=ir_version,
        functions=list(functions),
    )


def _concat(first: str = "x", second: str = "x", out: str = "y") -> list[onnx.NodeProto]:
    """``out = ConcatFromSequence(SequenceConstruct(first, second))``: folds to a Concat."""
    return [
        h.make_node("SequenceConstruct", [first, second], [f"{out}_s"]),
        h.make_node("ConcatFromSequence", [f"{out}_s"], [out], axis=0),
    ]


def _float(name: str, shape: Sequence[int | str] | None) -> onnx.ValueInfoProto:
    return h.make_tensor_value_info(name, T.FLOAT, shape)


def _weighted(value: float, path: Path, count: int = 4096) -> Path:
    """``y = Concat(x, w)`` (by a sequence), ``w`` = ``count`` floats of ``value``."""
    weight = numpy_helper.from_array(np.full(count, value, np.float32), "w")
    model = _model(_concat("x", "w"), [_float("x", [count])], [_float("y", [2 * count])], [weight])
    return _save(model, path)


def _weights(path: Path, count: int = 4096) -> np.ndarray:
    """The ``count``-element initializer of the model at ``path`` (external data loaded)."""
    model = onnx.load(path)
    found = [numpy_helper.to_array(t) for t in model.graph.initializer if t.dims == [count]]
    assert len(found) == 1, [t.name for t in model.graph.initializer]
    return found[0]


def _refused(result: subprocess.CompletedProcess[str]) -> None:
    """Exit 2 with one line on stderr: no traceback, no 'a bug in seqpasses'."""
    assert result.returncode == 2, (result.returncode, result.stderr)
    assert len(result.stderr.splitlines()) == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert "bug in seqpasses" not in result.stderr


def _run(
    *args: str | Path,
    env: dict[str, str] | None = None,
    preexec_fn: Callable[[], None] | None = None,
) -> subprocess.CompletedProcess[str]:
    """``run_cli`` with a changed environment or a set-up in the child."""
    return run_cli(*args, env=env, preexec_fn=preexec_fn)


def _tree_bytes(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.is_symlink()
    }


def _files(root: Path) -> list[str]:
    """Every entry under ``root`` (links not followed), relative, sorted."""
    if not root.exists():
        return []
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


# -- 1. writes are planned and safe ---------------------------------------------------------------


def _shared_data_run(tmp_path: Path, *extra: str) -> None:
    source, out = tmp_path / "in", tmp_path / "out"
    _weighted(1.0, source / "a.onnx")
    _weighted(2.0, source / "b.onnx")
    result = run_cli("optimize", source, "-o", out, "--external-data", "shared.data", *extra)
    if result.returncode == 2:  # refused up front ...
        assert len(result.stderr.splitlines()) == 1, result.stderr
        assert [p for p in _files(out) if (out / p).is_file()] == [], _files(out)
        return
    # ... or every model holds its own weights
    assert result.returncode == 0, (result.returncode, result.stdout, result.stderr)
    assert np.all(_weights(out / "a.onnx") == 1.0), _weights(out / "a.onnx")[:4]
    assert np.all(_weights(out / "b.onnx") == 2.0), _weights(out / "b.onnx")[:4]


def test_1a_two_models_given_one_data_file_name_in_parallel(tmp_path: Path) -> None:
    _shared_data_run(tmp_path, "-j", "2")


def test_1a_two_models_given_one_data_file_name_one_at_a_time(tmp_path: Path) -> None:
    # (today: a.onnx is written, then b fails on the data file a left: exit 1, half a run)
    _shared_data_run(tmp_path, "-j", "1")


def _link_into_the_input(tmp_path: Path, landing: str, link: str, target: str) -> None:
    """``in/LANDING`` and ``in/LINK/<its name>``, and ``out/LINK`` a symlink to ``TARGET``:
    the second model's result would land on the first, an input. The run is refused and
    the input tree is left as it was."""
    source, out = tmp_path / "in", tmp_path / "out"
    shutil.copy(SAMPLE, _save(b"", source / landing))
    name = Path(landing).name
    shutil.copy(SAMPLES / "split_edit_cat.onnx", _save(b"", source / link / name))
    out.mkdir()
    (out / link).symlink_to(target)
    before = _tree_bytes(source)
    result = run_cli("optimize", source, "-o", out)
    _refused(result)
    assert _tree_bytes(source) == before


def test_1b_a_link_in_the_output_folder_back_to_the_input_folder(tmp_path: Path) -> None:
    _link_into_the_input(tmp_path, "x.onnx", "p", "../in")


def test_1b_a_link_in_the_output_folder_to_another_input_subfolder(tmp_path: Path) -> None:
    # out/q -> ../in/sub: q/y.onnx's result would land on the input in/sub/y.onnx
    _link_into_the_input(tmp_path, "sub/y.onnx", "q", "../in/sub")


def _folder_of_two(tmp_path: Path) -> Path:
    source = tmp_path / "in"
    shutil.copy(SAMPLE, _save(b"", source / "a.onnx"))
    shutil.copy(SAMPLE, _save(b"", source / "sub" / "b.onnx"))
    return source


@pytest.mark.parametrize("report", ["a.onnx", "sub/b.onnx"])
def test_1c_a_report_on_a_model_the_run_writes(tmp_path: Path, report: str) -> None:
    source, out = _folder_of_two(tmp_path), tmp_path / "out"
    (out / "sub").mkdir(parents=True)
    result = run_cli("optimize", source, "-o", out, "--report", out / report)
    _refused(result)
    assert _files(out) == ["sub"]


def test_1c_a_report_on_the_output_folder(tmp_path: Path) -> None:
    source, out = _folder_of_two(tmp_path), tmp_path / "out2"
    result = run_cli("optimize", source, "-o", out, "--report", out)
    _refused(result)
    assert _files(out) == []


def test_1c_a_report_on_a_folder_the_run_makes(tmp_path: Path) -> None:
    # out/sub does not exist yet: the run makes it (for sub/b.onnx), then cannot write the report
    source, out = _folder_of_two(tmp_path), tmp_path / "out"
    out.mkdir()
    result = run_cli("optimize", source, "-o", out, "--report", out / "sub")
    _refused(result)
    assert _files(out) == []


def _fsize_limit(limit: int) -> Callable[[], None]:
    def limited() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit: EFBIG
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return limited


def test_1d_a_report_that_cannot_be_written_leaves_the_output_as_it_was(tmp_path: Path) -> None:
    plain_out, plain_report = tmp_path / "plain.onnx", tmp_path / "plain.json"
    assert run_cli("optimize", SAMPLE, "-o", plain_out, "--report", plain_report).returncode == 0
    model_size, report_size = plain_out.stat().st_size, plain_report.stat().st_size
    assert model_size < report_size, (model_size, report_size)  # (else the limit cannot split them)
    out, report = tmp_path / "out.onnx", tmp_path / "report.json"
    out.write_bytes(b"previous bytes")
    limit = (model_size + report_size) // 2
    result = _run("optimize", SAMPLE, "-o", out, "--report", report, preexec_fn=_fsize_limit(limit))
    assert result.returncode == 2, (result.returncode, result.stderr)
    assert out.read_bytes() == b"previous bytes"


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_1d_a_report_to_a_full_device_leaves_the_output_as_it_was(tmp_path: Path) -> None:
    out = tmp_path / "out.onnx"
    out.write_bytes(b"previous bytes")
    result = run_cli("optimize", SAMPLE, "-o", out, "--report", "/dev/full")
    assert result.returncode == 2, (result.returncode, result.stderr)
    assert out.read_bytes() == b"previous bytes"


def _outside_link(tmp_path: Path, name: str) -> tuple[Path, Path]:
    out, elsewhere = tmp_path / "out", tmp_path / "elsewhere"
    out.mkdir()
    elsewhere.mkdir()
    (out / name).symlink_to("../elsewhere/stolen.data")
    return out, elsewhere


def test_1e_external_data_onto_a_dangling_link_out_of_the_folder(tmp_path: Path) -> None:
    out, elsewhere = _outside_link(tmp_path, "dangling.data")
    model = _weighted(1.0, tmp_path / "in" / "a.onnx")
    result = run_cli("optimize", model, "-o", out / "a.onnx", "--external-data", "dangling.data")
    _refused(result)
    assert _files(elsewhere) == []
    assert _files(out) == ["dangling.data"]


def test_1e_default_external_data_name_is_a_dangling_link_in_folder_mode(
    tmp_path: Path,
) -> None:
    out, elsewhere = _outside_link(tmp_path, "a.onnx.data")
    _weighted(1.0, tmp_path / "in" / "a.onnx")
    result = run_cli("optimize", tmp_path / "in", "-o", out, "--external-data")
    assert result.returncode != 0, result.stdout
    assert "bug in seqpasses" not in result.stdout + result.stderr
    assert _files(elsewhere) == []


@pytest.mark.parametrize(
    ("sample", "name"), [("unbind_stack.onnx", None), ("split_edit_cat.onnx", "w.bin")]
)
def test_1f_external_data_with_no_weights_to_put_there_runs_twice(
    tmp_path: Path, sample: str, name: str | None
) -> None:
    out = tmp_path / "out.onnx"
    args = ["--external-data", *([name] if name else [])]
    for run in range(2):
        result = run_cli("optimize", SAMPLES / sample, "-o", out, "-q", *args)
        assert result.returncode == 0, (run, result.stderr)
    model = onnx.load(out, load_external_data=False)
    locations = {
        entry.value
        for tensor in model.graph.initializer
        for entry in tensor.external_data
        if entry.key == "location"
    }
    data = tmp_path / (name or "out.onnx.data")
    assert not data.exists() or data.name in locations, (_files(tmp_path), locations)


def test_1g_a_replaced_output_and_report_keep_their_mode(tmp_path: Path) -> None:
    out, report = tmp_path / "out.onnx", tmp_path / "report.json"
    out.write_bytes(b"")
    report.write_text("{}\n")
    os.chmod(out, 0o600)
    os.chmod(report, 0o600)
    result = run_cli("optimize", SAMPLE, "-o", out, "--report", report, "-q")
    assert result.returncode == 0, result.stderr
    assert (oct(out.stat().st_mode & 0o777), oct(report.stat().st_mode & 0o777)) == (
        "0o600",
        "0o600",
    )


def test_1g_a_replaced_model_in_a_folder_run_keeps_its_mode(tmp_path: Path) -> None:
    source, out = _folder_of_two(tmp_path), tmp_path / "out"
    assert run_cli("optimize", source, "-o", out, "-q").returncode == 0
    os.chmod(out / "sub" / "b.onnx", 0o640)
    result = run_cli("optimize", source, "-o", out, "-q")
    assert result.returncode == 0, result.stderr
    assert oct((out / "sub" / "b.onnx").stat().st_mode & 0o777) == "0o640"


BIG_COUNT = 5_000_000  # 20 MB of weights: a write of a tenth of a second or more


@pytest.fixture(scope="module")
def big_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _weighted(1.0, tmp_path_factory.mktemp("big") / "big.onnx", BIG_COUNT)


def _signal_during_write(out: Path, model: Path, signum: int) -> subprocess.Popen[bytes]:
    """Start a run into ``out`` (a folder) and send ``signum`` as soon as anything appears in
    ``out``: the write has begun."""
    out.mkdir()
    process = subprocess.Popen(
        [sys.executable, "-m", "seqpasses", "optimize", str(model), "-o", str(out / "o.onnx")],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 25
    while process.poll() is None and time.monotonic() < deadline:
        if any(out.iterdir()):
            process.send_signal(signum)
            break
        time.sleep(0.002)
    else:
        process.kill()
        process.wait()
        pytest.fail("the run ended (or took too long) before its write began")
    process.wait(timeout=25)
    return process


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP], ids=["TERM", "HUP"])
def test_1h_a_signal_during_the_write_leaves_no_staging_folder(
    tmp_path: Path, big_model: Path, signum: int
) -> None:
    out = tmp_path / "out"
    process = _signal_during_write(out, big_model, signum)
    left = _files(out)
    assert [p for p in left if p.startswith(".")] == [], left
    if (out / "o.onnx").exists():
        assert _weights(out / "o.onnx", BIG_COUNT)[0] == 1.0  # whole
        assert left == ["o.onnx"], left
    else:
        assert process.returncode != 0
        assert left == [], left


def _children(pid: int) -> list[int]:
    try:
        text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    except OSError:
        return []
    return [int(child) for child in text.split()]


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="needs Linux /proc")
def test_1h_a_folder_run_killed_with_sigterm_leaves_no_worker_running(
    tmp_path: Path, big_model: Path
) -> None:
    source, out = tmp_path / "in", tmp_path / "out"
    source.mkdir()
    for name in ("a", "b", "c"):
        shutil.copy(big_model, source / f"{name}.onnx")
    command = [sys.executable, "-m", "seqpasses", "optimize", str(source), "-o", str(out)]
    parent = subprocess.Popen(
        [*command, "-j", "2"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    workers: list[int] = []
    try:
        deadline = time.monotonic() + 60
        while parent.poll() is None and time.monotonic() < deadline and len(workers) < 2:
            # (read each time: just after its start a process's command line is empty)
            own = Path(f"/proc/{parent.pid}/cmdline").read_bytes()
            workers = [  # (forked workers share the parent's command line)
                pid
                for pid in _children(parent.pid)
                if Path(f"/proc/{pid}/cmdline").read_bytes() == own
            ]
            time.sleep(0.02)
        assert workers, "no worker started"
        parent.send_signal(signal.SIGTERM)
        parent.wait(timeout=20)
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline and any(map(_alive, workers)):
            time.sleep(0.05)
        assert [pid for pid in workers if _alive(pid)] == [], "workers outlived the parent"
    finally:
        for pid in workers:
            if _alive(pid):
                os.kill(pid, signal.SIGKILL)
        if parent.poll() is None:
            parent.kill()
            parent.wait()


def _hidden(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob(".*"))


@pytest.mark.parametrize(
    ("signum", "when"),
    [
        (signal.SIGTERM, "first-model"),
        (signal.SIGINT, "first-model"),
        (signal.SIGTERM, "report"),
        (signal.SIGINT, "report"),
    ],
    ids=["term-as-models-go-in-place", "int-as-models-go-in-place", "term-after", "int-after"],
)
def test_1h_a_signal_as_a_folder_run_ends_leaves_nothing_staged(
    tmp_path: Path, signum: int, when: str
) -> None:
    """A signal landing as a folder run puts its files in place, removes its staging folders
    or makes its workers (found by the adversarial search: 261 staging folders left, or
    multiprocessing's 'Exception ignored ... Finalize' traceback): the run ends with one
    line, and nothing staged is left, whatever the moment."""
    source, out, report = tmp_path / "in", tmp_path / "out", tmp_path / "r.json"
    for k in range(240):
        shutil.copy(SAMPLE, _save(b"", source / f"d{k % 6}" / f"m{k}.onnx"))
    command = [sys.executable, "-m", "seqpasses", "optimize", str(source), "-o", str(out)]
    process = subprocess.Popen(
        [*command, "-j", "2", "-q", "--report", str(report)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 60
    while process.poll() is None and time.monotonic() < deadline:
        # (the commit has begun: staged files are going in place; the report goes last,
        # and then the staging folders are removed)
        if when == "report" and report.exists():
            break
        if when == "first-model" and any(not p.name.startswith(".") for p in out.rglob("m*")):
            break
    process.send_signal(signum)
    _, err = process.communicate(timeout=60)
    assert process.returncode in (0, 128 + signum), (process.returncode, err)
    assert b"Traceback" not in err and b"Exception ignored" not in err, err[-600:]
    assert _hidden(tmp_path) == []


# -- 2. malformed input: exit 2 with one line -----------------------------------------------------


def _not_utf8(where: str) -> bytes:
    """A small model whose text at ``where`` is not UTF-8 (written as a placeholder, then the
    serialized bytes edited: protobuf will not set such a string)."""

    def at(spot: str, otherwise: str) -> str:
        return PLACEHOLDER if where == spot else otherwise

    x = at("input", "x")
    nodes = [
        h.make_node("Relu", [x], ["r"], name=at("node", "relu")),  # (a node that stays)
        *_concat("r", "r"),
    ]
    graph = h.make_graph(
        nodes,
        at("graph", "g"),
        [_float(x, [2])],
        [_float("y", [4])],
        doc_string=at("doc", ""),
    )
    model = h.make_model(
        graph, opset_imports=OPSETS, ir_version=8, producer_name=at("producer", "p")
    )
    if where == "metadata":
        h.set_model_props(model, {"key": PLACEHOLDER})
    if where == "domain":
        model.domain = PLACEHOLDER
    data = model.SerializeToString()
    assert PLACEHOLDER.encode() in data
    return data.replace(PLACEHOLDER.encode(), NOT_UTF8)


NOT_UTF8_SPOTS = ["input", "graph", "producer", "metadata", "node", "doc", "domain"]


@pytest.mark.parametrize("where", NOT_UTF8_SPOTS)
def test_2_text_that_is_not_utf8_is_refused(tmp_path: Path, where: str) -> None:
    model = _save(_not_utf8(where), tmp_path / "m.onnx")
    result = run_cli("optimize", model, "-o", tmp_path / "out.onnx")
    _refused(result)
    assert not (tmp_path / "out.onnx").exists()


def test_2_text_that_is_not_utf8_with_a_report(tmp_path: Path) -> None:
    model = _save(_not_utf8("input"), tmp_path / "m.onnx")
    result = run_cli("optimize", model, "-o", tmp_path / "out.onnx", "--report", tmp_path / "r")
    _refused(result)
    assert _files(tmp_path) == ["m.onnx"]


@pytest.mark.parametrize("command", ["inspect", "shapes"])
def test_2_text_that_is_not_utf8_read_by_other_commands(tmp_path: Path, command: str) -> None:
    model = _save(_not_utf8("graph"), tmp_path / "m.onnx")
    _refused(run_cli(command, model))


def test_2_text_that_is_not_utf8_in_a_folder_fails_that_model_alone(tmp_path: Path) -> None:
    source, out = tmp_path / "in", tmp_path / "out"
    _save(_not_utf8("producer"), source / "bad.onnx")
    shutil.copy(SAMPLE, source / "good.onnx")
    result = run_cli("optimize", source, "-o", out)
    assert result.returncode == 1, (result.returncode, result.stderr)
    assert "2 models: 1 optimized, 0 unchanged, 1 failed" in result.stdout
    assert "internal error" not in result.stdout + result.stderr
    assert _files(out) == ["good.onnx"]


def _external_model(folder: Path, location: str, dims: list[int]) -> Path:
    """``y = Concat(w, w)`` (by a sequence), ``w`` a float tensor stored at ``location``."""
    tensor = _external("w", location, dims)
    tensor.data_type = T.FLOAT
    model = _model(_concat("w", "w"), [], [_float("y", None)], [tensor])
    return _save(model, folder / "m.onnx")


def _loop_link(folder: Path, names: Sequence[str]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name, target in zip(names, [*names[1:], names[0]], strict=True):
        (folder / name).symlink_to(target)


def _file(name: str, data: bytes) -> Callable[[Path], None]:
    def write(folder: Path) -> None:
        (folder / name).write_bytes(data)

    return write


def _nothing(folder: Path) -> None:
    pass


EXTERNAL_CASES: dict[str, tuple[str, list[int], Callable[[Path], None]]] = {
    "nul-byte": ("w\x00.bin", [2], _file("w", bytes(8))),
    "5000-chars": ("a" * 5000, [2], _nothing),
    "300-char-name": ("b" * 300, [2], _nothing),
    "symlink-loop": ("a", [2], lambda folder: _loop_link(folder, ["a", "b"])),
    "self-link": ("s", [2], lambda folder: _loop_link(folder, ["s"])),
    "dims-0-2^62": ("w.bin", [0, 2**62], _file("w.bin", b"")),
    "dims-2^62-0": ("w.bin", [2**62, 0], _file("w.bin", b"")),
}


@pytest.mark.parametrize("case", EXTERNAL_CASES)
def test_2_odd_external_data_is_refused(tmp_path: Path, case: str) -> None:
    location, dims, prepare = EXTERNAL_CASES[case]
    folder = tmp_path / "m"
    folder.mkdir()
    prepare(folder)
    model = _external_model(folder, location, dims)
    result = run_cli("optimize", model, "-o", tmp_path / "out.onnx")
    _refused(result)


def _sequence_empty(dtype: int) -> onnx.ModelProto:
    nodes = [
        h.make_node("SequenceEmpty", [], ["s"], dtype=dtype),
        h.make_node("SequenceInsert", ["s", "x"], ["t"]),
        h.make_node("ConcatFromSequence", ["t"], ["y"], axis=0),
    ]
    return _model(nodes, [_float("x", [2])], [_float("y", [2])])


def _loop(given: int, declared: int) -> onnx.ModelProto:
    """A Loop handed ``given`` carried lists where its body declares ``declared``."""
    seq = h.make_sequence_type_proto(h.make_tensor_type_proto(T.FLOAT, [2]))
    body = h.make_graph(
        [
            h.make_node("Identity", ["c"], ["c_out"]),
            *(
                h.make_node("SequenceInsert", [f"s{k}", "x"], [f"s{k}_out"])
                for k in range(declared)
            ),
        ],
        "body",
        [
            h.make_tensor_value_info("i", T.INT64, []),
            h.make_tensor_value_info("c", T.BOOL, []),
            *(h.make_value_info(f"s{k}", seq) for k in range(declared)),
        ],
        [
            h.make_tensor_value_info("c_out", T.BOOL, []),
            *(h.make_value_info(f"s{k}_out", seq) for k in range(declared)),
        ],
    )
    nodes = [
        h.make_node("SequenceEmpty", [], ["empty"], dtype=T.FLOAT),
        h.make_node("Loop", ["n", "", *["empty"] * given], ["s"], body=body),
        h.make_node("SequenceLength", ["s"], ["y"]),
    ]
    trips = numpy_helper.from_array(np.array(3, np.int64), "n")
    return _model(nodes, [_float("x", [2])], [h.make_tensor_value_info("y", T.INT64, [])], [trips])


def _recursive(ir_version: int, names: Sequence[str]) -> onnx.ModelProto:
    """Model-local functions that call each other in a ring (``F`` alone: F calls F)."""
    functions = [
        h.make_function(
            "local", name, ["a"], ["b"], [h.make_node(callee, ["a"], ["b"], domain="local")], LOCAL
        )
        for name, callee in zip(names, [*names[1:], names[0]], strict=True)
    ]
    nodes = [h.make_node(names[0], ["x"], ["r"], domain="local"), *_concat("r", "r")]
    return _model(
        nodes, [_float("x", [2])], [_float("y", [4])], functions=functions, ir_version=ir_version
    )


def _high_rank(rank: int, in_sequence: bool = False) -> onnx.ModelProto:
    if in_sequence:
        seq = h.make_sequence_type_proto(h.make_tensor_type_proto(T.FLOAT, [1] * rank))
        nodes = [h.make_node("SequenceLength", ["xs"], ["n"]), *_concat()]
        return _model(
            nodes,
            [h.make_value_info("xs", seq), _float("x", [2])],
            [h.make_tensor_value_info("n", T.INT64, []), _float("y", [4])],
        )
    return _model(_concat(), [_float("x", [1] * rank)], [_float("y", [2] + [1] * (rank - 1))])


MALFORMED: dict[str, tuple[Callable[[], onnx.ModelProto], tuple[str, ...]]] = {
    "sequence-empty-dtype-65": (lambda: _sequence_empty(65), ()),
    "sequence-empty-dtype--1": (lambda: _sequence_empty(-1), ()),
    "sequence-empty-dtype-1000": (lambda: _sequence_empty(1000), ()),
    "loop-given-0-of-2-carried": (lambda: _loop(0, 2), ()),
    "loop-given-1-of-2-carried": (lambda: _loop(1, 2), ("--check",)),
    "loop-given-2-of-1-carried": (lambda: _loop(2, 1), ()),
    "recursive-function-ir7": (lambda: _recursive(7, ["F"]), ("--inline-functions",)),
    "mutually-recursive-functions-ir7": (
        lambda: _recursive(7, ["F", "G"]),
        ("--inline-functions",),
    ),
    "input-of-rank-65": (lambda: _high_rank(65), ("--check",)),
    "sequence-of-rank-65-elements": (lambda: _high_rank(65, in_sequence=True), ("--check",)),
}


@pytest.mark.parametrize("case", MALFORMED)
def test_2_malformed_model_is_refused(tmp_path: Path, case: str) -> None:
    build, options = MALFORMED[case]
    model = _save(build(), tmp_path / "m.onnx")
    result = run_cli("optimize", model, "-o", tmp_path / "out.onnx", *options)
    _refused(result)
    assert not (tmp_path / "out.onnx").exists()


def _npz_claiming(tmp_path: Path, shape: tuple[int, ...]) -> Path:
    """An .npz of one array 'x' whose header claims ``shape``, with 16 bytes of body."""
    buffer = io.BytesIO()
    header = {"descr": "<f4", "fortran_order": False, "shape": shape}
    np.lib.format.write_array_header_1_0(buffer, header)
    buffer.write(bytes(16))
    path = tmp_path / "inputs.npz"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("x.npy", buffer.getvalue())
    return path


@pytest.mark.parametrize("shape", [(10**12,), (10**6, 10**6)], ids=["1e12", "1e6x1e6"])
def test_2_check_inputs_whose_header_lies_are_refused(
    tmp_path: Path, shape: tuple[int, ...]
) -> None:
    inputs = _npz_claiming(tmp_path, shape)
    result = run_cli(
        "optimize", SAMPLE, "-o", tmp_path / "o.onnx", "--check", "--check-inputs", inputs
    )
    _refused(result)


@pytest.mark.parametrize("seconds", ["inf", "1e10"])
def test_2_a_huge_folder_timeout_is_taken_or_refused(tmp_path: Path, seconds: str) -> None:
    source = tmp_path / "in"
    shutil.copy(SAMPLE, _save(b"", source / "a.onnx"))
    result = run_cli("optimize", source, "-o", tmp_path / "out", "--timeout", seconds)
    if result.returncode != 0:
        _refused(result)


@pytest.mark.parametrize("folder", [False, True], ids=["file", "folder"])
def test_2_ascii_output_encoding_and_a_non_ascii_file_name(tmp_path: Path, folder: bool) -> None:
    if folder:
        shutil.copy(SAMPLE, _save(b"", tmp_path / "in" / "ü.onnx"))
        args: list[str | Path] = [tmp_path / "in", "-o", tmp_path / "out"]
    else:
        args = [SAMPLE, "-o", tmp_path / "é.onnx"]
    result = _run("optimize", *args, env={"PYTHONIOENCODING": "ascii"})
    assert result.returncode == 0, (result.returncode, result.stderr)


def _every_dtype() -> list[str]:
    return [name for name, number in T.DataType.items() if number != T.UNDEFINED]


def _split_and_read(dtype: int, opset: int) -> onnx.ModelProto:
    """A list of rows of ``x`` read back at a run-time position and stacked again."""
    nodes = [
        h.make_node("SplitToSequence", ["x"], ["s"], axis=0, keepdims=0),
        h.make_node("ConcatFromSequence", ["s"], ["z"], axis=1, new_axis=1),
        h.make_node("SequenceAt", ["s", "i"], ["w"]),
    ]
    inputs = [
        h.make_tensor_value_info("x", dtype, [3, 2]),
        h.make_tensor_value_info("i", T.INT64, []),
    ]
    outputs = [
        h.make_tensor_value_info("z", dtype, [2, 3]),
        h.make_tensor_value_info("w", dtype, [2]),
    ]
    graph = h.make_graph(nodes, "g", inputs, outputs)
    return h.make_model(graph, opset_imports=[h.make_opsetid("", opset)])


@pytest.mark.parametrize("dtype", _every_dtype())
def test_2_every_data_type_is_rewritten_and_checked(tmp_path: Path, dtype: str) -> None:
    """Every dtype ONNX defines, at the newest opset (int4, float4, float8, strings, ...):
    the rewrite is written and --check compares it (strings as text, 4-bit ints exactly);
    never exit 3, never a check failed on a right rewrite."""
    opset = onnx.defs.onnx_opset_version()
    model = _save(_split_and_read(T.DataType.Value(dtype), opset), tmp_path / "m.onnx")
    out = tmp_path / "out.onnx"
    result = run_cli("optimize", model, "-o", out, "--check")
    assert result.returncode == 0, result.stderr
    assert seqpasses.count_sequence_ops(out) == 0
    for command in ("shapes", "inspect"):
        assert run_cli(command, model).returncode == 0


@pytest.mark.parametrize("rank", [2, 3])
def test_2_strings_read_at_a_run_time_position_match_in_onnx_runtime(
    tmp_path: Path, rank: int
) -> None:
    """ONNX Runtime's Gather of string rows keeps only the first string of each (1.32): a
    run-time read of a list of strings must not become one, on any axis."""
    ort = pytest.importorskip("onnxruntime")
    from onnx.reference import ReferenceEvaluator

    shape = [3, 4, 2][:rank]
    for axis in range(rank):
        nodes = [
            h.make_node("SplitToSequence", ["x"], ["s"], axis=axis, keepdims=0),
            h.make_node("SequenceAt", ["s", "i"], ["w"]),
        ]
        inputs = [
            h.make_tensor_value_info("x", T.STRING, shape),
            h.make_tensor_value_info("i", T.INT64, []),
        ]
        row = h.make_tensor_value_info("w", T.STRING, [None] * (rank - 1))
        graph = h.make_graph(nodes, "g", inputs, [row])
        model = h.make_model(graph, opset_imports=OPSETS)
        optimized = seqpasses.optimize(model)
        assert [n.op_type for n in optimized.graph.node if n.op_type.startswith("Seq")] == []
        session = ort.InferenceSession(
            optimized.SerializeToString(), providers=["CPUExecutionProvider"]
        )
        x = np.array([f"s{k}" for k in range(int(np.prod(shape)))], dtype=object).reshape(shape)
        for i in range(-shape[axis], shape[axis]):
            feeds = {"x": x, "i": np.array(i, dtype=np.int64)}
            want = ReferenceEvaluator(model).run(None, feeds)[0]
            got = session.run(None, feeds)[0]
            assert want.shape == got.shape and (want.astype(str) == got.astype(str)).all(), (
                axis,
                i,
                got,
            )


@pytest.mark.parametrize("trips", ["constant", "input"])
def test_2_strings_appended_in_a_loop_match_in_onnx_runtime(tmp_path: Path, trips: str) -> None:
    """ONNX Runtime's Loop keeps only the first iteration's strings in a scan output (1.32):
    a list of strings built in a Loop is not made one (unrolled where the count is known,
    else left), and --check passes on it."""
    ort = pytest.importorskip("onnxruntime")
    sequence = h.make_tensor_sequence_value_info
    body = h.make_graph(
        [
            h.make_node("Identity", ["cin"], ["cout"]),
            h.make_node("Identity", ["x"], ["xx"]),
            h.make_node("SequenceInsert", ["sin", "xx"], ["sout"]),
        ],
        "b",
        [
            h.make_tensor_value_info("i", T.INT64, []),
            h.make_tensor_value_info("cin", T.BOOL, []),
            sequence("sin", T.STRING, None),
        ],
        [h.make_tensor_value_info("cout", T.BOOL, []), sequence("sout", T.STRING, None)],
    )
    nodes = [
        h.make_node("Cast", ["xf"], ["x"], to=T.STRING),
        h.make_node("Constant", [], ["c"], value=numpy_helper.from_array(np.array(True))),
        h.make_node("SequenceEmpty", [], ["e"], dtype=T.STRING),
        h.make_node("Loop", ["M", "c", "e"], ["L"], body=body),
        h.make_node("ConcatFromSequence", ["L"], ["y"], axis=1, new_axis=1),
    ]
    inputs = [h.make_tensor_value_info("xf", T.FLOAT, [4, 2])]
    if trips == "constant":
        nodes.insert(
            0, h.make_node("Constant", [], ["M"], value=numpy_helper.from_array(np.array(3)))
        )
    else:
        inputs.append(h.make_tensor_value_info("M", T.INT64, []))
    graph = h.make_graph(nodes, "g", inputs, [h.make_tensor_value_info("y", T.STRING, [4, 3, 2])])
    model = _save(h.make_model(graph, opset_imports=OPSETS), tmp_path / "m.onnx")
    out = tmp_path / "out.onnx"
    result = run_cli("optimize", model, "-o", out, "--check")
    assert result.returncode == 0, result.stderr
    feeds = {"xf": np.arange(8, dtype=np.float32).reshape(4, 2), "M": np.array(3)}
    runs = []
    for path in (model, out):
        session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
        names = {i.name for i in session.get_inputs()}
        runs.append(session.run(None, {k: v for k, v in feeds.items() if k in names})[0])
    assert runs[0].tolist() == runs[1].tolist()
    assert (seqpasses.count_sequence_ops(out) == 0) == (trips == "constant")


def _negative_dims(path: Path) -> onnx.ModelProto:
    """``path``'s model with every declared dim made -1, in every graph."""
    model = onnx.load(path)

    def graphs(graph: onnx.GraphProto) -> Iterator[onnx.GraphProto]:
        yield graph
        for node in graph.node:
            for attr in node.attribute:
                if attr.type == onnx.AttributeProto.GRAPH:
                    yield from graphs(attr.g)
                for body in attr.graphs:
                    yield from graphs(body)

    def dims(proto: onnx.TypeProto) -> Iterator[onnx.TensorShapeProto.Dimension]:
        kind = proto.WhichOneof("value")
        if kind == "tensor_type":
            yield from proto.tensor_type.shape.dim
        elif kind == "sequence_type":
            yield from dims(proto.sequence_type.elem_type)

    for graph in graphs(model.graph):
        for info in [*graph.input, *graph.output, *graph.value_info]:
            for dim in dims(info.type):
                dim.dim_value = -1
    return model


@pytest.mark.parametrize("name", ["torch/ts_stack_columns.onnx", "run_time_reads.onnx"])
def test_2_declared_negative_dims_mean_nothing(tmp_path: Path, name: str) -> None:
    """ONNX Runtime runs a model whose declared dims are -1 (it ignores them); onnx's own
    inference aborts the process on one (a C++ assertion): every command takes such a model,
    the dims unknown."""
    model = _save(_negative_dims(SAMPLES / name), tmp_path / "m.onnx")
    result = run_cli("optimize", model, "-o", tmp_path / "out.onnx", "--check")
    assert result.returncode == 0, result.stderr
    for command in (["shapes", model, "-o", tmp_path / "s.onnx"], ["inspect", model]):
        result = run_cli(*command)
        assert result.returncode == 0, result.stderr


def test_2_a_path_the_system_refuses_is_one_line(tmp_path: Path) -> None:
    """An output name longer than the file system takes (ENAMETOOLONG): exit 2, one line."""
    result = run_cli("optimize", SAMPLE, "-o", tmp_path / ("x" * 300 + ".onnx"))
    _refused(result)
    result = run_cli("optimize", SAMPLE, "-o", tmp_path / "o.onnx", "--report", "r" * 300)
    _refused(result)
    assert not (tmp_path / "o.onnx").exists()


def _looped(root: Path) -> Path:
    _loop_link(root, ["a", "b"])
    return root


API_CASES: dict[str, Callable[[Path], Path]] = {
    "not-utf8-input-name": lambda root: _save(_not_utf8("input"), root / "m.onnx"),
    "not-utf8-metadata": lambda root: _save(_not_utf8("metadata"), root / "m.onnx"),
    "sequence-empty-dtype-65": lambda root: _save(_sequence_empty(65), root / "m.onnx"),
    "loop-given-0-of-2-carried": lambda root: _save(_loop(0, 2), root / "m.onnx"),
    "loop-given-2-of-1-carried": lambda root: _save(_loop(2, 1), root / "m.onnx"),
    "external-nul-byte": lambda root: _external_model(root, "w\x00.bin", [2]),
    "external-symlink-loop": lambda root: _external_model(_looped(root), "a", [2]),
    "external-5000-chars": lambda root: _external_model(root, "a" * 5000, [2]),
}


@pytest.mark.parametrize("case", API_CASES)
def test_2_the_api_raises_bad_input_error(tmp_path: Path, case: str) -> None:
    path = API_CASES[case](tmp_path)
    with pytest.raises(BadInputError):
        seqpasses.optimize(path)


# -- 3. bounds: a small model finishes within 10 s and 1 GB --------------------------------------


def _tree_rss(pid: int) -> int:
    """Peak resident bytes of ``pid`` and its descendants so far (each one's high-water mark,
    which its exec started afresh: ``ru_maxrss`` would count what the test process held when
    it forked the child)."""
    total = 0
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                total += int(line.split()[1]) * 1024
    except OSError:
        return 0
    return total + sum(_tree_rss(child) for child in _children(pid))


def _bounded(*args: str | Path, hard: float = 15.0) -> tuple[int | None, float, int]:
    """Run the CLI, killing its process group past ``hard`` seconds or 2 GB: (exit code,
    or None when killed; seconds; peak resident bytes of it and its children, sampled)."""
    process = subprocess.Popen(
        [sys.executable, "-m", "seqpasses", *map(str, args)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    start, peak, killed = time.monotonic(), 0, False
    while True:
        pid, status, _ = os.wait4(process.pid, os.WNOHANG)
        if pid:
            break
        peak = max(peak, _tree_rss(process.pid))
        if not killed and (time.monotonic() - start > hard or peak > 2 * GIB):
            os.killpg(process.pid, signal.SIGKILL)
            killed = True
        time.sleep(0.05)
    seconds = time.monotonic() - start
    process.returncode = os.waitstatus_to_exitcode(status)  # (reaped: Popen must not wait)
    return None if killed else process.returncode, seconds, peak


def _within_bounds(*args: str | Path) -> None:
    code, seconds, peak = _bounded(*args)
    assert code in (0, 2), f"exit {code} after {seconds:.1f} s, peak {peak / GIB:.2f} GiB"
    assert seconds < 10, f"{seconds:.1f} s"
    assert peak < GIB, f"peak {peak / GIB:.2f} GiB"


def _nested_sequence_input(depth: int) -> onnx.ModelProto:
    nested = h.make_tensor_type_proto(T.FLOAT, [2])
    for _ in range(depth):
        nested = h.make_sequence_type_proto(nested)
    nodes = [h.make_node("Identity", ["xs"], ["ys"]), *_concat("z", "z")]
    return _model(
        nodes,
        [h.make_value_info("xs", nested), _float("z", [2])],
        [h.make_value_info("ys", nested), _float("y", [4])],
    )


def _fan_out(depth: int, calls: int) -> onnx.ModelProto:
    """F_i calls F_{i+1} ``calls`` times in a row, ``depth`` levels; F_depth is one Relu
    (domain 'f': the model stays under 2 KB)."""
    opsets = [h.make_opsetid("", 18), h.make_opsetid("f", 1)]
    relu = [h.make_node("Relu", ["a"], ["b"])]
    functions = [h.make_function("f", f"F{depth}", ["a"], ["b"], relu, opsets)]
    for level in range(depth - 1, -1, -1):
        chain = ["a", *(f"t{k}" for k in range(calls - 1)), "b"]
        body = [
            h.make_node(f"F{level + 1}", [chain[k]], [chain[k + 1]], domain="f")
            for k in range(calls)
        ]
        functions.append(h.make_function("f", f"F{level}", ["a"], ["b"], body, opsets))
    nodes = [h.make_node("F0", ["x"], ["r"], domain="f"), *_concat("r", "r")]
    graph = h.make_graph(nodes, "g", [_float("x", [2])], [_float("y", [4])])
    return h.make_model(graph, opset_imports=opsets, ir_version=8, functions=functions)


def _unused_functions(count: int) -> onnx.ModelProto:
    functions = [
        h.make_function("local", f"U{k}", ["a"], ["b"], [h.make_node("Relu", ["a"], ["b"])], LOCAL)
        for k in range(count)
    ]
    return _model(_concat(), [_float("x", [2])], [_float("y", [4])], functions=functions)


BOUNDED: dict[str, tuple[Callable[[], onnx.ModelProto] | None, tuple[str, ...]]] = {
    "sequence-nested-20-deep-check": (lambda: _nested_sequence_input(20), ("--check",)),
    "sequence-nested-12-deep-check": (lambda: _nested_sequence_input(12), ("--check",)),
    "functions-2-calls-24-deep": (lambda: _fan_out(24, 2), ()),
    "functions-3-calls-16-deep": (lambda: _fan_out(16, 3), ()),
    "check-runs-1000000": (None, ("--check", "--check-runs", "1000000")),
    "check-runs-100000-whole": (None, ("--check", "--check-whole", "--check-runs", "100000")),
    "2000-unused-functions-check": (lambda: _unused_functions(2000), ("--check",)),
}


@pytest.mark.parametrize("case", BOUNDED)
def test_3_a_small_model_finishes_within_bounds(tmp_path: Path, case: str) -> None:
    build, options = BOUNDED[case]
    model = SAMPLE if build is None else _save(build(), tmp_path / "m.onnx")
    _within_bounds("optimize", model, "-o", tmp_path / "out.onnx", "-q", *options)


def _doubling(steps: int) -> onnx.ModelProto:
    """A list whose one element is concatenated onto itself ``steps`` times in a Loop: 8
    bytes in, ``8 * 2**steps`` bytes in the original's run (the rewrite leaves it)."""
    sequence = h.make_tensor_sequence_value_info
    body = h.make_graph(
        [
            h.make_node("ConcatFromSequence", ["sq"], ["t"], axis=0),
            h.make_node("SequenceInsert", ["sq", "t"], ["sq2"]),
            h.make_node("Identity", ["cin"], ["cout"]),
        ],
        "b",
        [
            h.make_tensor_value_info("i", T.INT64, []),
            h.make_tensor_value_info("cin", T.BOOL, []),
            sequence("sq", T.FLOAT, None),
        ],
        [h.make_tensor_value_info("cout", T.BOOL, []), sequence("sq2", T.FLOAT, None)],
    )
    nodes = [
        h.make_node("Constant", [], ["M"], value=numpy_helper.from_array(np.array(steps))),
        h.make_node("Constant", [], ["C"], value=numpy_helper.from_array(np.array(True))),
        h.make_node("SequenceConstruct", ["x"], ["s0"]),
        h.make_node("Loop", ["M", "C", "s0"], ["sl"], body=body),
        h.make_node("SequenceLength", ["sl"], ["y"]),
    ]
    return _model(nodes, [_float("x", [2])], [h.make_tensor_value_info("y", T.INT64, [])])


def test_3_check_of_a_model_whose_run_needs_24_gb_is_bounded(tmp_path: Path) -> None:
    """--check runs the original: a 400-byte model whose run would take 24 GB is stopped at
    --check's memory bound, said in the 'not verified' line (exit 4), and still written."""
    model = _save(_doubling(30), tmp_path / "m.onnx")
    out = tmp_path / "out.onnx"
    code, seconds, peak = _bounded("optimize", model, "-o", out, "--check")
    assert code == 4, f"exit {code} after {seconds:.1f} s, peak {peak / GIB:.2f} GiB"
    assert seconds < 10 and peak < 2 * GIB
    assert out.exists()
    result = run_cli("optimize", _save(_doubling(30), tmp_path / "n.onnx"), "-o", out, "--check")
    assert "memory to run (--check's bound)" in result.stdout + result.stderr


def test_3_inspect_of_a_function_fan_out_finishes_within_bounds(tmp_path: Path) -> None:
    model = _save(_fan_out(24, 2), tmp_path / "m.onnx")
    _within_bounds("inspect", model)


# -- 4. model text reaches the terminal escaped ---------------------------------------------------


def _named(name: str) -> onnx.ModelProto:
    nodes = [
        h.make_node("SequenceConstruct", ["x", "x"], ["s"], name=name + "1"),
        h.make_node("ConcatFromSequence", ["s"], ["y"], axis=0, name=name + "2"),
        h.make_node("SplitToSequence", ["x"], ["q"], name=name + "3"),
        h.make_node("SequenceLength", ["q"], ["n"], name=name + "4"),
    ]
    return _model(
        nodes, [_float("x", [3])], [_float("y", [6]), h.make_tensor_value_info("n", T.INT64, [])]
    )


INJECTED = "FAKE"


def _escaped(result: subprocess.CompletedProcess[str]) -> None:
    text = result.stdout + result.stderr
    unprintable = {c for c in text if not c.isprintable() and c != "\n"}
    assert not unprintable, (sorted(unprintable), text)
    assert not [line for line in text.splitlines() if line.startswith(INJECTED)], text


NAMES = {
    "osc-title": "\x1b]0;pwned\x07",
    "clear-screen": "\x1b[2J",
    "carriage-return": f"a\r{INJECTED} ok",
    "newline": f"a\n{INJECTED} wrote /etc/passwd\n",
    # (what a terminal takes for a line break or hides: not only the C0 controls)
    "line-separator": f"a\u2028{INJECTED} ok",
    "next-line": f"a\x85{INJECTED} ok",
    "paragraph-separator": f"a\u2029{INJECTED} ok",
    "bidi-override": "a\u202egnp.exe",
    "zero-width": "a\u200b\u2066b",
    "delete": "a\x7fb",
}


@pytest.mark.parametrize("name", NAMES)
def test_4_node_names_in_verbose_lines_are_escaped(tmp_path: Path, name: str) -> None:
    model = _save(_named(NAMES[name]), tmp_path / "m.onnx")
    result = run_cli("optimize", model, "-o", tmp_path / "out.onnx", "-v")
    assert result.returncode == 0, result.stderr
    _escaped(result)


@pytest.mark.parametrize("name", ["clear-screen", "newline"])
def test_4_node_names_in_inspect_are_escaped(tmp_path: Path, name: str) -> None:
    model = _save(_named(NAMES[name]), tmp_path / "m.onnx")
    result = run_cli("inspect", model)
    assert result.returncode == 0, result.stderr
    _escaped(result)


@pytest.mark.parametrize(
    ("op_type", "domain"),
    [("Bad\x1b[2JOp", ""), ("Op", "dom\x1b]0;x\x07"), (f"Op\n{INJECTED}", "")],
    ids=["op-type", "domain", "newline-op-type"],
)
def test_4_an_op_in_the_refusal_is_escaped(tmp_path: Path, op_type: str, domain: str) -> None:
    nodes = [h.make_node(op_type, ["x"], ["r"], domain=domain), *_concat("r", "r")]
    model = _save(_model(nodes, [_float("x", [2])], [_float("y", [4])]), tmp_path / "m.onnx")
    result = run_cli("optimize", model, "-o", tmp_path / "out.onnx")
    _refused(result)
    _escaped(result)


@pytest.mark.parametrize(
    "name",
    [f"x\n{INJECTED} ok   evil.onnx: sequence ops 9 -> 0\n.onnx", f"cr\r{INJECTED} ok.onnx"],
    ids=["newline", "carriage-return"],
)
def test_4_a_file_name_in_folder_mode_prints_no_fake_line(tmp_path: Path, name: str) -> None:
    source = tmp_path / "in"
    shutil.copy(SAMPLE, _save(b"", source / name))
    result = run_cli("optimize", source, "-o", tmp_path / "out")
    assert result.returncode == 0, result.stderr
    _escaped(result)


# -- 5. a graph output listed twice -----------------------------------------------------------


def _listed_twice(outputs: Sequence[str]) -> onnx.ModelProto:
    nodes = [*_concat("x", "x", "Y"), h.make_node("SequenceLength", ["Y_s"], ["n"])]
    infos = {
        "Y": _float("Y", [4]),
        "n": h.make_tensor_value_info("n", T.INT64, []),
        "x": _float("x", [2]),
    }
    return _model(nodes, [infos["x"]], [infos[name] for name in outputs])


@pytest.mark.parametrize("outputs", [["Y", "Y"], ["n", "Y", "n"]], ids=["Y-Y", "n-Y-n"])
def test_5_an_output_listed_twice_keeps_its_name(tmp_path: Path, outputs: list[str]) -> None:
    model = _save(_listed_twice(outputs), tmp_path / "m.onnx")
    out = tmp_path / "out.onnx"
    result = run_cli("optimize", model, "-o", out, "-q")
    assert result.returncode == 0, result.stderr
    assert [o.name for o in onnx.load(out).graph.output] == outputs
    checked = run_cli("optimize", model, "-o", tmp_path / "checked.onnx", "-q", "--check")
    assert checked.returncode == 0, checked.stderr


# -- 6. ONNX Runtime is not imported where it is not used ---------------------------------------

_IMPORTED = """
import sys
from seqpasses.cli import main
try:
    code = main(sys.argv[1:])
except SystemExit as exit:
    code = exit.code
print(code, "onnxruntime" in sys.modules)
"""


def _ort_imported(*args: str | Path) -> bool:
    result = subprocess.run(
        [sys.executable, "-c", _IMPORTED, *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    code, imported = result.stdout.split()[-2:]
    assert code in ("0", "None"), result.stderr
    return imported == "True"


def _many_nodes(count: int = 1200) -> onnx.ModelProto:
    nodes = [h.make_node("Relu", [f"r{k}" if k else "x"], [f"r{k + 1}"]) for k in range(count)]
    return _model([*nodes, *_concat(f"r{count}", "x")], [_float("x", [2])], [_float("y", [4])])


def _no_sequence_op() -> onnx.ModelProto:
    nodes = [h.make_node("Relu", ["x"], ["r"]), h.make_node("Add", ["r", "x"], ["y"])]
    return _model(nodes, [_float("x", [2])], [_float("y", [2])])


@pytest.mark.parametrize("command", ["shapes"])  # (inspect runs optimize's ORT self-check)
@pytest.mark.parametrize("sample", ["unbind_stack.onnx", "split_edit_cat.onnx"])
def test_6_read_only_commands_do_not_import_onnxruntime(command: str, sample: str) -> None:
    assert not _ort_imported(command, SAMPLES / sample)


@pytest.mark.parametrize(
    "build", [_many_nodes, _no_sequence_op], ids=["1200-nodes", "no-sequence-op"]
)
def test_6_optimize_without_check_where_no_runtime_load_is_due(
    tmp_path: Path, build: Callable[[], onnx.ModelProto]
) -> None:
    model = _save(build(), tmp_path / "m.onnx")
    assert not _ort_imported("optimize", model, "-o", tmp_path / "out.onnx", "-q")

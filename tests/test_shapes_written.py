"""``seqpasses shapes IN -o OUT``: the model with every value seqpasses can type declared, and
nothing else changed; every claim it writes holds on a run (ONNX Runtime, every value of the
main graph fetched); inside bodies no list's element shape is claimed that a run refutes
(tf2onnx declares its lists' elements rank 0)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest

import seqpasses
from helpers import SAMPLES, run_cli
from seqpasses.verification import inputs_that_run

MODELS = sorted(
    p
    for p in SAMPLES.rglob("*.onnx")
    if "sklearn" not in p.name  # (onnx_ir cannot hold ZipMap's maps: no shapes inferred)
)


def _claims(model: onnx.ModelProto) -> dict[str, list[int | str | None]]:
    graph = model.graph
    found: dict[str, list[int | str | None]] = {}
    for info in (*graph.value_info, *graph.output):
        t = info.type
        if not t.HasField("tensor_type") or not t.tensor_type.HasField("shape"):
            continue
        found[info.name] = [
            d.dim_value if d.HasField("dim_value") else (d.dim_param or None)
            for d in t.tensor_type.shape.dim
        ]
    return found


def _run_every_value(path: Path, names: list[str]) -> dict[str, np.ndarray] | None:
    feeds = inputs_that_run(path)
    if feeds is None:
        return None
    model = onnx.load(path)
    present = {o.name for o in model.graph.output}
    for name in names:
        if name not in present:
            model.graph.output.append(onnx.helper.make_empty_tensor_value_info(name))
    options = ort.SessionOptions()
    options.log_severity_level = 4
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    try:
        session = ort.InferenceSession(model.SerializeToString(), options)
        outputs = session.run(None, feeds)
    except Exception:
        return None
    return {o.name: np.asarray(v) for o, v in zip(model.graph.output, outputs, strict=True)}


@pytest.mark.parametrize("path", MODELS, ids=lambda p: p.relative_to(SAMPLES).as_posix())
def test_written_shapes_hold_on_a_run(path: Path, tmp_path: Path) -> None:
    out = tmp_path / "typed.onnx"
    result = run_cli("shapes", path, "-o", out, "-q")
    assert result.returncode == 0, result.stderr
    before, after = onnx.load(path), onnx.load(out)
    # nothing but declarations changed
    assert [(n.op_type, list(n.input), list(n.output)) for n in before.graph.node] == [
        (n.op_type, list(n.input), list(n.output)) for n in after.graph.node
    ]
    try:
        onnx.checker.check_model(before, full_check=True)
    except Exception:
        pass
    else:
        onnx.checker.check_model(after, full_check=True)
    claims = _claims(after)
    given = {o.name: o.type for o in before.graph.output}
    for output in after.graph.output:  # (the model's own signature, as declared: not ours)
        if given.get(output.name) == output.type:
            claims.pop(output.name, None)
    values = _run_every_value(out, sorted(claims))
    if values is None:
        return  # (no input set the model runs on: nothing to settle)
    sizes: dict[str, int] = {}
    for name, dims in claims.items():
        if name not in values:
            continue
        shape = values[name].shape
        assert len(dims) == len(shape), f"{name}: claimed rank {len(dims)}, ran {shape}"
        for claimed, actual in zip(dims, shape, strict=True):
            if isinstance(claimed, int):
                assert claimed == actual, f"{name}: claimed {dims}, ran {shape}"
            elif isinstance(claimed, str) and not claimed.startswith("unk__"):
                assert sizes.setdefault(claimed, actual) == actual, f"{name}: {claimed}"


def test_bodies_are_typed_and_lists_in_them_claim_no_element_shape(tmp_path: Path) -> None:
    path = SAMPLES / "tf2onnx" / "tf_ragged_rows_concat.onnx"
    out = tmp_path / "typed.onnx"
    assert run_cli("shapes", path, "-o", out, "-q").returncode == 0
    loop = next(n for n in onnx.load(out).graph.node if n.op_type == "Loop")
    body = loop.attribute[0].g
    typed = [i for i in body.value_info if i.type.WhichOneof("value")]
    assert len(typed) >= 17  # (onnx's own inference types 17 values there)
    for info in body.value_info:  # (the body's inputs and outputs are declared as given)
        if info.type.HasField("sequence_type"):
            assert not info.type.sequence_type.elem_type.tensor_type.HasField("shape"), info
    assert seqpasses.infer_shapes(path) == onnx.load(out)  # (the API is the same path)


def test_input_shapes_pin_symbols(tmp_path: Path) -> None:
    out = tmp_path / "typed.onnx"
    result = run_cli(
        "shapes", SAMPLES / "unbind_stack.onnx", "-o", out, "--input-shape", "x:4,3", "-q"
    )
    assert result.returncode == 0, result.stderr
    claims = _claims(onnx.load(out))
    assert claims["stacked"] == [4, 3] and claims["third"] == [3]


def _guess(folder: Path) -> Path:
    """An exporter's guess: the concatenation of two [2,3] tensors declared rank 3."""
    path = folder / "guess.onnx"
    onnx.save(
        onnx.parser.parse_model(
            """<ir_version: 8, opset_import: ["" : 17]>
            g (float[2,3] x, float[2,3] y) => (float[2,2,3] z) {
                s = SequenceConstruct(x, y)
                z = ConcatFromSequence<axis = 0>(s)
            }"""
        ),
        path,
    )
    return path


def _body_claims(body: onnx.GraphProto) -> dict[str, list[int | str]]:
    """The dims a body's ``value_info`` declares of its tensors (a name for a symbol)."""
    return {
        info.name: [d.dim_value or d.dim_param for d in info.type.tensor_type.shape.dim]
        for info in body.value_info
        if info.type.HasField("tensor_type") and info.type.tensor_type.HasField("shape")
    }


def test_a_refuted_output_declaration_is_replaced_and_said(tmp_path: Path) -> None:
    path, out = _guess(tmp_path), tmp_path / "typed.onnx"
    result = run_cli("shapes", path, "-o", out)
    assert result.returncode == 0, result.stderr
    assert "output 'z': declared [2,2,3]" in result.stdout + result.stderr
    assert _claims(onnx.load(out))["z"] == [4, 3]
    ran = ort.InferenceSession(out.read_bytes()).run(
        None, {"x": np.ones((2, 3), np.float32), "y": np.ones((2, 3), np.float32)}
    )
    assert ran[0].shape == (4, 3)


def test_the_table_shows_pinned_input_shapes_and_the_write_is_said(tmp_path: Path) -> None:
    source, out = SAMPLES / "split_edit_cat.onnx", tmp_path / "typed.onnx"
    free = run_cli("shapes", source)
    assert "[B,10]" in free.stdout
    pinned = run_cli("shapes", source, "--input-shape", "x:5,6")
    assert pinned.returncode == 0 and "[5,10]" in pinned.stdout and "[B,10]" not in pinned.stdout
    written = run_cli("shapes", source, "--input-shape", "x:5,6", "-o", out)
    assert written.returncode == 0 and "[5,10]" in written.stdout
    # (as optimize says it: on standard output, unless the model went there)
    assert f"wrote {out}" in written.stdout and "wrote" not in written.stderr
    assert "not known" not in written.stderr  # (no value shaped without a type)
    assert _claims(onnx.load(out))["y"] == [5, 10]
    quiet = run_cli("shapes", source, "-o", out, "-q")
    assert quiet.returncode == 0 and quiet.stdout == quiet.stderr == ""


def test_every_command_that_writes_refuses_a_dash_and_keeps_a_model_on_stdout_whole(
    tmp_path: Path,
) -> None:
    source = SAMPLES / "unbind_stack.onnx"
    for command in ("optimize", "shapes"):
        result = run_cli(command, source, "-o", "-")
        assert result.returncode == 2 and "-o -: name the output file" in result.stderr
        assert not Path("-").exists()
    written = subprocess.run(
        [sys.executable, "-m", "seqpasses", "shapes", str(source), "-o", "/dev/stdout"],
        capture_output=True,
        check=False,
    )
    assert written.returncode == 0
    onnx.checker.check_model(onnx.load_from_string(written.stdout))  # (the table went to stderr)
    assert b"stacked" in written.stderr


def test_strict_fails_on_a_disproved_declaration_and_writes_nothing(tmp_path: Path) -> None:
    path, out = _guess(tmp_path), tmp_path / "typed.onnx"
    result = run_cli("shapes", path, "-o", out, "--strict")
    assert result.returncode == 1
    assert "declared [2,2,3], which seqpasses disproves" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and not out.exists()
    kept = run_cli("shapes", SAMPLES / "unbind_stack.onnx", "-o", out, "--strict", "-q")
    assert kept.returncode == 0 and out.exists()


BODY_LIST = """<ir_version: 8, opset_import: ["" : 17]>
g (float[2] a, float[2] b, int64 n) => (float[?,2] out) {
    cond = Constant<value = bool {1}>()
    out = Loop(n, cond) <body = body (int64 i, bool c) => (bool c_out, float[2] w) {
        l = SequenceConstruct(a, b)
        two = Constant<value = int64 {2}>()
        k = Mod(i, two)
        z = SequenceAt(l, k)
        u = Neg(z)
        w = Identity(u)
        c_out = Identity(c)
    }>
}"""


def test_what_the_walk_proves_in_a_body_is_declared_and_what_follows(tmp_path: Path) -> None:
    # a list built in the body, read at a run-time position: no list's element shape is taken
    # from onnx, but the walk holds the list (two [2] tensors), so the read is [2], and the
    # Neg of it is typed again
    path = tmp_path / "body_list.onnx"
    onnx.save(onnx.parser.parse_model(BODY_LIST), path)
    typed = seqpasses.infer_shapes(path)
    body = typed.graph.node[1].attribute[0].g
    claims = _body_claims(body)
    assert claims["z"] == [2] and claims["u"] == [2]
    onnx.checker.check_model(typed, full_check=True)
    feeds = {"a": np.ones(2, np.float32), "b": np.zeros(2, np.float32), "n": np.array(3)}
    ran = ort.InferenceSession(typed.SerializeToString()).run(None, feeds)[0]
    assert ran.shape == (3, 2)


def test_constants_decide_dims_onnx_leaves_unknown() -> None:
    # a Pad of constant pads on a symbol: N+64 (ONNX Runtime's tool says the same)
    facts = seqpasses.shape_facts(SAMPLES / "reflect_pad_frames.onnx")
    assert next(v.shape for v in facts.values if v.name == "padded") == (1, "N+64")
    # in a loop body, a Slice whose axes and steps are Unsqueezed constants: the sliced axis
    # by number, the other kept (m), and what reads it inferred again
    typed = seqpasses.infer_shapes(SAMPLES / "torch" / "ts_stack_columns.onnx")
    body = next(n for n in typed.graph.node if n.op_type == "Loop").attribute[0].g
    claims = _body_claims(body)
    assert claims["/Slice_output_0"] == [2, "m"] and claims["/Gather_1_output_0"] == [2]
    onnx.checker.check_model(typed, full_check=True)


GROWING = """<ir_version: 8, opset_import: ["" : 17]>
g (float[2] a, int64 n) => (float[?] out) {
    cond = Constant<value = bool {1}>()
    start = SequenceConstruct(a)
    grown = Loop(n, cond, start) <body = body (int64 i, bool c, seq(float[?]) l)
                                      => (bool c_out, seq(float[?]) l_out) {
        last = Constant<value = int64 {-1}>()
        e = SequenceAt(l, last)
        f = Concat<axis = 0>(e, e)
        l_out = SequenceInsert(l, f)
        c_out = Identity(c)
    }>
    out = ConcatFromSequence<axis = 0>(grown)
}"""


def test_a_list_a_loop_carries_has_its_elements_proven_by_induction(tmp_path: Path) -> None:
    # nested loops (TorchScript): the outer list's elements are rank 1, each a stack of scalars
    facts = seqpasses.shape_facts(SAMPLES / "torch" / "ts_nested_loops.onnx")
    assert next(v.shape for v in facts.values if v.name == "/Loop_1_output_0") == (None,)
    # a list whose elements grow every iteration ([2], [4], [8], ...): rank 1, the dim unknown
    path = tmp_path / "growing.onnx"
    onnx.save(onnx.parser.parse_model(GROWING), path)
    facts = seqpasses.shape_facts(path)
    assert next(v.shape for v in facts.values if v.name == "grown") == (None,)
    assert next(v.shape for v in facts.values if v.name == "out") == (None,)
    feeds = {"a": np.ones(2, np.float32), "n": np.array(3)}
    ran = ort.InferenceSession(path.read_bytes()).run(None, feeds)[0]
    assert ran.shape == (2 + 4 + 8 + 16,)


def _shapes_written(
    model: onnx.ModelProto, source: Path
) -> tuple[subprocess.CompletedProcess[str], dict[str, list[str]], onnx.GraphProto]:
    """``shapes --all -o`` on ``model`` (saved as ``source``): what ran, the table's rows by
    value name, and the written model's Loop body."""
    out = source.with_suffix(".typed.onnx")
    onnx.save(model, source)
    printed = run_cli("shapes", source, "--all", "-o", out)
    assert printed.returncode == 0, printed.stderr
    rows = {line.split()[0]: line.split()[1:] for line in printed.stdout.splitlines()[2:]}
    body = next(n for n in onnx.load(out).graph.node if n.op_type == "Loop").attribute[0].g
    return printed, rows, body


def test_the_table_prints_what_the_written_model_declares(tmp_path: Path) -> None:
    # a Constant made in a Loop body: --all printed it "unknown" while -o declared it [2,3]
    model = onnx.parser.parse_model("""<ir_version: 8, opset_import: ["" : 18]>
    g (float[2,3] x, int64 n) => (float[2,3] y) {
      t = Constant<value = bool {1}>()
      y = Loop(n, t, x) <body = body (int64 i, bool c, float[?,?] h) => (bool co, float[?,?] ho) {
        co = Identity(c)
        k = Constant<value = float[2,3] {1, 2, 3, 4, 5, 6}>()
        ho = Add(h, k)
      }>
    }""")
    source = tmp_path / "loop.onnx"
    printed, rows, body = _shapes_written(model, source)
    assert rows["k"][:4] == ["main/Loop.body", "tensor", "float", "[2,3]"], rows
    declared = {i.name: i.type.tensor_type.shape for i in body.value_info}
    assert [d.dim_value for d in declared["k"].dim] == [2, 3]
    # the carried value keeps [2,3] at every iteration (induction): printed and declared on
    # the body's own input and output too
    assert rows["h"][3] == rows["ho"][3] == "[2,3]", rows
    signature = {v.name: v.type.tensor_type.shape for v in [*body.input, *body.output]}
    assert [d.dim_value for d in signature["h"].dim] == [2, 3]
    assert [d.dim_value for d in signature["ho"].dim] == [2, 3]
    alone = run_cli("shapes", source, "--all")
    assert alone.stdout.splitlines()[1:] == printed.stdout.splitlines()[2:]  # (but "wrote")


def test_a_carried_value_that_grows_is_declared_no_size_in_its_body(tmp_path: Path) -> None:
    model = onnx.parser.parse_model("""<ir_version: 8, opset_import: ["" : 18]>
    g (float[2,3] x, int64 n) => (float[?,3] y) {
      t = Constant<value = bool {1}>()
      y = Loop(n, t, x) <body = body (int64 i, bool c, float[2,3] h) => (bool co, float[4,3] ho) {
        co = Identity(c)
        ho = Concat<axis = 0>(h, h)
      }>
    }""")
    source = tmp_path / "grow.onnx"
    _, rows, body = _shapes_written(model, source)
    # the exporter's guesses are gone; what holds at every iteration stays: the rank and the
    # dim that does not grow
    assert rows["h"][3] == rows["ho"][3] == "[?,3]", rows
    for value in [*body.input, *body.output, *body.value_info]:
        if value.name in ("h", "ho"):
            dims = value.type.tensor_type.shape.dim
            assert not dims[0].HasField("dim_value"), value
            assert dims[1].dim_value == 3, value
    runs = ort.InferenceSession(str(source.with_suffix(".typed.onnx"))).run(
        None, {"x": np.ones((2, 3), np.float32), "n": np.array(2)}
    )
    assert runs[0].shape == (8, 3)


def test_a_script_calling_onnx_runtimes_tool_runs_with_seqpasses_in_its_place(
    tmp_path: Path,
) -> None:
    """``symbolic_shape_infer.py --input X --output Y --auto_merge`` (and its other flags)
    is ``seqpasses shapes`` with the same arguments: the same model written as ``X -o Y``."""
    path = SAMPLES / "torch" / "ts_append_dynamic_cat.onnx"
    flags, plain = tmp_path / "flags.onnx", tmp_path / "plain.onnx"
    ort_like = run_cli(
        "shapes",
        "--input",
        path,
        "--output",
        flags,
        "--auto_merge",
        "--int_max",
        "2000000",
        "--guess_output_rank",
        "--verbose",
        "0",
    )
    assert ort_like.returncode == 0, ort_like.stderr
    assert run_cli("shapes", path, "-o", plain, "-q").returncode == 0
    assert flags.read_bytes() == plain.read_bytes()
    helped = run_cli("shapes", "--help")
    assert "--auto_merge" in helped.stdout and "symbolic_shape_infer" in helped.stdout


@pytest.mark.parametrize(
    ("given", "said"),
    [((), "the model is missing"), (("M", "--input", "M"), "the model is given twice")],
)
def test_the_model_named_twice_or_not_at_all_is_a_usage_error(
    given: tuple[str, ...], said: str, tmp_path: Path
) -> None:
    path = str(SAMPLES / "torch" / "ts_append_dynamic_cat.onnx")
    out = tmp_path / "out.onnx"
    result = run_cli("shapes", *(path if g == "M" else g for g in given), "-o", out)
    assert result.returncode == 2
    assert said in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.stderr and not out.exists()


def test_quiet_prints_nothing_without_an_output_too() -> None:
    path = SAMPLES / "torch" / "ts_append_dynamic_cat.onnx"
    quiet = run_cli("shapes", path, "-q")
    assert quiet.returncode == 0 and quiet.stdout == "" and quiet.stderr == ""
    assert "/Loop_output_0" in run_cli("shapes", path).stdout


def test_a_plain_model_is_typed_as_printed_without_the_rewrite_machinery(tmp_path: Path) -> None:
    # a model with no list, no subgraph and no function (a GRU+LSTM export): `shapes` needs
    # none of the rewrite rules, nor a second inference for its table, which prints what the
    # written model declares
    source = SAMPLES / "vision" / "ts_gru_lstm.onnx"
    out = tmp_path / "typed.onnx"
    code = (
        "import sys\n"
        "from seqpasses.cli import main\n"
        f"code = main(['shapes', {str(source)!r}, '--all', '-o', {str(out)!r}])\n"
        "loaded = {'seqpasses.transfer.table', 'seqpasses.walk.walker',\n"
        "          'seqpasses.passes.fold_sequences', 'seqpasses.transfer.loops'}\n"
        "print('LOADED', code, sorted(loaded & set(sys.modules)))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False
    )
    assert "LOADED 0 []" in result.stdout, result.stdout + result.stderr
    rows = {
        line.split()[0]: line.split()[4]
        for line in result.stdout.splitlines()[2:]
        if not line.startswith("LOADED")
    }
    graph = onnx.load(out).graph

    def text(info: onnx.ValueInfoProto) -> str:
        dims = info.type.tensor_type.shape.dim
        return "[" + ",".join(d.dim_param or str(d.dim_value) for d in dims) + "]"

    weights = {w.name for w in graph.initializer}  # (the table lists no weight)
    infos = [*graph.value_info, *graph.output]
    declared = {info.name: text(info) for info in infos if info.name not in weights}
    assert len(declared) > 40
    assert {name: rows.get(name) for name in declared} == declared

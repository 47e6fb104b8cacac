"""What an exporter declares of the values control flow makes is a guess, never a fact
(``passes/guesses.py``): a body's or branch's declared shapes, a body's dims named after the
inputs' (``alphas_length`` that is 32 inside and 90 outside), the main graph's declaration
of what a Loop gives, and a shape ``--input-shape`` pins (only the model's signature takes
it). On each model: ``optimize`` (with and without ``--input-shape``) and ``shapes -o``
write a model whose outputs are the input's on ONNX Runtime runs, with every optimization
on, and whose main-graph declarations no run refutes (a number, a rank, or one name bound to
two sizes)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from helpers import run_cli

HEADER = '<ir_version: 8, opset_import: ["" : 13]>\n'
HEADER15 = '<ir_version: 8, opset_import: ["" : 15]>\n'  # (Identity of a list)

# a loop that reads list L1 at its counter and appends each row: cat and last of what it got
READ_BY_A_LOOP = """
  L2 = Loop (n, t0, s0) <body = b2 (int64 j, bool d, seq(float) ri) => (bool do, seq(float) ro) {
    do = Identity(d)
    e = SequenceAt(L1, j)
    ro = SequenceInsert(ri, e)
  }>
  cat = ConcatFromSequence<axis = 0>(L2)
  m1 = Constant<value = int64 {-1}>()
  last = SequenceAt(L2, m1)
}"""

CASES: dict[str, tuple[str, list[dict[str, np.ndarray]], list[str]]] = {
    # a body carries h declared [batch_size, alphas_length] (really [2,32]); x is [batch, 90]
    "body namesake": (
        HEADER
        + """
agraph (float[batch, alphas_length] x, float[batch_size, 32] h0)
    => (float[batch, alphas_length] xr, float[?, ?] cat, float[?, ?] last) {
  M = Constant<value = int64 {3}>()
  cond = Constant<value = bool {1}>()
  s0 = SequenceEmpty<dtype=1>()
  last, seq = Loop (M, cond, h0, s0) <body = g (int64 i, bool c,
      float[batch_size, alphas_length] h, seq(float[batch_size, alphas_length]) sq)
      => (bool c2, float[batch_size, alphas_length] h2, seq(float[batch_size, alphas_length]) sq2) {
    c2 = Identity(c)
    one = Constant<value = float {1}>()
    h2 = Add(h, one)
    sq2 = SequenceInsert(sq, h2)
  }>
  cat = ConcatFromSequence<axis=1>(seq)
  xr = Relu(x)
}""",
        [{"x": (2, 90), "h0": (2, 32)}, {"x": (3, 90), "h0": (3, 32)}],
        ["x:2,90"],
    ),
    # a traced value_info: a is declared [5,3,2], and is x's [N,M,K]; a list of it, edited at
    # a run-time position, then laid end to end (a Reshape merging the list's axis: its
    # target took the declared 3 and 2, and gave [8,3,2] for [4,3,4])
    "declared value": (
        HEADER
        + """
agraph (float[N,M,K] x, int64 p) => (float[?,?,?] z, float[?,?,?] w) <float[5,3,2] a> {
  a = Relu(x)
  s = SequenceConstruct(a, a, a)
  e = SequenceErase(s, p)
  z = ConcatFromSequence<axis = 0, new_axis = 0>(e)
  w = ConcatFromSequence<axis = 1, new_axis = 0>(e)
}""",
        [{"x": (2, 3, 4), "p": 1}, {"x": (5, 3, 2), "p": -3}, {"x": (1, 2, 3), "p": 0}],
        ["x:2,3,4"],
    ),
    # both branches declare their output [k], the name of x's dim; they give 2k and k+1
    "branch namesake": (
        HEADER
        + """
agraph (float[k] x, bool b) => (float[?] cat, int64 n) {
  y = If (b) <then_branch = tb () => (float[k] yt) {
      yt = Concat<axis=0>(x, x)
  }, else_branch = eb () => (float[k] ye) {
      one = Constant<value = float[1] {1}>()
      ye = Concat<axis=0>(x, one)
  }>
  s = SequenceConstruct(x, y)
  cat = ConcatFromSequence<axis=0>(s)
  s2 = SplitToSequence<axis=0, keepdims=1>(y)
  n = SequenceLength(s2)
}""",
        [{"x": (4,), "b": True}, {"x": (3,), "b": False}],
        ["x:4"],
    ),
    # the body declares its carried h and its list's elements [4]: h doubles each iteration;
    # onnx's inference gives the loop's outputs the initial value's shape
    "carried numeric guess": (
        HEADER
        + """
agraph (float[3] x, int64 M) => (float[?] last, int64 cnt, int64 k, float[?] lastel) {
  cond = Constant<value = bool {1}>()
  one = Constant<value = float[1] {1}>()
  h0 = Concat<axis=0>(x, one)
  s0 = SequenceConstruct(h0)
  last, s = Loop (M, cond, h0, s0) <body = g (int64 i, bool c, float[4] h, seq(float[4]) sq)
      => (bool c2, float[4] h2, seq(float[4]) sq2) {
    c2 = Identity(c)
    h2 = Concat<axis=0>(h, h)
    sq2 = SequenceInsert(sq, h2)
  }>
  cnt = SequenceLength(s)
  t = SequenceConstruct(x, x)
  k = SequenceLength(t)
  mone = Constant<value = int64 {-1}>()
  lastel = SequenceAt(s, mone)
}""",
        [{"x": (3,), "M": 0}, {"x": (3,), "M": 2}],
        [],
    ),
    # the main graph declares the loop's output [2,90] (a trace's guess: it is [2,32]); a
    # SplitToSequence of it into columns, counted and read
    "main declaration of a loop output": (
        HEADER
        + """
agraph (float[2, 90] x, float[2, 32] h0) => (int64 n, float[?, ?] lastcol, float[?, ?] cat)
    <float[2, 90] last> {
  M = Constant<value = int64 {3}>()
  cond = Constant<value = bool {1}>()
  last = Loop (M, cond, h0) <body = g (int64 i, bool c, float[2, 90] h) => (bool c2, float[2, 90] h2) {
    c2 = Identity(c)
    h2 = Tanh(h)
  }>
  sp = SplitToSequence<axis=1, keepdims=1>(last)
  n = SequenceLength(sp)
  m1 = Constant<value = int64 {-1}>()
  lastcol = SequenceAt(sp, m1)
  s = SequenceConstruct(x, last)
  cat = ConcatFromSequence<axis=1>(s)
}""",
        [{"x": (2, 90), "h0": (2, 32)}],
        [],
    ),
    # a SequenceMap's body declares its element [k] (x's dim); the elements are 3 and 6 long
    "map body namesake": (
        HEADER.replace('"" : 13', '"" : 17')
        + """
agraph (float[k] x, float[6] z) => (float[?] cat, int64 n, float[?] e1) {
  s = SequenceConstruct(x, z)
  t = SequenceMap(s) <body = g (float[k] a) => (float[k] b) {
    b = Concat<axis=0>(a, a)
  }>
  cat = ConcatFromSequence<axis=0>(t)
  n = SequenceLength(t)
  one = Constant<value = int64 {1}>()
  e1 = SequenceAt(t, one)
}""",
        [{"x": (3,), "z": (6,)}, {"x": (2,), "z": (6,)}],
        ["x:3"],
    ),
    # a while loop whose carried v (declared [n], the name of x's dim) grows until a limit:
    # a pinned n written into the body would let ONNX Runtime fold Shape(v) and never stop
    "pinned namesake in a while loop": (
        HEADER
        + """
agraph (float[n] x, int64 limit) => (float[?] v_last, float[?] cat, int64 cnt, float[n] y) {
  cond = Constant<value = bool {1}>()
  s0 = SequenceEmpty<dtype=1>()
  v_last, s = Loop ("", cond, x, s0) <body = g (int64 i, bool c, float[n] v, seq(float[n]) sq)
      => (bool c2, float[n] v2, seq(float[n]) sq2) {
    z = Constant<value = float[1] {3}>()
    v2 = Concat<axis=0>(v, z)
    sq2 = SequenceInsert(sq, v2)
    shp = Shape(v2)
    zi = Constant<value = int64 {0}>()
    ln = Gather(shp, zi)
    c2 = Less(ln, limit)
  }>
  cat = ConcatFromSequence<axis=0>(s)
  cnt = SequenceLength(s)
  y = Relu(x)
}""",
        [{"x": (2,), "limit": 5}],
        ["x:2"],
    ),
    # a list graph output declared seq(float[2]) (rows 2, 4, 6 long: ONNX Runtime holds no
    # list to it), read by a second loop: trusted, its rows became one [n, 2] tensor
    "a list output's declared elements": (
        HEADER
        + """
agraph (float[2] x, int64 n) => (seq(float[2]) L1, float[?] cat, float[?] last) {
  s0 = SequenceEmpty<dtype=1>()
  t0 = Constant<value = bool {1}>()
  xf, L1 = Loop (n, t0, x, s0) <body = b (int64 i, bool c, float[?] xi, seq(float) si)
      => (bool co, float[?] xo, seq(float) so) {
    co = Identity(c)
    xo = Concat<axis = 0>(xi, x)
    so = SequenceInsert(si, xi)
  }>
"""
        + READ_BY_A_LOOP,
        [{"x": (2,), "n": 3}],
        [],
    ),
    # the same with a split list whose value_info says seq(float[2]) (its last row is 1 long)
    "a list's declared elements in value_info": (
        HEADER
        + """
agraph (float[N] x, int64 n) => (float[?] cat, float[?] last) <seq(float[2]) L1> {
  two = Constant<value = int64 {2}>()
  L1 = SplitToSequence<axis = 0>(x, two)
  s0 = SequenceEmpty<dtype=1>()
  t0 = Constant<value = bool {1}>()
"""
        + READ_BY_A_LOOP,
        [{"x": (5,), "n": 3}],
        [],
    ),
    # a Loop inside an If branch: onnx gives the loop's list its initial elements' shape [2],
    # and the If's output that (the run appends [3])
    "a loop in a branch": (
        HEADER15
        + """
agraph (float[2] x, int64 n, bool b) => (float[?] l) {
  s0 = SequenceConstruct(x)
  t0 = Constant<value = bool {1}>()
  out = If (b) <then_branch = tb () => (seq(float) a) {
    a = Loop (n, t0, s0) <body = g (int64 i, bool c, seq(float) si) => (bool co, seq(float) so) {
      co = Identity(c)
      p = Constant<value = float[3] {1, 2, 3}>()
      so = SequenceInsert(si, p)
    }>
  }, else_branch = eb () => (seq(float) bb) {
    bb = Identity(s0)
  }>
  m1 = Constant<value = int64 {-1}>()
  l = SequenceAt(out, m1)
}""",
        [{"x": (2,), "n": 1, "b": True}],
        [],
    ),
}


def _feeds(spec: dict[str, object], model: onnx.ModelProto) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    feeds: dict[str, np.ndarray] = {}
    for info in model.graph.input:
        given = spec[info.name]
        if info.type.tensor_type.elem_type == onnx.TensorProto.FLOAT:
            assert isinstance(given, tuple)
            feeds[info.name] = rng.standard_normal(given).astype(np.float32)
        elif info.type.tensor_type.elem_type == onnx.TensorProto.BOOL:
            feeds[info.name] = np.array(given)
        else:
            feeds[info.name] = np.array(given, dtype=np.int64)
    return feeds


_RUN = """
import sys, numpy as np, onnxruntime as ort
options = ort.SessionOptions()
options.log_severity_level = 4
session = ort.InferenceSession(sys.argv[1], options)
feeds = dict(np.load(sys.argv[2]))
flat = lambda v: np.concatenate([np.ravel(e) for e in v] or [np.zeros(0)])  # (a list)
np.savez(sys.argv[3], *[flat(v) if isinstance(v, list) else v for v in session.run(None, feeds)])
"""


def _outputs(path: Path, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    """The model's outputs on ONNX Runtime (every optimization on), in a process of its own
    that may take a minute: a model that never stops fails the test instead of hanging it."""
    given, taken = path.with_suffix(".feeds.npz"), path.with_suffix(".outputs.npz")
    np.savez(given, **feeds)
    ran = subprocess.run(
        [sys.executable, "-c", _RUN, str(path), str(given), str(taken)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert ran.returncode == 0, ran.stderr[-400:]
    with np.load(taken) as found:
        return [found[f"arr_{k}"] for k in range(len(found.files))]


def _every_value(path: Path, feeds: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Every main-graph tensor of a run, on ONNX Runtime with every optimization on."""
    model = onnx.load(path)
    present = {o.name for o in model.graph.output}
    for node in model.graph.node:
        for name in node.output:
            if name and name not in present:
                model.graph.output.append(onnx.helper.make_empty_tensor_value_info(name))
    options = ort.SessionOptions()
    options.log_severity_level = 4
    try:
        session = ort.InferenceSession(model.SerializeToString(), options)
    except Exception:  # (a sequence among the values: the outputs alone)
        session = ort.InferenceSession(path.read_bytes(), options)
    names = [o.name for o in session.get_outputs()]
    values = dict(zip(names, session.run(None, feeds), strict=True))
    return {k: v for k, v in values.items() if isinstance(v, np.ndarray)}


def _refuted(path: Path, values: dict[str, np.ndarray]) -> list[str]:
    """The main graph's declarations the run's values refute."""
    model = onnx.load(path)
    bound: dict[str, tuple[int, str]] = {}
    found = []
    graph = model.graph
    for info in (*graph.input, *graph.value_info, *graph.output):
        kind = info.type.WhichOneof("value")
        if kind != "tensor_type" or not info.type.tensor_type.HasField("shape"):
            continue
        if info.name not in values:
            continue
        shape = values[info.name].shape
        dims = info.type.tensor_type.shape.dim
        if len(dims) != len(shape):
            found.append(f"{info.name}: rank {len(dims)}, run {shape}")
            continue
        for dim, size in zip(dims, shape, strict=True):
            if dim.HasField("dim_value") and dim.dim_value != size:
                found.append(f"{info.name}: {dim.dim_value}, run {shape}")
            elif dim.dim_param:
                first = bound.setdefault(dim.dim_param, (size, info.name))
                if first[0] != size:
                    found.append(f"{dim.dim_param}: {first[1]} {first[0]}, {info.name} {size}")
    return found


DECLARED_BY_THE_MODEL = {"declared value"}
"""Cases whose guess is the model's own declaration of a value the main graph makes, which
``shapes`` keeps where nothing disproves it (as ONNX Runtime's tool does; docs/shapes.md);
``optimize`` never builds on it."""


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_guess_is_neither_trusted_nor_spread(name: str, tmp_path: Path) -> None:
    text, runs, pins = CASES[name]
    model = onnx.parser.parse_model(text)
    source = tmp_path / "in.onnx"
    onnx.save(model, source)
    commands = [["optimize", "-o"], ["shapes", "-o"]]
    if name in DECLARED_BY_THE_MODEL:
        commands = commands[:1]
    commands += [[*c, f"--input-shape={p}"] for c in commands for p in pins]
    for k, command in enumerate(commands):
        out = tmp_path / f"out{k}.onnx"
        verb, flag, *rest = command
        result = run_cli(verb, source, flag, out, "-q", *rest)
        assert result.returncode == 0, (command, result.stderr)
        for spec in runs:
            feeds = _feeds(spec, model)
            if rest and any(
                feeds[p.split(":")[0].split("=")[1]].shape
                != tuple(int(d) for d in p.split(":")[1].split(","))
                for p in rest
            ):
                continue  # (a pinned model runs on inputs of the pinned shape only)
            expected = _outputs(source, feeds)
            got = _outputs(out, feeds)  # (first: the output stops, as the input does)
            for a, b in zip(expected, got, strict=True):
                np.testing.assert_allclose(np.asarray(b), np.asarray(a), rtol=1e-5, atol=1e-5)
            assert _refuted(out, _every_value(out, feeds)) == [], (command, spec)


def test_a_graph_outputs_declared_numbers_are_not_built_on() -> None:
    # a graph output declared [5,3,2] that runs as x's [N,M,K] (ONNX Runtime only warns):
    # the signature stays as declared, and the merge of a list of it reads its dims at run
    # time (it built [-1,3,2] from the declaration, and gave [8,3,2] for [4,3,4]). ONNX
    # Runtime's own graph optimizer folds a Shape of such a value to the declared numbers,
    # so the model is compared with its optimizations off (docs/semantics.md)
    import seqpasses

    model = onnx.parser.parse_model(
        HEADER
        + """
agraph (float[N,M,K] x, int64 p) => (float[?,?,?] z, float[5,3,2] a) {
  a = Relu(x)
  s = SequenceConstruct(a, a, a)
  e = SequenceErase(s, p)
  z = ConcatFromSequence<axis = 0, new_axis = 0>(e)
}"""
    )
    optimized = seqpasses.optimize(model)
    dims = optimized.graph.output[1].type.tensor_type.shape.dim
    assert [d.dim_value for d in dims] == [5, 3, 2]
    assert not any(n.op_type.startswith("Sequence") for n in optimized.graph.node)
    for shape, p in (((2, 3, 4), 1), ((5, 3, 2), -3), ((1, 2, 3), 0)):
        feeds = {"x": np.ones(shape, np.float32), "p": np.array(p)}
        report = seqpasses.verify(model, optimized, inputs=[feeds], failures="must_match")
        assert report.ok, report.mismatch


@pytest.mark.parametrize(
    "reader",
    ["ConcatFromSequence<axis = 1, new_axis = 0>(s)", "SequenceLength(u)"],
    ids=["concat", "length"],
)
def test_an_initializer_the_caller_may_override_keeps_its_signature(reader: str) -> None:
    # w is an input with a default (an initializer of [4,3]): the caller may feed [5,3]; its
    # declared [A,B] stays, and nothing is computed from the default's shape (a split of it
    # into 4 rows, a length of 4)
    import seqpasses

    model = onnx.parser.parse_model(
        HEADER
        + f"""
agraph (float[A,B] w) => (z) <float[4,3] w = {{1,2,3,4,5,6,7,8,9,10,11,12}}> {{
  s = SequenceConstruct(w, w)
  u = SplitToSequence<axis = 0, keepdims = 0>(w)
  z = {reader}
}}"""
    )
    optimized = seqpasses.optimize(model)
    dims = optimized.graph.input[0].type.tensor_type.shape.dim
    assert [d.dim_param for d in dims] == ["A", "B"]
    assert not any(n.op_type.startswith(("Sequence", "Split")) for n in optimized.graph.node)
    for shape in ((5, 3), (4, 2), (4, 3)):
        feeds = {"w": np.ones(shape, np.float32)}
        report = seqpasses.verify(model, optimized, inputs=[feeds], failures="must_match")
        assert report.ok, report.mismatch

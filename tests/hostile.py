"""Hostile and careless inputs, built by hand: each builder writes one case into a folder and
returns the model's path. The tests (test_security.py, test_limits.py) run them; run this file
to measure every case through the CLI (exit code, seconds, peak memory of the child):

    python tests/hostile.py [--timeout 120] [NAME ...]
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper

SECRET = b"the secret bytes of a file outside the model's folder\n"


def _save(model: onnx.ModelProto, folder: Path, name: str = "model.onnx") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_bytes(model.SerializeToString())
    return path


def _external(name: str, location: str, dims: list[int], offset: int = 0, length: int = 0) -> T:
    """A uint8 tensor whose data is ``location`` (nothing is read here)."""
    tensor = T(name=name, data_type=T.UINT8, dims=dims)
    tensor.data_location = T.EXTERNAL
    entries = [("location", location)]
    if offset:
        entries.append(("offset", str(offset)))
    if length:
        entries.append(("length", str(length)))
    for key, value in entries:
        entry = tensor.external_data.add()
        entry.key, entry.value = key, value
    return tensor


def _leak_graph(reader: str) -> onnx.GraphProto:
    """``y = SequenceAt(SequenceConstruct(c0..c255), byte0)``: the file's first byte picks an
    element, so a folded model would hold the file's contents."""
    consts = [
        h.make_node("Constant", [], [f"c{k}"], value=h.make_tensor(f"t{k}", T.INT64, [], [k]))
        for k in range(256)
    ]
    nodes = [
        *consts,
        h.make_node("Cast", [reader], ["as64"], to=T.INT64),
        h.make_node("ReduceMax", ["as64"], ["pos"], keepdims=0),
        h.make_node("SequenceConstruct", [f"c{k}" for k in range(256)], ["s"]),
        h.make_node("SequenceAt", ["s", "pos"], ["y"]),
    ]
    return h.make_graph(nodes, "leak", [], [h.make_tensor_value_info("y", T.INT64, [])])


def _function_leak(folder: Path, location: str, ir_version: int, called: bool) -> Path:
    """A model-local function whose Constant's tensor is external data at ``location``."""
    body = [
        h.make_node("Constant", [], ["raw"], value=_external("raw", location, [len(SECRET)])),
        h.make_node("Identity", ["raw"], ["out"]),
    ]
    function = h.make_function("evil", "Read", [], ["out"], body, [h.make_opsetid("", 18)])
    graph = _leak_graph("raw_main")
    reader = h.make_node("Read", [], ["raw_main"], domain="evil")
    if called:
        graph.node.insert(0, reader)
    else:
        graph.node.insert(
            0,
            h.make_node(
                "Constant",
                [],
                ["raw_main"],
                value=numpy_helper.from_array(np.zeros(3, np.uint8), "z"),
            ),
        )
    model = h.make_model(
        graph,
        opset_imports=[h.make_opsetid("", 18), h.make_opsetid("evil", 1)],
        functions=[function],
        ir_version=ir_version,
    )
    return _save(model, folder)


def _outside(root: Path) -> Path:
    secret = root / "secret.bin"
    secret.write_bytes(SECRET)
    return secret


def function_absolute_ir7(root: Path) -> Path:
    return _function_leak(root / "m", str(_outside(root)), 7, True)


def function_absolute_ir10_uncalled(root: Path) -> Path:
    return _function_leak(root / "m", str(_outside(root)), 10, False)


def function_dotdot(root: Path) -> Path:
    _outside(root)
    return _function_leak(root / "m", "../secret.bin", 7, True)


def function_symlink(root: Path) -> Path:
    secret = _outside(root)
    (root / "m").mkdir()
    (root / "m" / "link.bin").symlink_to(secret)
    return _function_leak(root / "m", "link.bin", 7, True)


def _graph_leak(folder: Path, location: str, where: str) -> Path:
    """The same read from the main graph: an initializer, a Constant's attribute, an If
    branch's Constant, or a Loop body's initializer."""
    folder.mkdir(parents=True, exist_ok=True)
    tensor = _external("raw_main", location, [len(SECRET)])
    graph = _leak_graph("raw_main")
    if where == "initializer":
        graph.initializer.append(tensor)
    elif where == "attribute":
        graph.node.insert(0, h.make_node("Constant", [], ["raw_main"], value=tensor))
    else:
        branch = h.make_graph(
            [h.make_node("Constant", [], ["raw_b"], value=tensor)],
            "b",
            [],
            [h.make_tensor_value_info("raw_b", T.UINT8, [len(SECRET)])],
        )
        graph.node.insert(0, h.make_node("Constant", [], ["c"], value_int=1))
        graph.node.insert(1, h.make_node("Cast", ["c"], ["cond"], to=T.BOOL))
        graph.node.insert(
            2, h.make_node("If", ["cond"], ["raw_main"], then_branch=branch, else_branch=branch)
        )
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 18)], ir_version=8)
    return _save(model, folder)


def initializer_absolute(root: Path) -> Path:
    return _graph_leak(root / "m", str(_outside(root)), "initializer")


def attribute_dotdot(root: Path) -> Path:
    _outside(root)
    return _graph_leak(root / "m", "../secret.bin", "attribute")


def subgraph_symlink(root: Path) -> Path:
    secret = _outside(root)
    (root / "m").mkdir()
    (root / "m" / "link.bin").symlink_to(secret)
    return _graph_leak(root / "m", "link.bin", "branch")


def offset_past_the_file(root: Path) -> Path:
    (root / "m").mkdir(parents=True)
    (root / "m" / "w.bin").write_bytes(SECRET)
    model = onnx.load_from_string(_graph_leak(root / "m", "w.bin", "initializer").read_bytes())
    entry = model.graph.initializer[0].external_data.add()
    entry.key, entry.value = "offset", str(2**62)
    return _save(model, root / "m")


def length_past_the_file(root: Path) -> Path:
    (root / "m").mkdir(parents=True)
    (root / "m" / "w.bin").write_bytes(SECRET)
    model = onnx.load_from_string(_graph_leak(root / "m", "w.bin", "initializer").read_bytes())
    entry = model.graph.initializer[0].external_data.add()
    entry.key, entry.value = "length", str(2**40)
    return _save(model, root / "m")


def honest_function_data(root: Path) -> Path:
    """A function whose external data legitimately lies beside the model."""
    folder = root / "m"
    folder.mkdir(parents=True)
    (folder / "w.bin").write_bytes(bytes(range(8)))
    body = [
        h.make_node("Constant", [], ["raw"], value=_external("raw", "w.bin", [8])),
        h.make_node("SequenceConstruct", ["raw", "x"], ["s"]),
        h.make_node("ConcatFromSequence", ["s"], ["out"], axis=0),
    ]
    function = h.make_function("local", "Cat", ["x"], ["out"], body, [h.make_opsetid("", 18)])
    graph = h.make_graph(
        [h.make_node("Cat", ["x"], ["y"], domain="local")],
        "honest",
        [h.make_tensor_value_info("x", T.UINT8, [4])],
        [h.make_tensor_value_info("y", T.UINT8, [12])],
    )
    model = h.make_model(
        graph,
        opset_imports=[h.make_opsetid("", 18), h.make_opsetid("local", 1)],
        functions=[function],
        ir_version=8,
    )
    return _save(model, folder)


# -- resource blow-ups --------------------------------------------------------------------


def _model(
    nodes: list[onnx.NodeProto],
    inputs: list[onnx.ValueInfoProto],
    outputs: list[onnx.ValueInfoProto],
    opset: int = 18,
    initializers: list[T] | None = None,
) -> onnx.ModelProto:
    graph = h.make_graph(nodes, "g", inputs, outputs, initializers or [])
    return h.make_model(graph, opset_imports=[h.make_opsetid("", opset)], ir_version=8)


def split_sizes_million(root: Path) -> Path:
    """SplitToSequence(x[N], split: int64[1000000] graph input) then ConcatFromSequence."""
    model = _model(
        [
            h.make_node("SplitToSequence", ["x", "split"], ["s"], axis=0),
            h.make_node("ConcatFromSequence", ["s"], ["y"], axis=0),
        ],
        [
            h.make_tensor_value_info("x", T.FLOAT, ["N"]),
            h.make_tensor_value_info("split", T.INT64, [1_000_000]),
        ],
        [h.make_tensor_value_info("y", T.FLOAT, ["N"])],
    )
    return _save(model, root)


def unbind_million(root: Path) -> Path:
    """SplitToSequence of a dim of 10^6 into chunks of one (no split: unbind), then a read."""
    model = _model(
        [
            h.make_node("SplitToSequence", ["x"], ["s"], axis=0, keepdims=0),
            h.make_node("ConcatFromSequence", ["s"], ["y"], axis=0, new_axis=1),
        ],
        [h.make_tensor_value_info("x", T.FLOAT, [1_000_000])],
        [h.make_tensor_value_info("y", T.FLOAT, [1_000_000])],
    )
    return _save(model, root)


def tile_position(root: Path) -> Path:
    """A SequenceAt position computed by Tile([0], [6e8]) -> ReduceMax: 600M elements."""
    model = _model(
        [
            h.make_node("Tile", ["zero", "reps"], ["tiled"]),
            h.make_node("ReduceMax", ["tiled"], ["pos"], keepdims=0),
            h.make_node("SequenceConstruct", ["x", "x"], ["s"]),
            h.make_node("SequenceAt", ["s", "pos"], ["y"]),
        ],
        [h.make_tensor_value_info("x", T.FLOAT, [2])],
        [h.make_tensor_value_info("y", T.FLOAT, [2])],
        initializers=[
            numpy_helper.from_array(np.zeros(1, np.int64), "zero"),
            numpy_helper.from_array(np.array([600_000_000], np.int64), "reps"),
        ],
    )
    return _save(model, root)


def range_split_sizes(root: Path) -> Path:
    """Split sizes Range(0, 10^10, 1): ten billion elements if evaluated."""
    model = _model(
        [
            h.make_node("Range", ["start", "limit", "delta"], ["sizes"]),
            h.make_node("SplitToSequence", ["x", "sizes"], ["s"], axis=0),
            h.make_node("SequenceLength", ["s"], ["y"]),
        ],
        [h.make_tensor_value_info("x", T.FLOAT, ["N"])],
        [h.make_tensor_value_info("y", T.INT64, [])],
        initializers=[
            numpy_helper.from_array(np.array(0, np.int64), "start"),
            numpy_helper.from_array(np.array(10**10, np.int64), "limit"),
            numpy_helper.from_array(np.array(1, np.int64), "delta"),
        ],
    )
    return _save(model, root)


def _loop(trips: str, body: onnx.GraphProto, carried: list[str], outs: list[str]) -> onnx.NodeProto:
    return h.make_node("Loop", [trips, "", *carried], outs, body=body)


def nested_loops(root: Path, depth: int = 3, trips: int = 64) -> Path:
    """Loops nested ``depth`` deep, each of ``trips`` iterations; the innermost reads the
    carried list's length and appends (every loop alone is within --max-unroll)."""
    seq_t = h.make_sequence_type_proto(h.make_tensor_type_proto(T.FLOAT, [2]))

    def body(level: int) -> onnx.GraphProto:
        c_in, c_out, s_in, s_out = (f"{n}{level}" for n in ("cond_in", "cond_out", "s_in", "s_out"))
        nodes = [h.make_node("Identity", [c_in], [c_out])]
        if level == depth:
            nodes.append(h.make_node("SequenceLength", [s_in], ["len"]))
            nodes.append(h.make_node("Cast", ["len"], ["lenf"], to=T.FLOAT))
            nodes.append(h.make_node("Add", ["x", "lenf"], ["v"]))
            nodes.append(h.make_node("SequenceInsert", [s_in, "v"], [s_out]))
        else:
            nodes.append(h.make_node("Identity", ["n"], [f"n{level}"]))
            nodes.append(_loop(f"n{level}", body(level + 1), [s_in], [s_out]))
        return h.make_graph(
            nodes,
            f"body{level}",
            [
                h.make_tensor_value_info(f"i{level}", T.INT64, []),
                h.make_tensor_value_info(c_in, T.BOOL, []),
                h.make_value_info(s_in, seq_t),
            ],
            [h.make_tensor_value_info(c_out, T.BOOL, []), h.make_value_info(s_out, seq_t)],
        )

    model = _model(
        [
            h.make_node("SequenceEmpty", [], ["s0"], dtype=T.FLOAT),
            _loop("n", body(1), ["s0"], ["s"]),
            h.make_node("SequenceLength", ["s"], ["y"]),
        ],
        [h.make_tensor_value_info("x", T.FLOAT, [2])],
        [h.make_tensor_value_info("y", T.INT64, [])],
        initializers=[numpy_helper.from_array(np.array(trips, np.int64), "n")],
    )
    return _save(model, root)


def wide_construct(root: Path, count: int = 100_000) -> Path:
    """One SequenceConstruct of ``count`` inputs, read by ConcatFromSequence."""
    model = _model(
        [
            h.make_node("SequenceConstruct", ["x"] * count, ["s"]),
            h.make_node("ConcatFromSequence", ["s"], ["y"], axis=0),
        ],
        [h.make_tensor_value_info("x", T.FLOAT, [1])],
        [h.make_tensor_value_info("y", T.FLOAT, [count])],
    )
    return _save(model, root)


def split_outputs_million(root: Path, count: int = 10**6) -> Path:
    """One Split of ``count`` outputs (17 MB), gathered by a SequenceConstruct and
    concatenated again."""
    pieces = [f"p{k}" for k in range(count)]
    model = h.make_model(
        h.make_graph(
            [
                h.make_node("Split", ["x"], pieces, axis=0, num_outputs=count),
                h.make_node("SequenceConstruct", pieces, ["s"]),
                h.make_node("ConcatFromSequence", ["s"], ["y"], axis=0),
            ],
            "g",
            [h.make_tensor_value_info("x", T.FLOAT, [count])],
            [h.make_tensor_value_info("y", T.FLOAT, [count])],
        ),
        opset_imports=[h.make_opsetid("", 18)],
    )
    return _save(model, root)


def declared_huge_input(root: Path) -> Path:
    """An input declared float[100000, 100000] (40 GB if drawn as declared)."""
    model = _model(
        [
            h.make_node("SequenceConstruct", ["x", "x"], ["s"]),
            h.make_node("SequenceErase", ["s"], ["t"]),
            h.make_node("ConcatFromSequence", ["t"], ["y"], axis=0),
        ],
        [h.make_tensor_value_info("x", T.FLOAT, [100_000, 100_000])],
        [h.make_tensor_value_info("y", T.FLOAT, [100_000, 100_000])],
    )
    return _save(model, root)


def huge_dims(root: Path) -> Path:
    """Elements whose dims are 2^62: the concatenation's dim overflows int64."""
    big = 2**62
    model = _model(
        [
            h.make_node("SequenceConstruct", ["a", "b"], ["s"]),
            h.make_node("ConcatFromSequence", ["s"], ["y"], axis=0),
            h.make_node("SequenceLength", ["s"], ["n"]),
        ],
        [
            h.make_tensor_value_info("a", T.FLOAT, [big]),
            h.make_tensor_value_info("b", T.FLOAT, [big]),
        ],
        [h.make_tensor_value_info("y", T.FLOAT, ["M"]), h.make_tensor_value_info("n", T.INT64, [])],
    )
    return _save(model, root)


def large_dim_split(root: Path) -> Path:
    """SplitToSequence of a dim of 10^8 into two halves, then a read of each."""
    model = _model(
        [
            h.make_node("SplitToSequence", ["x", "two"], ["s"], axis=0),
            h.make_node("SequenceAt", ["s", "zero"], ["y"]),
        ],
        [h.make_tensor_value_info("x", T.FLOAT, [10**8])],
        [h.make_tensor_value_info("y", T.FLOAT, ["K"])],
        initializers=[
            numpy_helper.from_array(np.array(50_000_000, np.int64), "two"),
            numpy_helper.from_array(np.array(0, np.int64), "zero"),
        ],
    )
    return _save(model, root)


def negative_dim(root: Path) -> Path:
    """A graph input declared with dim -5 (ONNX Runtime runs it on any length)."""
    model = _model(
        [
            h.make_node("SplitToSequence", ["x"], ["s"], axis=0, keepdims=1),
            h.make_node("ConcatFromSequence", ["s"], ["y"], axis=0),
        ],
        [h.make_tensor_value_info("x", T.FLOAT, [-5])],
        [h.make_tensor_value_info("y", T.FLOAT, [None])],
    )
    return _save(model, root)


def opset_99(root: Path) -> Path:
    model = _model(
        [
            h.make_node("SequenceConstruct", ["x", "x"], ["s"]),
            h.make_node("ConcatFromSequence", ["s"], ["y"], axis=0),
        ],
        [h.make_tensor_value_info("x", T.FLOAT, [2])],
        [h.make_tensor_value_info("y", T.FLOAT, [4])],
        opset=99,
    )
    return _save(model, root)


def _in_branch(model: onnx.ModelProto) -> onnx.ModelProto:
    """``model``'s nodes moved into both branches of an If on a run-time condition."""
    graph = model.graph
    branch = h.make_graph(list(graph.node), "branch", [], list(graph.output))
    branch.initializer.extend(graph.initializer)
    outer = h.make_graph(
        [
            h.make_node(
                "If",
                ["cond"],
                [o.name for o in graph.output],
                then_branch=branch,
                else_branch=branch,
            )
        ],
        "outer",
        [*graph.input, h.make_tensor_value_info("cond", T.BOOL, [])],
        list(graph.output),
    )
    return h.make_model(outer, opset_imports=list(model.opset_import), ir_version=model.ir_version)


def tile_position_in_branch(root: Path) -> Path:
    path = tile_position(root)
    return _save(_in_branch(onnx.load(path)), root)


def split_sizes_million_in_branch(root: Path) -> Path:
    path = split_sizes_million(root)
    return _save(_in_branch(onnx.load(path)), root)


CASES: dict[str, Callable[[Path], Path]] = {
    name: fn
    for name, fn in dict(globals()).items()
    if callable(fn)
    and not name.startswith("_")
    and getattr(fn, "__module__", "") == __name__
    and name not in ("measure", "main")
}


_WRAPPER = """
import resource, subprocess, sys
try:
    code = subprocess.run(sys.argv[2:], capture_output=True, timeout=float(sys.argv[1])).returncode
except subprocess.TimeoutExpired:
    code = "timeout"
print(code, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)
"""


def measure(
    name: str, timeout: float, python: str = sys.executable, extra: tuple[str, ...] = ()
) -> tuple[str, float, float]:
    """Run ``seqpasses optimize`` (with the ``extra`` arguments) on case ``name`` from the
    case's parent folder: (exit code or 'timeout', seconds, peak MiB of the child)."""
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        (root / "case").mkdir()
        model = CASES[name](root / "case")
        out = root / "out"
        out.mkdir()
        command = [python, "-m", "seqpasses", "optimize", str(model), "-o", str(out / "o.onnx")]
        command += list(extra)
        start = time.perf_counter()
        process = subprocess.run(
            [python, "-c", _WRAPPER, str(timeout), *command],
            capture_output=True,
            text=True,
            check=False,
            cwd=root,
        )
        seconds = time.perf_counter() - start
        code, peak = process.stdout.split()
        return code, seconds, int(peak) / 1024


def main() -> None:
    args = sys.argv[1:]
    timeout = 120.0
    if args[:1] == ["--timeout"]:
        timeout, args = float(args[1]), args[2:]
    for name in args or list(CASES):
        code, seconds, peak = measure(name, timeout)
        print(f"{name:34} exit {code:8} {seconds:7.1f} s  peak {peak:8.0f} MiB", flush=True)


if __name__ == "__main__":
    sys.path.insert(0, os.fspath(Path(__file__).resolve().parent))
    main()

"""Models of the size users ship: peak memory against the weight bytes, time against a round
trip, for ``seqpasses optimize`` and ``optimize --check``, all measured in this one run.

Usage (from the repository root):
    python benchmarks/big_models.py [--sizes 0.5 1 3] [--only optimize check] [--keep DIR]
        [--runs 3]

Each model is one sequence chain (``SplitToSequence`` -> ``SequenceLength``, ``SequenceAt``,
``ConcatFromSequence``) after ``MatMul``/``Add``/``Tanh`` layers of 4096x4096 float32 weights
(64 MiB each): W is their bytes. Every size is made twice, with its weights inline (below
2 GB only: protobuf cannot hold more) and in one external data file, in a temporary folder.
Each command runs in a process of its own, ``--runs`` times, each after ``os.sync()`` (the
run of least CPU is kept: the writeback of an earlier command's pages is not billed to the
next); what is printed is its peak resident memory (``ru_maxrss``) as a multiple of W, and its
CPU seconds (user + system) as a multiple of an onnx_ir round trip of the same model
(``ir.load`` + ``ir.save``, in a process of its own too):

- ``onnx_ir round trip`` and ``onnx round trip`` (``onnx.load`` + ``onnx.save``): baselines;
- ``ORT session``: an ONNX Runtime session on the model (graph optimizations off);
- ``optimize``: ``seqpasses optimize IN -o OUT``;
- ``optimize --check``: the same with ``--check`` (both evaluators, one input set).

Targets (issue "Models of the size users ship"): optimize at most 2 W inline and 300 MB with
external weights, at most 1.5x the round trip's CPU; ``--check`` at most 3 W inline and
1.5 W external, and verified by both evaluators.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper

LAYER = 4096
LAYER_BYTES = LAYER * LAYER * 4

_MEASURE = r"""
import json, resource, subprocess, sys
process = subprocess.run(sys.argv[1:], capture_output=True, text=True)
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({"code": process.returncode, "peak": usage.ru_maxrss * 1024,
                  "cpu": usage.ru_utime + usage.ru_stime,
                  "tail": (process.stdout + process.stderr).strip().splitlines()[-3:]}))
"""

_IR_ROUND_TRIP = "import onnx_ir as ir, sys; ir.save(ir.load(sys.argv[1]), sys.argv[2]{extra})"
_ONNX_ROUND_TRIP = "import onnx, sys; m = onnx.load(sys.argv[1]); onnx.save(m, sys.argv[2]{extra})"
_ORT_SESSION = (
    "import onnxruntime as ort, sys; o = ort.SessionOptions(); "
    "o.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL; "
    "ort.InferenceSession(sys.argv[1], o, providers=['CPUExecutionProvider'])"
)


def _weight(index: int) -> np.ndarray:
    """A 4096x4096 float32 weight, cheap to make, small enough not to saturate Tanh."""
    row = np.arange(LAYER, dtype=np.float32) * (1e-7 * (index + 1))
    return np.broadcast_to(row, (LAYER, LAYER)).astype(np.float32) - 2e-4


def make(folder: Path, gib: float, external: bool) -> Path:
    """A model of ``gib`` GiB of weights, inline or in ``weights.bin`` beside it."""
    layers = max(1, round(gib * (1 << 30) / LAYER_BYTES))
    nodes, initializers = [], []
    data = open(folder / "weights.bin", "wb") if external else None  # noqa: SIM115
    offset = 0
    previous = "x"
    for index in range(layers):
        name = f"w{index}"
        array = _weight(index)
        if data is not None:
            tensor = TensorProto(name=name, data_type=TensorProto.FLOAT, dims=[LAYER, LAYER])
            tensor.data_location = TensorProto.EXTERNAL
            for key, value in (
                ("location", "weights.bin"),
                ("offset", str(offset)),
                ("length", str(array.nbytes)),
            ):
                entry = tensor.external_data.add()
                entry.key, entry.value = key, value
            data.write(array.tobytes())
            offset += array.nbytes
        else:
            tensor = onnx.numpy_helper.from_array(array, name)
        initializers.append(tensor)
        initializers.append(
            onnx.numpy_helper.from_array(np.full(LAYER, 0.01, np.float32), f"b{index}")
        )
        nodes += [
            helper.make_node("MatMul", [previous, name], [f"m{index}"]),
            helper.make_node("Add", [f"m{index}", f"b{index}"], [f"a{index}"]),
            helper.make_node("Tanh", [f"a{index}"], [f"h{index}"]),
        ]
        previous = f"h{index}"
    if data is not None:
        data.close()
    initializers += [
        onnx.numpy_helper.from_array(np.array(1024, np.int64), "chunk"),
        onnx.numpy_helper.from_array(np.array(0, np.int64), "zero"),
    ]
    nodes += [
        helper.make_node("SplitToSequence", [previous, "chunk"], ["parts"], axis=1),
        helper.make_node("SequenceLength", ["parts"], ["count"]),
        helper.make_node("SequenceAt", ["parts", "zero"], ["first"]),
        helper.make_node("ConcatFromSequence", ["parts"], ["y"], axis=1),
    ]
    graph = helper.make_graph(
        nodes,
        "big",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, LAYER])],
        [
            helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, LAYER]),
            helper.make_tensor_value_info("first", TensorProto.FLOAT, [2, 1024]),
            helper.make_tensor_value_info("count", TensorProto.INT64, []),
        ],
        initializers,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    path = folder / "model.onnx"
    onnx.save(model, path)
    return path


@dataclass
class Run:
    """One command's exit code, peak resident memory (bytes), CPU seconds and last lines."""

    code: int
    peak: int
    cpu: float
    tail: list[str]


def measure(command: list[str], cwd: Path, env: dict[str, str] | None = None, runs: int = 1) -> Run:
    """The command's run of least CPU time out of ``runs``, each in a fresh process after
    ``os.sync()``: the pages an earlier command left dirty are written back before it starts,
    not billed to it as system time (on a 1 GiB write, 0.5 s one time, 3 s another). What a
    run writes in ``cwd`` is removed before the next (onnx.save refuses to write external data
    over an existing file)."""
    before = set(cwd.iterdir())
    best: Run | None = None
    for _ in range(runs):
        for made in set(cwd.iterdir()) - before:
            if made.is_file():
                made.unlink()
        run = _measure_once(command, cwd, env)
        if best is None or run.cpu < best.cpu:
            best = run
    assert best is not None
    return best


def _measure_once(command: list[str], cwd: Path, env: dict[str, str] | None) -> Run:
    os.sync()
    out = subprocess.run(
        [sys.executable, "-c", _MEASURE, *command],
        capture_output=True,
        text=True,
        check=True,
        cwd=cwd,
        env=env,
    )
    data = json.loads(out.stdout)
    return Run(int(data["code"]), int(data["peak"]), float(data["cpu"]), list(data["tail"]))


def cell(run: Run | None, weights: int, base: float, cpu: bool = True) -> str:
    """Peak memory as a multiple of the weight bytes (MB when under 0.3 W), CPU as a multiple
    of the round trip's ``base`` seconds."""
    if run is None:
        return "(not run)"
    text = f"{run.peak / weights:.1f} W"
    if run.peak < 0.3 * weights:
        text = f"{run.peak / 2**20:.0f} MB"
    if cpu:
        text += f", {run.cpu / base:.1f}x CPU"
    if run.code != 0:
        text += f" (exit {run.code})"
    return text


def main() -> int:
    parser = argparse.ArgumentParser(description="seqpasses on models of 0.5-3 GiB")
    parser.add_argument("--sizes", type=float, nargs="+", default=[0.5, 1.0, 3.0])
    parser.add_argument("--only", nargs="+", default=["optimize", "check"])
    parser.add_argument("--keep", type=Path, help="make the models in this folder")
    parser.add_argument("--seqpasses", default=None, help="a src/ folder to run seqpasses from")
    parser.add_argument("--runs", type=int, default=3, help="runs of each command (least CPU)")
    args = parser.parse_args()
    python = sys.executable
    env = dict(os.environ)
    if args.seqpasses:
        env["PYTHONPATH"] = args.seqpasses
    print(
        "| model | onnx_ir round trip | onnx round trip | ORT session | seqpasses optimize "
        "| optimize --check | --check says |"
    )
    print("|---|---|---|---|---|---|---|")
    for gib in args.sizes:
        for external in (False, True):
            if not external and gib >= 2:
                continue
            with tempfile.TemporaryDirectory(dir=args.keep) as folder:
                work = Path(folder)
                path = make(work, gib, external)
                weights = sum(
                    math.prod(t.dims) * onnx.helper.tensor_dtype_to_np_dtype(t.data_type).itemsize
                    for t in onnx.load(path, load_external_data=False).graph.initializer
                )
                saved = "rt2.onnx"
                extra = f", save_as_external_data=True, location='{saved}.data'" if external else ""
                ir_extra = ", external_data='rt.onnx.data'" if external else ""
                ir_code = _IR_ROUND_TRIP.format(extra=ir_extra)
                onnx_code = _ONNX_ROUND_TRIP.format(extra=extra)
                n = args.runs
                ir_run = measure([python, "-c", ir_code, str(path), "rt.onnx"], work, runs=n)
                onnx_run = measure([python, "-c", onnx_code, str(path), saved], work, runs=n)
                ort_run = measure([python, "-c", _ORT_SESSION, str(path)], work)
                command = [python, "-m", "seqpasses", "optimize", str(path), "-o", "out.onnx"]
                runs: dict[str, Run] = {}
                for name, flags in (("optimize", []), ("check", ["--check", "--check-runs", "1"])):
                    if name in args.only:
                        runs[name] = measure(command + flags, work, env, runs=n)
                base = ir_run.cpu
                said = runs["check"].tail if "check" in runs else []
                verdict = next((line for line in said if "verified" in line), "")
                kind = "one external file" if external else "inline"
                print(
                    f"| {gib:g} GiB, {kind} | {ir_run.peak / weights:.1f} W ({base:.1f} s) "
                    f"| {cell(onnx_run, weights, base)} | {cell(ort_run, weights, base, cpu=False)} "
                    f"| {cell(runs.get('optimize'), weights, base)} "
                    f"| {cell(runs.get('check'), weights, base)} | {verdict[:90]} |",
                    flush=True,
                )
    return 0


if __name__ == "__main__":
    sys.exit(main())

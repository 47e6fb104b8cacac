"""Shared test helpers: rule files, conformance cases, op counts, evaluator runs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnx_ir as ir
from onnx import numpy_helper

ROOT = Path(__file__).resolve().parent.parent
RULES = ROOT / "rules"
SAMPLES = ROOT / "sample_models"
SHARED = ROOT.parent / "shared"
CONFORMANCE = SHARED / "conformance"

from seqpasses.core.ops import SEQUENCE_OPS  # noqa: E402


def read_pty(leader: int) -> bytes:
    """All a pseudo-terminal's other end wrote, once it is closed (Linux ends the read with
    EIO), and close ``leader``."""
    chunks = []
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(leader)
    return b"".join(chunks)


def run_cli(
    *args: str | Path,
    env: dict[str, str] | None = None,
    preexec_fn: Callable[[], None] | None = None,
) -> subprocess.CompletedProcess[str]:
    """The real console entry point, in a child process (``env``: variables changed in its
    environment; ``preexec_fn``: a set-up run in the child before it starts)."""
    return subprocess.run(
        [sys.executable, "-m", "seqpasses", *map(str, args)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=None if env is None else {**os.environ, **env},
        preexec_fn=preexec_fn,
    )


@dataclass
class Rule:
    name: str
    identity: str
    options: dict[str, bool]
    before: onnx.ModelProto
    after: onnx.ModelProto
    inputs: dict[str, Any]  # fixed input values (``# inputs: name = [1, 2]; ...``), as arrays
    runnable: bool  # False: ``# verify: not runnable (why)``, no evaluator can run the model
    rule: str  # ``# rule: <id>``: the rewrite id (or reason kind) the file shows


def parse_rule(path: Path) -> Rule:
    text = path.read_text()
    header, rest = text.split("=== before\n", 1)
    before_text, after_text = rest.split("=== after\n", 1)
    identity = ""
    options: dict[str, bool] = {}
    fixed: dict[str, Any] = {}
    runnable = True
    rule = ""
    for line in header.splitlines():
        if line.startswith("# rule:"):
            rule = line.split(":", 1)[1].strip()
        if line.startswith("# verify: not runnable"):
            runnable = False
        if line.startswith("# identity:"):
            identity = line.split(":", 1)[1].strip()
        elif line.startswith("# options:"):
            options = {name.strip(): True for name in line.split(":", 1)[1].split(",")}
        elif line.startswith("# inputs:"):
            for item in line.split(":", 1)[1].split(";"):
                name, value = item.split("=", 1)
                fixed[name.strip()] = json.loads(value)
    before = onnx.parser.parse_model(before_text)
    types = {v.name: v.type.tensor_type.elem_type for v in before.graph.input}
    inputs = {
        name: np.array(value, dtype=onnx.helper.tensor_dtype_to_np_dtype(types[name]))
        for name, value in fixed.items()
    }
    return Rule(
        path.stem,
        identity,
        options,
        before,
        onnx.parser.parse_model(after_text),
        inputs,
        runnable,
        rule,
    )


def all_nodes(model: onnx.ModelProto) -> list[onnx.NodeProto]:
    def walk(graph: onnx.GraphProto) -> list[onnx.NodeProto]:
        nodes = []
        for node in graph.node:
            nodes.append(node)
            for attr in node.attribute:
                if attr.type == onnx.AttributeProto.GRAPH:
                    nodes.extend(walk(attr.g))
                for sub in attr.graphs:
                    nodes.extend(walk(sub))
        return nodes

    nodes = walk(model.graph)
    for function in model.functions:
        nodes.extend(function.node)
    return nodes


def op_counts(model: onnx.ModelProto) -> Counter[str]:
    return Counter(node.op_type for node in all_nodes(model))


def sequence_op_count(model: onnx.ModelProto) -> int:
    return sum(
        1
        for node in all_nodes(model)
        if node.op_type in SEQUENCE_OPS and node.domain in ("", "ai.onnx")
    )


def refold_modified(model: onnx.ModelProto, **options: bool) -> bool:
    """Whether a second run of the pass claims to change the model."""
    from seqpasses import FoldOptions, FoldSequencesPass

    result = FoldSequencesPass(FoldOptions(**options))(ir.serde.deserialize_model(model))
    return bool(result.modified)


def io_signature(model: onnx.ModelProto) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    def sig(values: Any) -> list[tuple[str, str]]:
        return [(v.name, v.type.WhichOneof("value") + ":" + _elem(v.type)) for v in values]

    return sig(model.graph.input), sig(model.graph.output)


def _elem(t: onnx.TypeProto) -> str:
    kind = t.WhichOneof("value")
    if kind == "tensor_type":
        return str(t.tensor_type.elem_type)
    if kind == "sequence_type":
        return "seq:" + _elem(t.sequence_type.elem_type)
    if kind == "optional_type":
        return "opt:" + _elem(t.optional_type.elem_type)
    return kind or ""


# -- conformance cases -----------------------------------------------------------------------


def conformance_cases() -> list[Path]:
    if not CONFORMANCE.is_dir():
        return []
    return sorted(p.parent for p in CONFORMANCE.glob("*/*/model.onnx"))


def read_pb(path: Path, type_proto: onnx.TypeProto) -> Any:
    """Read a backend-test .pb file as the kind its graph input or output declares."""
    kind = type_proto.WhichOneof("value")
    data = path.read_bytes()
    if kind == "sequence_type":
        seq = onnx.SequenceProto()
        seq.ParseFromString(data)
        return numpy_helper.to_list(seq)
    if kind == "optional_type":
        opt = onnx.OptionalProto()
        opt.ParseFromString(data)
        return numpy_helper.to_optional(opt)
    tensor = onnx.TensorProto()
    tensor.ParseFromString(data)
    return numpy_helper.to_array(tensor)


def load_case(case: Path) -> tuple[onnx.ModelProto, dict[str, Any], list[Any], dict[str, Any]]:
    model = onnx.load(case / "model.onnx")
    meta = json.loads((case / "meta.json").read_text())
    data = case / "test_data_set_0"
    initializers = {i.name for i in model.graph.initializer}
    inputs = [i for i in model.graph.input if i.name not in initializers]
    feeds = {}
    for index, value in enumerate(inputs):
        path = data / f"input_{index}.pb"
        if path.exists():
            feeds[value.name] = read_pb(path, value.type)
    outputs = [
        read_pb(data / f"output_{index}.pb", value.type)
        for index, value in enumerate(model.graph.output)
    ]
    return model, feeds, outputs, meta


def stored_runs(path: Path) -> list[tuple[dict[str, np.ndarray], list[np.ndarray]]]:
    """The input sets and the original's outputs stored beside a model (``<name>.npz``:
    ``run<k>.input:<name>``, ``run<k>.output:<i>``), one pair per run."""
    data = np.load(path.with_suffix(".npz"))
    runs = []
    k = 0
    while f"run{k}.output:0" in data:
        prefix = f"run{k}."
        feeds = {
            key.split(":", 1)[1]: data[key]
            for key in data.files
            if key.startswith(prefix + "input:")
        }
        count = sum(1 for key in data.files if key.startswith(prefix + "output:"))
        runs.append((feeds, [data[f"{prefix}output:{i}"] for i in range(count)]))
        k += 1
    return runs

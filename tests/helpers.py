"""Shared test helpers: rule files, conformance cases, op counts, evaluator runs."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import onnx
import onnx_ir as ir
from onnx import numpy_helper

ROOT = Path(__file__).resolve().parent.parent
RULES = ROOT / "rules"
SAMPLES = ROOT / "sample_models"
SHARED = ROOT.parent / "shared"
CONFORMANCE = SHARED / "conformance"

SEQUENCE_OPS = {
    "SequenceConstruct", "SequenceEmpty", "SequenceInsert", "SequenceErase", "SequenceAt",
    "SequenceLength", "ConcatFromSequence", "SplitToSequence", "SequenceMap",
}


@dataclass
class Rule:
    name: str
    identity: str
    options: dict[str, bool]
    before: onnx.ModelProto
    after: onnx.ModelProto


def parse_rule(path: Path) -> Rule:
    text = path.read_text()
    header, rest = text.split("=== before\n", 1)
    before_text, after_text = rest.split("=== after\n", 1)
    identity = ""
    options: dict[str, bool] = {}
    for line in header.splitlines():
        if line.startswith("# identity:"):
            identity = line.split(":", 1)[1].strip()
        elif line.startswith("# options:"):
            options = {name.strip(): True for name in line.split(":", 1)[1].split(",")}
    return Rule(path.stem, identity, options,
                onnx.parser.parse_model(before_text), onnx.parser.parse_model(after_text))


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
    return sum(1 for node in all_nodes(model) if node.op_type in SEQUENCE_OPS and node.domain in ("", "ai.onnx"))


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


def read_pb(path: Path) -> Any:
    data = path.read_bytes()
    for cls, convert in (
        (onnx.TensorProto, numpy_helper.to_array),
        (onnx.SequenceProto, numpy_helper.to_list),
        (onnx.OptionalProto, numpy_helper.to_optional),
    ):
        proto = cls()
        try:
            proto.ParseFromString(data)
        except Exception:
            continue
        if proto.ListFields():
            try:
                return convert(proto)
            except Exception:
                continue
    raise ValueError(f"cannot read {path}")


def load_case(case: Path) -> tuple[onnx.ModelProto, dict[str, Any], list[Any], dict[str, Any]]:
    model = onnx.load(case / "model.onnx")
    meta = json.loads((case / "meta.json").read_text())
    data = case / "test_data_set_0"
    initializers = {i.name for i in model.graph.initializer}
    names = [i.name for i in model.graph.input if i.name not in initializers]
    feeds = {}
    for index, name in enumerate(names):
        path = data / f"input_{index}.pb"
        if path.exists():
            feeds[name] = read_pb(path)
    outputs = [read_pb(p) for p in sorted(data.glob("output_*.pb"))]
    return model, feeds, outputs, meta

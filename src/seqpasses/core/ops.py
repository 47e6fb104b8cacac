"""The ONNX op vocabulary seqpasses reasons about: sequence ops and optional ops."""

from __future__ import annotations

from collections import Counter
from functools import cache

import onnx
import onnx_ir as ir

from seqpasses.core.graph import DEFAULT_DOMAINS, all_nodes
from seqpasses.core.proto import all_proto_nodes

__all__ = [
    "LEFT_OPS",
    "NOT_ON_SEQUENCES",
    "OPTIONAL_OPS",
    "ORT_SPLIT_TO_SEQUENCE_TYPES",
    "SEQUENCE_OPS",
    "defined_on_sequences",
    "model_ops",
    "model_sequence_ops",
]

SEQUENCE_OPS = frozenset(
    {
        "SequenceConstruct",
        "SequenceEmpty",
        "SequenceInsert",
        "SequenceErase",
        "SequenceAt",
        "SequenceLength",
        "ConcatFromSequence",
        "SplitToSequence",
        "SequenceMap",
    }
)
"""The ONNX sequence ops: what seqpasses removes."""

OPTIONAL_OPS = frozenset({"Optional", "OptionalGetElement", "OptionalHasElement"})
"""Optional ops: back ends that reject sequences mostly reject these too."""

LEFT_OPS = SEQUENCE_OPS | OPTIONAL_OPS
"""What the report lists when it stays."""

ORT_SPLIT_TO_SEQUENCE_TYPES = frozenset(
    {
        ir.DataType.FLOAT,
        ir.DataType.DOUBLE,
        ir.DataType.INT32,
        ir.DataType.STRING,
        ir.DataType.INT64,  # onnxruntime#5367 (1.6)
        ir.DataType.FLOAT16,  # onnxruntime#18594 (1.17)
    }
)
"""The element types ONNX Runtime's CPU ``SplitToSequence`` kernel is registered for in every
release seqpasses accepts (onnxruntime 1.17 and later; bool came in 1.23, onnxruntime#24929): a
list of another type held as one tensor is never written back with it, so that ONNX Runtime
can load the result."""


NOT_ON_SEQUENCES = (
    "which ONNX does not define on sequences (an exporter's list operation, such as a list "
    "slice l[::-1]: ONNX Runtime refuses to load the model)"
)
"""Why a sequence read or made by such an op stays: what it means is not ONNX's to say."""


@cache
def defined_on_sequences(op_type: str, opset: int) -> bool:
    """Whether the ONNX op ``op_type`` at ``opset`` takes or makes a sequence (some type
    constraint of its schema admits one); True for an op ONNX does not know."""
    try:
        schema = onnx.defs.get_schema(op_type, max(opset, 1), "")
    except Exception:
        return True
    return any(
        allowed.startswith("seq(") or allowed.startswith("optional(seq")
        for constraint in schema.type_constraints
        for allowed in constraint.allowed_type_strs
    ) or any("seq(" in formal.type_str for formal in [*schema.inputs, *schema.outputs])


def model_ops(model: ir.Model | onnx.ModelProto) -> Counter[str]:
    """Op counts over the main graph, every subgraph and every model-local function; ops of
    other domains as ``domain::op_type``."""
    counts: Counter[str] = Counter()
    if isinstance(model, onnx.ModelProto):
        for node in all_proto_nodes(model):
            op, domain = node.op_type, node.domain
            counts[op if domain in DEFAULT_DOMAINS else f"{domain}::{op}"] += 1
        return counts
    for held in all_nodes(model):
        op, domain = held.op_type, held.domain
        counts[op if domain in DEFAULT_DOMAINS else f"{domain}::{op}"] += 1
    return counts


def model_sequence_ops(model: ir.Model | onnx.ModelProto) -> int:
    """How many default-domain sequence ops a model holds, subgraphs and functions included."""
    return sum(n for op, n in model_ops(model).items() if op in SEQUENCE_OPS)

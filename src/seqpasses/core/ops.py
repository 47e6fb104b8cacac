"""The ONNX op vocabulary seqpasses reasons about: sequence ops and optional ops."""

from __future__ import annotations

import onnx_ir as ir

__all__ = ["LEFT_OPS", "OPTIONAL_OPS", "ORT_SPLIT_TO_SEQUENCE_TYPES", "SEQUENCE_OPS"]

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

"""The ONNX op vocabulary seqpasses reasons about: sequence ops and optional ops."""

from __future__ import annotations

__all__ = ["OPTIONAL_OPS", "SEQUENCE_OPS"]

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

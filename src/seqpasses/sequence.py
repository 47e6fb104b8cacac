"""The abstract value of a sequence, and ONNX's position rules in one place.

Every sequence-typed value is, as far as seqpasses knows, either a
:class:`StaticSequence` (an ordered list of tensor values that exist in the graph)
or :class:`Unknown` with the reason why.  The list operations here are pure: they
return new sequences, or raise :class:`PositionError` with a reason when the ONNX
spec would fail at run time, so that callers leave the node alone.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import onnx_ir as ir

__all__ = [
    "PositionError",
    "StaticSequence",
    "Unknown",
    "constant_array",
    "normalize_at_position",
    "normalize_insert_position",
]


def constant_array(value: ir.Value) -> np.ndarray | None:
    """The array a value holds when it is an initializer or a ``Constant`` node's output.

    A lean version of ``onnx_ir.convenience.get_const_tensor`` for the hot path: no
    runtime-checkable Protocol ``isinstance`` checks, which cost ~100 us each.
    """
    tensor = value.const_value
    if tensor is None:
        node = value.producer()
        if node is None or node.op_type != "Constant" or node.domain not in ("", "ai.onnx"):
            return None
        if len(node.attributes) != 1:
            return None
        name, attr = next(iter(node.attributes.items()))
        if attr.is_ref():
            return None
        if name == "value":
            tensor = attr.value
        elif name in ("value_int", "value_ints"):
            return np.array(attr.value, dtype=np.int64)
        elif name in ("value_float", "value_floats"):
            return np.array(attr.value, dtype=np.float32)
        else:
            return None
    try:
        return tensor.numpy()
    except Exception:
        return None


class PositionError(ValueError):
    """A position the spec rejects: the node must stay and fail at run time as before."""


def normalize_insert_position(position: int | None, length: int) -> int:
    """SequenceInsert: default is the back; accepted range is ``[-n, n]``."""
    if position is None:
        return length
    if not -length <= position <= length:
        raise PositionError(
            f"insert position {position} is outside [-{length}, {length}] for a sequence of length {length}"
        )
    return position + length if position < 0 else position


def normalize_at_position(position: int | None, length: int) -> int:
    """SequenceAt / SequenceErase: accepted range is ``[-n, n-1]``; ``None`` means the last one."""
    if position is None:
        if length == 0:
            raise PositionError("erase from an empty sequence")
        return length - 1
    if not -length <= position <= length - 1:
        raise PositionError(
            f"position {position} is outside [-{length}, {length - 1}] for a sequence of length {length}"
        )
    return position + length if position < 0 else position


@dataclass(frozen=True)
class StaticSequence:
    """A sequence whose elements are known graph values, in order.

    ``dtype`` is the element type when known (SequenceEmpty's ``dtype`` attribute or
    the elements' own), so that an empty sequence can still be written back typed.
    """

    elements: tuple[ir.Value, ...]
    dtype: ir.DataType | None

    def __len__(self) -> int:
        return len(self.elements)

    def insert(self, position: int | None, value: ir.Value) -> StaticSequence:
        index = normalize_insert_position(position, len(self))
        items = list(self.elements)
        items.insert(index, value)
        return StaticSequence(tuple(items), self.dtype or value.dtype)

    def erase(self, position: int | None) -> StaticSequence:
        index = normalize_at_position(position, len(self))
        items = list(self.elements)
        del items[index]
        return StaticSequence(tuple(items), self.dtype)

    def at(self, position: int) -> ir.Value:
        return self.elements[normalize_at_position(position, len(self))]


@dataclass(frozen=True)
class Unknown:
    """A sequence whose contents are only known at run time, and why."""

    reason: str

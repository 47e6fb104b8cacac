"""The abstract value of a sequence, and ONNX's position rules in one place.

Every sequence-typed value is, as far as seqpasses knows, a :class:`StaticSequence` (an
ordered list of tensor values that exist in the graph), a :class:`StackedSequence` (one
tensor ``[n, *E]`` holding elements of one shape, its length and positions known only at run
time), or :class:`Unknown` with the :class:`Reason` why.  The list operations here are pure: they
return new sequences, or raise :class:`PositionError` with a reason when the ONNX
spec would fail at run time, so that callers leave the node alone.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace

import onnx_ir as ir

__all__ = [
    "FAILING_KINDS",
    "LOOP_ATTEMPTS",
    "REASON_KINDS",
    "LoopReason",
    "PositionError",
    "Reason",
    "StackedSequence",
    "StaticSequence",
    "Unknown",
    "normalize_at_position",
    "normalize_insert_position",
    "ones_as_long_as",
    "sequence_dtype",
    "split_squeezes",
]


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


def ones_as_long_as(split: ir.Value, length: ir.Shape | None, size: object) -> bool:
    """Whether ``split`` (of shape ``length``) is a vector of ones as long as ``size`` (a
    dim): TorchScript's ``repeat_interleave`` splits by ``ConstantOfShape(Shape(r), value=1)``,
    whose length is known only as a dim (``n``, the same as the split axis'). Such a split
    cuts chunks of one, as many as the axis is long, and never fails."""
    from seqpasses.core.dims import same_dim

    producer = split.producer()
    if producer is None or producer.op_type != "ConstantOfShape":
        return False
    if producer.domain not in ("", "ai.onnx"):
        return False
    attr = producer.attributes.get("value")
    if attr is None or attr.is_ref() or attr.type != ir.AttributeType.TENSOR:
        return False
    value = attr.as_tensor().numpy()
    if value.size != 1 or value.dtype.kind not in "iu" or int(value.reshape(-1)[0]) != 1:
        return False
    return length is not None and len(length) == 1 and same_dim(length[0], size)


def sequence_dtype(value: ir.Value | None) -> ir.DataType | None:
    """The element type ``value`` declares when it is typed as a sequence of tensors."""
    type_ = value.type if value is not None else None
    if isinstance(type_, ir.SequenceType) and isinstance(type_.elem_type, ir.TensorType):
        return type_.elem_type.dtype
    return None


def split_squeezes(
    split_rank: int | None, keepdims: bool, unit_chunks: bool, strict_spec: bool, empty: bool
) -> bool | None:
    """Whether ``SplitToSequence`` drops the split axis from its chunks; None where ONNX
    Runtime fails at run time. One rule for the transfers and the verifier's kernel.

    ``split_rank``: None when no ``split`` is given, 0 for a scalar, 1 for sizes;
    ``unit_chunks``: every chunk is 1 long on the axis; ``empty``: the input has no element.

    - no ``split``: chunks of one, squeezed when ``keepdims=0`` (spec and ONNX Runtime agree);
    - sizes: ``keepdims`` is ignored, nothing is squeezed;
    - a scalar: the spec ignores ``keepdims`` (``strict_spec``: nothing is squeezed). ONNX
      Runtime, with ``keepdims=0``, reshapes every chunk to drop the axis: right when each chunk
      is 1 long there (a split of 1, or a dim of 1) or holds no element; any other chunk makes
      that reshape, so the op, fail.
    """
    if split_rank is None:
        return not keepdims
    if split_rank != 0 or keepdims or strict_spec:
        return False
    return True if unit_chunks or empty else None


class StaticSequence:
    """A sequence whose elements are known graph values, in order.

    ``dtype`` is the element type when known (SequenceEmpty's ``dtype`` attribute or
    the elements' own), so that an empty sequence can still be written back typed.

    Versions share their elements: a sequence is a view of the first ``len`` items of a list
    that later versions may extend. Appending to the newest version extends that list in place
    and erasing the last element only shortens the view, so a chain of n appends (or pops)
    costs O(n) in all, and every older version still sees exactly its own elements. Edits
    elsewhere copy. ``elements`` (a tuple) is made when asked for, once per version.
    """

    __slots__ = ("_items", "_length", "_tuple", "dtype")

    def __init__(self, elements: Iterable[ir.Value], dtype: ir.DataType | None) -> None:
        self._items: list[ir.Value] = list(elements)
        self._length = len(self._items)
        self._tuple: tuple[ir.Value, ...] | None = None
        self.dtype = dtype

    @classmethod
    def _view(cls, items: list[ir.Value], length: int, dtype: ir.DataType | None) -> StaticSequence:
        seq = cls.__new__(cls)
        seq._items, seq._length, seq._tuple, seq.dtype = items, length, None, dtype
        return seq

    @property
    def elements(self) -> tuple[ir.Value, ...]:
        if self._tuple is None:
            self._tuple = tuple(self._items[: self._length])
        return self._tuple

    def __len__(self) -> int:
        return self._length

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, StaticSequence):
            return NotImplemented
        return self.dtype == other.dtype and self.elements == other.elements

    def __hash__(self) -> int:
        return hash((self.elements, self.dtype))

    def __repr__(self) -> str:
        return f"StaticSequence({self.elements!r}, {self.dtype!r})"

    def insert(
        self, position: int | None, value: ir.Value, dtype: ir.DataType | None = None
    ) -> StaticSequence:
        """The list with ``value`` inserted at ``position`` (None: at the end); its dtype, where
        the list has none yet, the value's (``dtype``: what is known of it beyond its own)."""
        index = normalize_insert_position(position, len(self))
        dtype = self.dtype or value.dtype or dtype
        if index == self._length:
            items = self._items
            if len(items) != self._length:  # a later version already extended the list
                items = items[: self._length]
            items.append(value)
            return StaticSequence._view(items, self._length + 1, dtype)
        items = self._items[: self._length]
        items.insert(index, value)
        return StaticSequence._view(items, self._length + 1, dtype)

    def erase(self, position: int | None) -> StaticSequence:
        index = normalize_at_position(position, len(self))
        if index == self._length - 1:
            return StaticSequence._view(self._items, index, self.dtype)
        items = self._items[: self._length]
        del items[index]
        return StaticSequence._view(items, self._length - 1, self.dtype)

    def at(self, position: int) -> ir.Value:
        return self._items[normalize_at_position(position, len(self))]


Dim = int | ir.SymbolicDim


@dataclass(frozen=True)
class StackedSequence:
    """A sequence held as one tensor ``tensor`` of shape ``[length, *element]``: element ``i``
    is ``tensor[i]``. Every element provably has dtype ``dtype`` and shape ``element``
    (numbers, or the same named dims); the length may be known only at run time, and is then
    at least ``at_least``. ``checked``: the tensor holds a run-time check of a position (an
    edit that fails out of range, as the original does), so its length, even when a number,
    is read off the tensor and not folded away with the check. ``guard``: that check's value
    (an ``int64 [1]``), when it is one in the tensor's graph: a length that is a number is
    computed from it (``n + 0 * guard``), since a runtime that knows the tensor's shape folds
    a ``Shape`` of it, and the check with it (ONNX Runtime does)."""

    tensor: ir.Value
    length: Dim  # a number, or a symbolic dim (unnamed when nothing names it)
    element: ir.Shape
    dtype: ir.DataType | None
    at_least: int = 0
    checked: bool = False
    guard: ir.Value | None = None

    def shape(self) -> ir.Shape:
        return ir.Shape([self.length, *self.element])

    @property
    def least(self) -> int:
        """The fewest elements it can have."""
        return self.length if isinstance(self.length, int) else self.at_least


REASON_KINDS: dict[str, str] = {
    "run-time-value": "a position, trip count or size known only at run time",
    "bad-value": "a position or size of the wrong type or element count",
    "out-of-range": "a position or axis outside what the spec accepts: left to fail as before",
    "run-time-failure": "an op that fails at run time as it is (empty concat, mismatched shapes)",
    "unlike-elements": "a list whose elements are not provably of one dtype and shape, where "
    "a run-time position or length would need it held as one tensor",
    "unknown-sequence": "a sequence that is a graph input, a body input, or comes from an op "
    "that is not statically known",
    "unknown-shape": "a rank or dim the rewrite needs is not known",
    "invalid": "an attribute or input the spec does not allow",
    "attribute-reference": "an attribute that refers to a function's attribute",
    "opset": "what the rewrite would emit does not exist at the model's opset",
    "loop": "a Loop that is neither unrolled nor given a scan output",
    "copies": "unrolling or inlining would only multiply a sequence op that stays",
    "needs-sequence": "a canonical sequence that a consumer or a graph output needs",
    "limit": "a rewrite past a limit seqpasses keeps on its work (--max-split, --node-budget)",
}
"""Why a node can be left, by kind (rule files that show a node being left name its kind)."""

FAILING_KINDS = frozenset({"out-of-range", "run-time-failure"})
"""The kinds of a node left because it fails at run time (whatever the walk decides later)."""


@dataclass(frozen=True)
class Reason:
    """Why a node was left: its kind, the text a user reads, and notes of later decisions."""

    kind: str
    text: str
    notes: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        assert self.kind in REASON_KINDS, self.kind

    def __str__(self) -> str:
        return "; ".join((self.text, *self.notes))

    def noted(self, note: str) -> Reason:
        return replace(self, notes=(*self.notes, note))

    def through(self, node: ir.Node) -> Reason:
        """The reason as what reads ``node``'s sequence sees it: where the root cause is."""
        if self.text.startswith("sequence "):
            return self
        name = f"{node.op_type} '{node.name}'" if node.name else node.op_type
        return Reason(self.kind, f"sequence from {name}: {self}")


LOOP_ATTEMPTS: dict[str, str] = {
    "unroll": "unrolled",
    "scan": "a scan output",
    "running": "carried as its running concatenation",
    "elements": "carried as its elements",
    "stacked": "carried as one tensor",
}
"""The ways a Loop's list can go, as its reasons name them."""


@dataclass(frozen=True)
class LoopReason:
    """Why one way of removing a Loop's list (``attempt``, a key of :data:`LOOP_ATTEMPTS`)
    did not apply to it."""

    attempt: str
    text: str

    def __post_init__(self) -> None:
        assert self.attempt in LOOP_ATTEMPTS, self.attempt

    def __str__(self) -> str:
        return f"not {LOOP_ATTEMPTS[self.attempt]}: {self.text}"


@dataclass(frozen=True)
class Unknown:
    """A sequence whose contents are only known at run time, and why."""

    reason: Reason

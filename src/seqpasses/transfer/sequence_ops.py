"""Straight-line sequence ops on static sequences: one transfer per op.

1. ``SequenceEmpty`` / ``SequenceConstruct`` / ``SequenceInsert`` / ``SequenceErase`` /
   ``Identity``: the static list they make (positions follow :mod:`seqpasses.core.sequence`).
2. ``SequenceAt(s, const)`` -> the element itself.
3. ``SequenceLength(s)`` -> an int64 scalar ``Constant``.
4. ``ConcatFromSequence(s)`` -> ``Concat`` (``new_axis=0``) or ``Unsqueeze`` + ``Concat``
   (``new_axis=1``); one element -> the element or its ``Unsqueeze``.
(``SplitToSequence``: :mod:`.split_to_sequence`.)

Nothing is rewritten that cannot be proven: each transfer leaves with a reason instead.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import onnx_ir as ir

from seqpasses.core.dims import INT64_MAX, same_dim
from seqpasses.core.sequence import (
    PositionError,
    StaticSequence,
    sequence_dtype,
)
from seqpasses.core.shapes import ShapeOracle
from seqpasses.options import Group
from seqpasses.transfer import stacked, unit_split
from seqpasses.transfer.common import concat_new_axis, position
from seqpasses.walk.context import Context, Entry, Scope
from seqpasses.walk.facts import Reason
from seqpasses.walk.outcomes import Fold, Learned, Leave, Outcome, Record, Replace

HeldRewrite = Callable[[Context, ir.Node, Scope, Reason], Outcome]
"""A rewrite of a list held as one tensor, given why the list is not static."""

__all__ = ["RULES", "TABLE"]


def _out_of_range(error: PositionError) -> Reason:
    return Reason("out-of-range", f"{error}: left to fail at run time as before")


def _sequence_empty(ctx: Context, node: ir.Node, scope: Scope) -> Outcome:
    dtype = node.attributes.get_int("dtype", int(ir.DataType.FLOAT))
    seq = StaticSequence((), ir.DataType(dtype))
    out = node.outputs[0]
    return Fold(values={out: seq}, learned=Learned(canonical={out: seq}))


def _element_dtype(
    values: tuple[ir.Value, ...], scope: Scope, declared: ir.Value
) -> ir.DataType | None:
    """The element type of a list of ``values``: theirs (inferred when undeclared, a Constant's
    say), else what the list ``declared`` says, so that the list keeps it once emptied."""
    for value in values:
        type_ = value.type if value.dtype is not None else scope.shapes.type(value)
        if isinstance(type_, ir.TensorType):
            return type_.dtype
    return sequence_dtype(declared)


def _sequence_construct(ctx: Context, node: ir.Node, scope: Scope) -> Outcome:
    elements = tuple(v for v in node.inputs if v is not None)
    if len(elements) != len(node.inputs) or not elements:
        return Leave(reason=Reason("invalid", "SequenceConstruct with a missing input"))
    dtype = _element_dtype(elements[:1], scope, node.outputs[0])
    seq = StaticSequence(elements, dtype)
    out = node.outputs[0]
    return Fold(values={out: seq}, learned=Learned(canonical={out: seq}))


def _sequence_insert(ctx: Context, node: ir.Node, scope: Scope) -> Outcome:
    seq = ctx.facts.static(node.inputs[0])
    if seq is None:
        return Leave(reason=ctx.facts.why_unknown(node.inputs[0]))
    where, why = position(ctx, node, 2)
    if why is not None:  # a run-time position: the list as one tensor [n, *E]
        return _as_stacked(ctx, node, scope, why, stacked.insert)
    tensor = node.inputs[1]
    if tensor is None:
        return Leave(reason=Reason("invalid", "SequenceInsert without a tensor"))
    dtype = None  # (the tensor's type, which the list takes: kept once it is emptied)
    if seq.dtype is None and tensor.dtype is None:
        type_ = scope.shapes.type(tensor)
        dtype = type_.dtype if isinstance(type_, ir.TensorType) else None
    try:
        return Fold(values={node.outputs[0]: seq.insert(where, tensor, dtype)})
    except PositionError as error:
        return Leave(reason=_out_of_range(error))


def _sequence_erase(ctx: Context, node: ir.Node, scope: Scope) -> Outcome:
    seq = ctx.facts.static(node.inputs[0])
    if seq is None:
        return Leave(reason=ctx.facts.why_unknown(node.inputs[0]))
    where, why = position(ctx, node, 1)
    if why is not None:  # a run-time position: the list as one tensor [n, *E]
        return _as_stacked(ctx, node, scope, why, stacked.erase)
    try:
        return Fold(values={node.outputs[0]: seq.erase(where)})
    except PositionError as error:
        return Leave(reason=_out_of_range(error))


def _as_stacked(
    ctx: Context, node: ir.Node, scope: Scope, why: Reason, rewrite: HeldRewrite
) -> Outcome:
    """Hold the list as one tensor [n, *E] for a run-time position, or leave ``node`` with
    ``why`` when that is switched off (``--skip stacked``)."""
    if not ctx.options.enabled(Group.STACKED):
        return Leave(reason=why)
    return rewrite(ctx, node, scope, why)


def _identity(ctx: Context, node: ir.Node, scope: Scope) -> Outcome:
    seq = ctx.facts.static(node.inputs[0])
    return Fold(values={node.outputs[0]: seq} if seq is not None else {})


def _sequence_at(ctx: Context, node: ir.Node, scope: Scope) -> Outcome:
    seq = ctx.facts.static(node.inputs[0])
    assert seq is not None
    where, why = position(ctx, node, 1)
    if why is not None or where is None:
        read = unit_split.read_at(ctx, node, scope)  # a run-time position of torch.unbind's list
        if read is not None:
            return read
        if why is None:
            return Leave(reason=Reason("invalid", "SequenceAt without a position"))
        return _as_stacked(ctx, node, scope, why, stacked.at)
    try:
        element = ctx.edits.current(seq.at(where))
    except PositionError as error:
        return Leave(reason=_out_of_range(error))
    record = Record("sequence-at", f"position {where} -> '{element.name}'")
    return Replace(uses=[(node.outputs[0], element)], records=[record])


def _sequence_length(ctx: Context, node: ir.Node, scope: Scope) -> Outcome:
    seq = ctx.facts.static(node.inputs[0])
    assert seq is not None
    value = ctx.emitter(scope, node).constant(np.array(len(seq), dtype=np.int64))
    record = Record("sequence-length", f"length {len(seq)}")
    return Replace(uses=[(node.outputs[0], value)], records=[record])


def _ranks(values: tuple[ir.Value, ...], shapes: ShapeOracle) -> set[int]:
    """The ranks of ``values`` that are known."""
    ranks = set()
    for value in values:
        shape = shapes.shape(value)
        if shape is not None:
            ranks.add(len(shape))
    return ranks


def _rank(values: tuple[ir.Value, ...], shapes: ShapeOracle) -> int | None:
    """The one rank of the elements whose shape is known (None: none known, or several). An
    element of unknown shape and another rank makes the original fail, whatever the axis."""
    ranks = _ranks(values, shapes)
    return ranks.pop() if len(ranks) == 1 else None


def _conflicting_dim(
    values: tuple[ir.Value, ...], shapes: ShapeOracle, skip: int | None
) -> int | None:
    """The first dim (other than ``skip``) where two elements have different known sizes."""
    known = [shapes.shape(v) for v in values]
    rank = len(known[0]) if known[0] is not None else 0
    for i in range(rank):
        if i == skip:
            continue
        sizes = {s[i] for s in known if s is not None and isinstance(s[i], int)}
        if len(sizes) > 1:
            return i
    return None


def _provably_alike(values: tuple[ir.Value, ...], shapes: ShapeOracle, skip: int | None) -> bool:
    """Whether every element has the same rank and the same dims (numbers or names) outside
    dim ``skip``."""
    known = [shapes.shape(v) for v in values]
    first = known[0]
    if first is None:
        return False
    rest = [s for s in known[1:] if s is not None and len(s) == len(first)]
    if len(rest) != len(known) - 1:
        return False
    return all(same_dim(s[i], first[i]) for s in rest for i in range(len(first)) if i != skip)


def _overflows(values: tuple[ir.Value, ...], shapes: ShapeOracle, axis: int) -> bool:
    """Whether the known sizes of dim ``axis`` of ``values`` sum past an int64."""
    total = 0
    for value in values:
        shape = shapes.shape(value)
        dim = shape[axis] if shape is not None and axis < len(shape) else None
        total += dim if isinstance(dim, int) else 0
    return total > INT64_MAX


def _leave(reason: Reason) -> Outcome:
    return Leave(reason=reason)


def _concat_from_sequence(ctx: Context, node: ir.Node, scope: Scope) -> Outcome:
    new_axis = concat_new_axis(node)
    if isinstance(new_axis, Reason):
        return Leave(reason=new_axis)
    seq = ctx.facts.static(node.inputs[0])
    assert seq is not None
    if len(seq) == 0:
        reason = "ConcatFromSequence of an empty sequence fails at run time; left as is"
        return _leave(Reason("run-time-failure", reason))
    axis_attr = node.attributes.get("axis")
    if axis_attr is None:
        return _leave(Reason("invalid", "ConcatFromSequence without its required axis"))
    axis = axis_attr.as_int()
    elements = tuple(ctx.edits.current(e) for e in seq.elements)  # (what replaced each now)
    if len(_ranks(elements, scope.shapes)) > 1:
        reason = "elements differ in rank: ConcatFromSequence fails at run time; left as is"
        return _leave(Reason("run-time-failure", reason))
    rank = _rank(elements, scope.shapes)
    if rank is not None:
        out_rank = rank + 1 if new_axis == 1 else rank
        if not -out_rank <= axis <= out_rank - 1:
            reason = (
                f"axis {axis} is outside [-{out_rank}, {out_rank - 1}]: left to fail at run time"
            )
            return _leave(Reason("out-of-range", reason))
        axis = axis + out_rank if axis < 0 else axis
        conflict = _conflicting_dim(elements, scope.shapes, None if new_axis == 1 else axis)
        if conflict is not None:
            reason = f"elements differ in dim {conflict}: ConcatFromSequence fails at run time; left as is"
            return _leave(Reason("run-time-failure", reason))
        if new_axis == 0 and _overflows(elements, scope.shapes, axis):
            reason = f"the elements' dims {axis} sum past the largest dim ONNX can hold; left as is"
            return _leave(Reason("limit", reason))
    # With the rank unknown the axis passes through unchanged: Unsqueeze and Concat accept the
    # same axis range as ConcatFromSequence, so both models fail or succeed together.
    emit = ctx.emitter(scope, node)
    parts = list(seq.elements)
    if new_axis == 1:
        parts = [emit.unsqueeze(v, axis) for v in parts]
    result = parts[0] if len(parts) == 1 else emit.concat(parts, axis)
    if len(parts) > 1 and not _provably_alike(elements, scope.shapes, None if new_axis else axis):
        # elements not provably alike outside the axis: the Concat fails where the original
        # does, and is kept even when only what is computed from its shape is read
        emit.check(result)
    rule = "concat-from-sequence-new-axis" if new_axis == 1 else "concat-from-sequence"
    record = Record(rule, f"{len(seq)} elements, axis {axis}")
    return Replace(uses=[(node.outputs[0], result)], records=[record])


TABLE: dict[tuple[str, str], Entry] = {
    ("SequenceEmpty", "*"): Entry(_sequence_empty),
    ("SequenceConstruct", "*"): Entry(_sequence_construct),
    ("SequenceInsert", "*"): Entry(_sequence_insert),
    ("SequenceErase", "*"): Entry(_sequence_erase),
    ("Identity", "*"): Entry(_identity),
    ("SequenceAt", "static"): Entry(_sequence_at),
    ("SequenceLength", "static"): Entry(_sequence_length),
    ("ConcatFromSequence", "static"): Entry(_concat_from_sequence),
}

RULES: dict[str, tuple[str, str]] = {
    "sequence-at": (Group.SEQUENCE_OPS, "SequenceAt(s, const) of a static s -> the element"),
    "sequence-length": (Group.SEQUENCE_OPS, "SequenceLength(s) of a static s -> an int64 Constant"),
    "concat-from-sequence": (Group.SEQUENCE_OPS, "ConcatFromSequence(new_axis=0) -> Concat"),
    "concat-from-sequence-new-axis": (
        Group.SEQUENCE_OPS,
        "ConcatFromSequence(new_axis=1) -> Unsqueeze each element + Concat",
    ),
}
"""The rewrites this family applies: id -> (group, one line of doc)."""

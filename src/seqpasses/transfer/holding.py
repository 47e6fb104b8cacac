"""Whether a list can be held as one tensor ``[n, *E]``, and that tensor: the element shape
every element provably has, and the stacked form of a static list, a split into chunks of one
or a list already held so (:mod:`.stacked` rewrites the ops on it)."""

from __future__ import annotations

import onnx_ir as ir

from seqpasses.core.dims import same_shape, shape_text
from seqpasses.core.emit import Emitter
from seqpasses.core.graph import is_default
from seqpasses.core.ops import ORT_SPLIT_TO_SEQUENCE_TYPES
from seqpasses.core.sequence import (
    Reason,
    StackedSequence,
    StaticSequence,
    sequence_dtype,
)
from seqpasses.options import Group
from seqpasses.transfer import rows, unit_split
from seqpasses.transfer.common import follows_ort
from seqpasses.walk.context import Context, Scope

__all__ = ["element_shape", "stack", "stacked_of"]


def element_shape(
    ctx: Context, values: tuple[ir.Value, ...], scope: Scope
) -> tuple[ir.Shape, ir.DataType | None] | Reason:
    """The shape and dtype every one of ``values`` provably has, or why not."""
    first_type, first = scope.shapes.known(values[0])
    dtype = getattr(first_type, "dtype", None)
    for value in values[1:]:
        type_, shape = scope.shapes.known(value)
        if not same_shape(first, shape) or getattr(type_, "dtype", None) != dtype:
            return Reason(
                "unlike-elements",
                f"elements of shapes {shape_text(first)} and {shape_text(shape)} are not "
                "provably alike: the list cannot be held as one tensor",
            )
    if first is None or not same_shape(first, first):
        return Reason(
            "unlike-elements",
            f"element shape {shape_text(first)} is not fully known: the list cannot be held "
            "as one tensor",
        )
    return first, dtype


_TENSOR_READS = frozenset(
    {"SequenceAt", "SequenceLength", "ConcatFromSequence", "SequenceInsert", "SequenceErase"}
)


def _read_as_list(value: ir.Value) -> bool:
    """Whether what comes of ``value`` (through inserts, erases and identities) reaches a graph
    output or an op that reads a list as a list (a SequenceMap, a Loop or If, another domain):
    there a list held as one tensor must be written back."""
    seen: set[ir.Value] = set()
    work = [value]
    while work:
        current = work.pop()
        if current in seen:
            continue
        seen.add(current)
        if current.is_graph_output():
            return True
        for use in current.uses():
            node = use.node
            if not is_default(node) or node.op_type not in (*_TENSOR_READS, "Identity"):
                return True
            if node.op_type in ("SequenceInsert", "SequenceErase", "Identity") and use.idx == 0:
                work.extend(node.outputs)
    return False


def stacked_of(
    ctx: Context,
    value: ir.Value | None,
    scope: Scope,
    anchor: ir.Node | None,
    hint: ir.Value | None = None,
) -> StackedSequence | Reason:
    """``value`` as one tensor ``[n, *E]``, built before ``anchor`` (at the end of the scope's
    graph when None) when needed; ``hint``: an element about to be added (it gives an empty
    list its element shape)."""
    if value is None:
        return Reason("invalid", "input is missing")
    if not ctx.options.enabled(Group.STACKED):
        return ctx.facts.why_unknown(value)
    if ctx.facts.in_unrolled_body(scope.graph):
        return Reason("run-time-value", "left to the unrolling of the loop around it")
    known = ctx.facts.values.get(value)
    if isinstance(known, StackedSequence):
        return known
    dtype = known.dtype if isinstance(known, StaticSequence) else sequence_dtype(value)
    if dtype is not None and dtype not in ORT_SPLIT_TO_SEQUENCE_TYPES and _read_as_list(value):
        return Reason(
            "unlike-elements",
            f"a list of {dtype.name.lower()} that something reads as a list: held as one tensor "
            "it would have to be written back by a SplitToSequence ONNX Runtime lacks",
        )
    emit = ctx.emitter(scope, anchor)
    if isinstance(known, StaticSequence):
        if not known.elements:
            if hint is None:
                return Reason(
                    "unknown-shape",
                    "an empty list: its element shape is not known until an element is added",
                )
            found = element_shape(ctx, (hint,), scope)
            if isinstance(found, Reason):
                return found
            empty = rows.empty_rows(emit, found[0], found[1], hint)
            assert empty is not None
            return StackedSequence(empty, 0, found[0], known.dtype or hint.dtype)
        found = element_shape(ctx, known.elements, scope)
        if isinstance(found, Reason):
            return found
        tensor = stack(ctx, emit, known)
        return StackedSequence(tensor, len(known), found[0], known.dtype or found[1])
    split = unit_split.find(ctx, value, scope)
    if split is not None:
        return _from_unit_split(emit, value.producer(), split, scope)
    return ctx.facts.why_unknown(value)


def stack(ctx: Context, emit: Emitter, seq: StaticSequence) -> ir.Value:
    """A static list of elements of one shape as one tensor ``[n, *E]``: its elements
    unsqueezed and concatenated (built once per graph)."""
    key = (id(emit.graph), seq.elements)
    cached = emit.owner.caches.stacks.get(key)
    if cached is not None:
        return cached
    made: dict[ir.Value, ir.Value] = {}  # an element listed twice is unsqueezed once
    for e in seq.elements:
        if e not in made:
            made[e] = emit.unsqueeze(ctx.edits.current(e), 0)
    parts = [made[e] for e in seq.elements]
    value = parts[0] if len(parts) == 1 else emit.concat(parts, 0)
    emit.owner.caches.stacks[key] = value
    return value


def _from_unit_split(
    emit: Emitter,
    producer: ir.Node | None,
    split: tuple[ir.Value, int, bool, bool],
    scope: Scope,
) -> StackedSequence | Reason:
    data, axis, squeeze, diverges = split
    shape = scope.shapes.shape(data)
    assert shape is not None  # find checked the rank
    perm = [axis, *(d for d in range(len(shape)) if d != axis)]
    tensor = data
    if perm != list(range(len(shape))):
        moved = ir.Shape([shape[d] for d in perm])
        tensor = emit.op("Transpose", [data], type=scope.shapes.type(data), shape=moved, perm=perm)
    element = [shape[d] for d in perm[1:]]
    if not squeeze:  # each element keeps the axis, of size 1
        element.insert(axis, 1)
        tensor = emit.unsqueeze(tensor, 1 + axis)
    if diverges and producer is not None:
        emit.diverges(tensor, follows_ort(producer, "the elements are squeezed"))
    data_type = scope.shapes.type(data)
    dtype = data_type.dtype if isinstance(data_type, ir.TensorType) else None
    return StackedSequence(tensor, shape[axis], ir.Shape(element), dtype)

"""Lists whose length or positions are known only at run time, held as one tensor ``[n, *E]``.

A list of ``n`` elements of dtype ``T`` and shape ``E`` (numbers, or the same named dims)
*is* one tensor ``S`` of shape ``[n, *E]`` (as XLA lowers TensorLists). A static list turns
into one the moment an op needs a run-time position: ``Concat`` of its elements unsqueezed; a
split into chunks of one already is one (its input, transposed). On ``S``:

1. ``SequenceAt(s, p)`` -> ``Gather(S, p)``: Gather accepts exactly ``[-n, n-1]`` and fails
   outside it, as SequenceAt does;
2. ``SequenceLength(s)`` -> ``n`` (a Constant when known, else ``Gather(Shape(S), 0)``);
3. ``SequenceInsert(s, t, p)`` -> ``S`` sliced at ``q`` with ``t`` unsqueezed between
   (no position: appended); ``SequenceErase(s, p)`` -> ``S`` without row ``q`` (no position:
   the last). A run-time ``p`` into a list of a known length of at most
   :data:`rows.TABLE_ROWS`: the rows of the result gathered by a row of a constant table
   (:func:`rows.by_table`); else ``p`` is checked and normalized as
   ``q = Gather(Range(0, n), p)`` (``Range(0, n + 1)`` for an insert): out of range either
   fails, as the original does. A
   ``p`` known before run time in a list of run-time length needs no ``q``: slices of
   constant bounds, and a ``Gather`` of row ``p`` (``p - 1`` for an insert) that nothing
   reads fails where the edit does;
4. ``ConcatFromSequence`` -> ``S`` (``new_axis=1``, axis 0), a ``Transpose`` of it, or a
   ``Reshape`` merging its first two axes (``new_axis=0``); when ``n`` may be 0 an unread
   ``Gather`` of row 0 keeps the original's failure on an empty list.

A stacked list that must be a sequence (a graph output, an op of another kind) is written back
as ``SplitToSequence(S, axis=0, keepdims=0)``.
"""

from __future__ import annotations

from dataclasses import replace

import onnx_ir as ir

from seqpasses.core.dims import bounded, same_shape, shape_text
from seqpasses.core.emit import Emitter
from seqpasses.core.graph import is_default
from seqpasses.core.merge import merge_axes
from seqpasses.core.sequence import (
    PositionError,
    Reason,
    StackedSequence,
    normalize_insert_position,
)
from seqpasses.options import Group
from seqpasses.transfer import rows, unit_split
from seqpasses.transfer.common import concat_new_axis
from seqpasses.transfer.holding import element_shape, stacked_of
from seqpasses.walk.context import Context, Entry, Scope
from seqpasses.walk.materialize import unstacked
from seqpasses.walk.outcomes import Fold, Leave, Outcome, Record, Replace

__all__ = ["RULES", "TABLE", "at", "element_shape", "erase", "insert", "stacked_of"]


def _leave(why: Reason, because: Reason | None) -> Outcome:
    """Leave the node: ``why`` the list cannot be one tensor, after ``because`` (why a static
    list needed to be: a run-time position)."""
    if because is not None:
        why = Reason(why.kind, f"{because}, and {why}")
    return Leave(reason=why)


def insert(ctx: Context, node: ir.Node, scope: Scope, because: Reason | None = None) -> Outcome:
    """``SequenceInsert`` on a list held (or that can be held) as one tensor."""
    tensor = node.inputs[1] if len(node.inputs) > 1 else None
    if tensor is None:
        return Leave(reason=Reason("invalid", "SequenceInsert without a tensor"))
    st = stacked_of(ctx, node.inputs[0], scope, node, hint=tensor)
    if isinstance(st, Reason):
        return _leave(st, because)
    type_, shape = scope.shapes.known(tensor)
    dtype = type_.dtype if isinstance(type_, ir.TensorType) else None
    if not same_shape(shape, st.element) or (st.dtype is not None and dtype != st.dtype):
        done = _unstacked_insert(ctx, node, scope, st) if isinstance(st.length, int) else None
        if done is not None:
            return done
        text = (
            f"the inserted tensor's shape {shape_text(shape)} is not provably the list's "
            f"{shape_text(st.element)}: the list cannot stay one tensor"
        )
        return _leave(Reason("unlike-elements", text), because)
    emit = ctx.emitter(scope, node)
    position = node.inputs[2] if len(node.inputs) > 2 else None
    index: int | ir.SymbolicDim | ir.Value | Reason = st.length
    if position is not None:
        fixed = ctx.const_int(position)[0]
        if fixed is not None and not isinstance(st.length, int):
            return _inserted_at(emit, node, st, tensor, fixed)
        if fixed is None:
            table = rows.by_table(emit, st, position, scope.shapes.shape(position), True)
            if table is not None:
                return _edited_by_table(node, emit, st, table, emit.unsqueeze(tensor, 0))
        index = rows.normalized(ctx, emit, st, position, inserting=True)
    if isinstance(index, Reason):
        return Leave(reason=index)
    row = emit.unsqueeze(tensor, 0)
    if index == 0:
        parts = [row, st.tensor]
    elif position is None or index == st.length:
        parts = [st.tensor, row]
    else:
        assert not isinstance(index, ir.SymbolicDim)
        before = rows.slice_rows(emit, st, 0, index)
        parts = [before, row, rows.slice_rows(emit, st, index, rows.END)]
    length = rows.plus(st.length, 1)
    out = rows.joined(emit, st, parts, length)
    checked = st.checked or isinstance(index, ir.Value)
    guard = rows.guard_of(emit, st, index) if not isinstance(index, ir.SymbolicDim) else st.guard
    grown = StackedSequence(out, length, st.element, st.dtype, st.least + 1, checked, guard)
    where = "at the back" if position is None else f"at {position.name!r}"
    record = Record("stacked-insert", f"a row {where} of a [n, *E] tensor", computed=True)
    return Fold(values={node.outputs[0]: grown}, records=[record])


def _edited_by_table(
    node: ir.Node,
    emit: Emitter,
    st: StackedSequence,
    table: tuple[ir.Value, ir.Value],
    row: ir.Value | None,
) -> Outcome:
    """An insert of ``row`` (None: an erase) at a run-time position of a list of a small known
    length: the rows :func:`rows.by_table` picks, of ``S`` (and ``row`` after it), gathered."""
    taken, zero = table
    source = st.tensor
    if row is not None:
        parts = [source, row]
        stacked = source.producer()
        if stacked is not None and stacked.op_type == "Concat" and _on_first_axis(stacked):
            parts = [*stacked.inputs, row]  # type: ignore[list-item]  # (one Concat, not two)
        full = ir.Shape([rows.plus(st.length, 1), *st.element])
        source = emit.concat(parts, 0, type=emit.type_of(st.tensor), shape=full)
    length = rows.plus(st.length, 1 if row is not None else -1)
    out = emit.op(
        "Gather",
        [source, taken],
        type=emit.type_of(st.tensor),
        shape=ir.Shape([length, *st.element]),
        axis=0,
    )
    least = length if isinstance(length, int) else 0
    guard = rows.joined_guard(emit, st, zero)
    edited = StackedSequence(out, length, st.element, st.dtype, least, True, guard)
    kind, what = ("insert", "a row") if row is not None else ("erase", "the row")
    position = node.inputs[2 if row is not None else 1]
    assert position is not None
    text = f"{what} at {position.name!r} of a [n, *E] tensor: rows picked from a table"
    record = Record(f"stacked-{kind}", text, computed=True)
    return Fold(values={node.outputs[0]: edited}, records=[record])


def _on_first_axis(concat: ir.Node) -> bool:
    axis = concat.attributes.get("axis")
    return is_default(concat) and axis is not None and axis.value == 0


def _inserted_at(
    emit: Emitter, node: ir.Node, st: StackedSequence, tensor: ir.Value, position: int
) -> Outcome:
    """An insert at a known ``position`` into a list whose length ``n`` is known only at run
    time: ``S[:p]``, the row, ``S[p:]`` (slices of constant bounds), with a check, read by
    nothing, that fails where the insert does (``p`` outside ``[-n, n]``: row ``p - 1``, or
    ``p``, is not there)."""
    if position != 0:
        rows.check_row(emit, st, position - 1 if position > 0 else position)
    row = emit.unsqueeze(tensor, 0)
    parts = [row, st.tensor]
    if position != 0:
        parts = [
            rows.slice_rows(emit, st, 0, position, position if position > 0 else None),
            row,
            rows.slice_rows(emit, st, position, rows.END, -position if position < 0 else None),
        ]
    length = rows.plus(st.length, 1)
    out = rows.joined(emit, st, parts, length)
    least = max(st.least, abs(position)) + 1
    grown = replace(st, tensor=out, length=length, at_least=least)
    record = Record("stacked-insert", f"a row at {position} of a [n, *E] tensor", computed=True)
    return Fold(values={node.outputs[0]: grown}, records=[record])


def _unstacked_insert(
    ctx: Context, node: ir.Node, scope: Scope, st: StackedSequence
) -> Outcome | None:
    """An element of another shape into a list of known length at a known position: the list's
    rows as a static list, the element inserted into it (None: the position is not known)."""
    position = node.inputs[2] if len(node.inputs) > 2 else None
    where = None
    if position is not None:
        where, _ = ctx.const_int(position)
        if where is None:
            return None
    assert isinstance(st.length, int)
    if (st.length == 0 and st.checked) or st.length > ctx.options.max_split:
        return None  # (no rows would hold the check; too many rows to split)
    try:
        normalize_insert_position(where, st.length) if where is not None else None
    except PositionError as error:
        text = f"{error}: left to fail at run time as before"
        return Leave(reason=Reason("out-of-range", text))
    tensor = node.inputs[1]
    assert tensor is not None
    listed = unstacked(ctx.emitter(scope, node), st)
    return Fold(values={node.outputs[0]: listed.insert(where, tensor)})


def erase(ctx: Context, node: ir.Node, scope: Scope, because: Reason | None = None) -> Outcome:
    """``SequenceErase`` on a list held (or that can be held) as one tensor."""
    st = stacked_of(ctx, node.inputs[0], scope, node)
    if isinstance(st, Reason):
        return _leave(st, because)
    if st.length == 0:
        text = "SequenceErase of an empty sequence fails at run time; left as is"
        return Leave(reason=Reason("out-of-range", text))
    emit = ctx.emitter(scope, node)
    position = node.inputs[1] if len(node.inputs) > 1 else None
    fixed = -1 if position is None else ctx.const_int(position)[0]
    if fixed is not None and not isinstance(st.length, int):
        return _erased_at(emit, node, st, fixed)
    if position is not None and fixed is None:
        table = rows.by_table(emit, st, position, scope.shapes.shape(position), False)
        if table is not None:
            return _edited_by_table(node, emit, st, table, None)
    static = position is None or fixed is not None
    known = None if static and isinstance(st.length, int) else rows.positions(emit, st, 0)
    index = rows.normalized(ctx, emit, st, position, inserting=False, known=known)
    if isinstance(index, Reason):
        return Leave(reason=index)
    length = rows.plus(st.length, -1)
    if isinstance(index, ir.Value):
        assert known is not None
        out = rows.without_row(emit, st, index, known)
    else:
        assert isinstance(st.length, int)
        parts = []
        if index > 0:
            parts.append(rows.slice_rows(emit, st, 0, index, index))
        if index < st.length - 1:
            after = st.length - index - 1
            parts.append(rows.slice_rows(emit, st, index + 1, rows.END, after))
        if not parts:  # the only element: an empty [0, *E]
            parts = [rows.slice_rows(emit, st, 0, 0, 0)]
        out = rows.joined(emit, st, parts, length)
    checked = st.checked or isinstance(index, ir.Value)
    guard = rows.guard_of(emit, st, index)
    least = max(st.least - 1, 0)
    shrunk = StackedSequence(out, length, st.element, st.dtype, least, checked, guard)
    where = "the last row" if position is None else f"the row at {position.name!r}"
    record = Record("stacked-erase", f"{where} of a [n, *E] tensor", computed=True)
    return Fold(values={node.outputs[0]: shrunk}, records=[record])


def _erased_at(emit: Emitter, node: ir.Node, st: StackedSequence, position: int) -> Outcome:
    """An erase at a known ``position`` from a list whose length ``n`` is known only at run
    time: ``S[:p]`` and ``S[p+1:]`` (slices of constant bounds), with a check, read by
    nothing, that fails where the erase does (row ``p`` is not there)."""
    rows.check_row(emit, st, position)
    length = rows.plus(st.length, -1)
    parts = []
    if position != 0:
        before = length if position == -1 else (position if position > 0 else None)
        parts.append(rows.slice_rows(emit, st, 0, position, before))
    if position != -1:
        after = length if position == 0 else (-position - 1 if position < 0 else None)
        parts.append(rows.slice_rows(emit, st, position + 1, rows.END, after))
    out = rows.joined(emit, st, parts, length)
    least = max(st.least, position + 1 if position >= 0 else -position) - 1
    shrunk = replace(st, tensor=out, length=length, at_least=least)
    where = "the last row" if position == -1 else f"the row at {position}"
    record = Record("stacked-erase", f"{where} of a [n, *E] tensor", computed=True)
    return Fold(values={node.outputs[0]: shrunk}, records=[record])


def at(ctx: Context, node: ir.Node, scope: Scope, because: Reason | None = None) -> Outcome:
    """``SequenceAt`` of a list held (or that can be held) as one tensor: ``Gather``."""
    position = node.inputs[1] if len(node.inputs) > 1 else None
    if position is None:
        return Leave(reason=Reason("invalid", "SequenceAt without a position"))
    pos_shape = scope.shapes.shape(position)
    if pos_shape is None or len(pos_shape) != 0:
        text = f"position '{position.name}' is not known to be a scalar"
        return _leave(Reason("unknown-shape", text), because)
    st = stacked_of(ctx, node.inputs[0], scope, node)
    if isinstance(st, Reason):
        return _leave(st, because)
    emit = ctx.emitter(scope, node)
    gather = emit.op(
        "Gather", [st.tensor, position], type=emit.type_of(st.tensor), shape=st.element, axis=0
    )
    record = Record("stacked-at", f"Gather of row '{position.name}'")
    return Replace(uses=[(node.outputs[0], emit.check(gather))], records=[record])


def _at(ctx: Context, node: ir.Node, scope: Scope) -> Outcome:
    read = unit_split.read_at(ctx, node, scope)  # torch.unbind's list: a Gather of its input
    return read if read is not None else at(ctx, node, scope)


def _length_of(ctx: Context, node: ir.Node, scope: Scope) -> Outcome:
    st = ctx.facts.values[node.inputs[0]]  # type: ignore[index]
    assert isinstance(st, StackedSequence)
    value = rows.length_of(ctx.emitter(scope, node), st)
    record = Record("stacked-length", f"n = {st.length}")
    return Replace(uses=[(node.outputs[0], value)], records=[record])


def _concat(ctx: Context, node: ir.Node, scope: Scope) -> Outcome:
    new_axis = concat_new_axis(node)
    if isinstance(new_axis, Reason):
        return Leave(reason=new_axis)
    st = ctx.facts.values[node.inputs[0]]  # type: ignore[index]
    assert isinstance(st, StackedSequence)
    rank = len(st.element)
    out_rank = rank + new_axis
    axis = node.attributes.get_int("axis", 0)
    if not -out_rank <= axis < out_rank:
        text = f"axis {axis} is outside [-{out_rank}, {out_rank - 1}]: left to fail at run time"
        return Leave(reason=Reason("out-of-range", text))
    axis = axis + out_rank if axis < 0 else axis
    if st.length == 0:
        text = "ConcatFromSequence of an empty sequence fails at run time; left as is"
        return Leave(reason=Reason("run-time-failure", text))
    emit = ctx.emitter(scope, node)
    stacked = st.tensor
    rows.check_row(emit, st, 0)  # may be empty: fail there, as the original does
    dims = [st.length, *st.element]
    result = stacked
    if axis > 0:  # move the list axis to ``axis``
        perm = [*range(1, axis + 1), 0, *range(axis + 1, rank + 1)]
        moved_dims = ir.Shape([dims[p] for p in perm])
        result = emit.op(
            "Transpose", [stacked], type=emit.type_of(stacked), shape=moved_dims, perm=perm
        )
    if not new_axis:  # merge it into the next axis (n is at least 1 here: see above)
        moved = [*st.element[:axis], st.length, *st.element[axis:]]
        joined = st.element[axis]
        size = (
            bounded(st.length * joined)
            if isinstance(st.length, int) and isinstance(joined, int)
            else None
        )
        shape = ir.Shape(
            [
                *st.element[:axis],
                ir.SymbolicDim(None) if size is None else size,
                *st.element[axis + 1 :],
            ]
        )
        merged = merge_axes(emit, result, moved, axis, first_positive=True, shape=shape)
        assert merged is not None  # (a first dim of at least 1 always has a form)
        result = merged
    detail = f"new_axis={new_axis}, axis {axis} of a [n, *E] tensor"
    record = Record("stacked-concat", detail)
    return Replace(uses=[(node.outputs[0], result)], records=[record])


def _identity(ctx: Context, node: ir.Node, scope: Scope) -> Outcome:
    return Fold(values={node.outputs[0]: ctx.facts.values[node.inputs[0]]})  # type: ignore[index]


TABLE: dict[tuple[str, str], Entry] = {
    ("SequenceAt", "stacked"): Entry(_at, group=Group.STACKED),
    ("SequenceLength", "stacked"): Entry(_length_of, group=Group.STACKED),
    ("ConcatFromSequence", "stacked"): Entry(_concat, group=Group.STACKED),
    ("SequenceInsert", "stacked"): Entry(insert, group=Group.STACKED),
    ("SequenceErase", "stacked"): Entry(erase, group=Group.STACKED),
    ("SequenceInsert", "other"): Entry(insert, group=Group.STACKED),
    ("SequenceErase", "other"): Entry(erase, group=Group.STACKED),
    ("Identity", "stacked"): Entry(_identity, group=Group.STACKED),
}

RULES: dict[str, tuple[str, str]] = {
    "stacked-at": (
        Group.STACKED,
        "SequenceAt at a run-time position -> Gather of the [n, *E] tensor",
    ),
    "stacked-length": (Group.STACKED, "SequenceLength of a list held as [n, *E] -> n"),
    "stacked-insert": (
        Group.STACKED,
        "SequenceInsert at a run-time position (or into a list of run-time length) -> slices "
        "of the [n, *E] tensor around the position, the element between",
    ),
    "stacked-erase": (
        Group.STACKED,
        "SequenceErase at a run-time position (or from a list of run-time length) -> slices "
        "of the [n, *E] tensor around the position",
    ),
    "stacked-concat": (
        Group.STACKED,
        "ConcatFromSequence of a list held as [n, *E] -> the tensor, a Transpose or a Reshape",
    ),
    "stacked-as-sequence": (
        Group.STACKED,
        "a list held as [n, *E] that must be a sequence -> SplitToSequence(S, axis=0, keepdims=0)",
    ),
}

"""Tensor arithmetic on a list held as one tensor ``S`` of shape ``[n, *E]``: its length,
no rows, rows ``S[a:b]``, rows joined, and a run-time position normalized the way the sequence
op checks it (out of range it fails at run time, as the original does)."""

from __future__ import annotations

import numpy as np
import onnx_ir as ir

from seqpasses.core.constants import MAX_ELEMENTS
from seqpasses.core.dims import add_dims
from seqpasses.core.emit import Emitter
from seqpasses.core.sequence import (
    PositionError,
    Reason,
    StackedSequence,
    normalize_at_position,
    normalize_insert_position,
)
from seqpasses.walk.context import Context

__all__ = [
    "END",
    "TABLE_ROWS",
    "by_table",
    "check_row",
    "empty_rows",
    "joined",
    "length_of",
    "normalized",
    "plus",
    "slice_rows",
]

END = 2**63 - 1

TABLE_ROWS = 32
"""A list of at most this many elements takes an edit at a run-time position from a table."""


def empty_rows(
    emit: Emitter, element: ir.Shape, dtype: ir.DataType | None, like: ir.Value | None
) -> ir.Value | None:
    """An empty ``[0, *element]`` tensor: no rows of ``like`` (a value of that shape), or a
    ConstantOfShape when the element's dims are numbers; None when neither can be made."""
    if like is not None:
        rows = emit.unsqueeze(like, 0)
        bounds = [emit.int64s([0]), emit.int64s([0]), emit.int64s([0])]
        return emit.op(
            "Slice", [rows, *bounds], type=emit.type_of(like), shape=ir.Shape([0, *element])
        )
    dims = list(element)
    if dtype is None or dtype == ir.DataType.STRING or not all(isinstance(d, int) for d in dims):
        return None  # (ConstantOfShape makes no strings)
    zero = ir.tensor(np.zeros((1,), dtype=dtype.numpy()))
    return emit.op(
        "ConstantOfShape",
        [emit.int64s([0, *dims])],  # type: ignore[list-item]
        type=ir.TensorType(dtype),
        shape=ir.Shape([0, *element]),
        value=zero,
    )


def length_of(emit: Emitter, st: StackedSequence) -> ir.Value:
    """``n``, an int64 scalar (read off the tensor when it holds a check: see ``checked``)."""
    if isinstance(st.length, int) and not st.checked:
        return emit.constant(np.array(st.length, dtype=np.int64))
    int64, scalar = ir.TensorType(ir.DataType.INT64), ir.Shape([])
    if isinstance(st.length, int) and st.guard is not None:
        read = _read_from_zeros(st.guard)
        if read is not None:  # (the guard of one edit by table: the length read alike)
            size, index = read
            filled = emit.constant(np.full(size, st.length, dtype=np.int64))
            return emit.op("Gather", [filled, index], type=int64, shape=scalar, axis=0)
        shape = st.guard.shape
        n = emit.op("Add", [emit.int64(st.length), st.guard], type=int64, shape=shape)
        if shape is not None and len(shape) == 0:
            return n
        return emit.op("Gather", [n, emit.int64(0)], type=int64, shape=scalar, axis=0)
    rank = ir.Shape([len(st.element) + 1])
    shape_of = emit.op("Shape", [st.tensor], type=int64, shape=rank)
    first = emit.constant(np.array(0, dtype=np.int64))
    return emit.op("Gather", [shape_of, first], type=int64, shape=scalar, axis=0)


def _read_from_zeros(guard: ir.Value) -> tuple[int, ir.Value] | None:
    """``(m, k)`` when ``guard`` is a scalar ``Gather`` at ``k`` of ``m`` zeros (what
    :func:`by_table` makes), else None."""
    node = guard.producer()
    if node is None or node.op_type != "Gather" or len(node.inputs) != 2:
        return None
    zeros, index = node.inputs
    table = zeros.const_value if zeros is not None else None
    if table is None or index is None or index.shape is None or len(index.shape) != 0:
        return None
    values = table.numpy()
    if values.ndim != 1 or values.dtype != np.int64 or values.any():
        return None
    return int(values.size), index


def positions(emit: Emitter, st: StackedSequence, extra: int) -> ir.Value:
    """``[0, 1, ..., n - 1 + extra]``: a constant when ``n`` is known (and the constant small:
    a dim of 2**62 is a length too)."""
    if isinstance(st.length, int) and st.length + extra <= MAX_ELEMENTS:
        return emit.constant(np.arange(st.length + extra, dtype=np.int64))
    int64 = ir.TensorType(ir.DataType.INT64)
    n = length_of(emit, st)
    if extra:
        n = emit.op("Add", [n, emit.int64(extra)], type=int64, shape=ir.Shape([]))
    some = ir.Shape([ir.SymbolicDim(None)])
    return emit.op("Range", [emit.int64(0), n, emit.int64(1)], type=int64, shape=some)


def normalized(
    ctx: Context,
    emit: Emitter,
    st: StackedSequence,
    position: ir.Value | None,
    inserting: bool,
    known: ir.Value | None = None,
) -> int | ir.Value | Reason:
    """The position normalized to ``[0, n]`` (insert) or ``[0, n-1]``: a number when it can be
    known now, else a ``[1]`` int64 value that fails at run time out of range (``known``: the
    :func:`positions` it may be, when the caller made them)."""
    if position is not None:
        p, _ = ctx.const_int(position)
    else:
        p = None if inserting else -1
    if p is not None and isinstance(st.length, int):
        try:
            if inserting:
                return normalize_insert_position(p, st.length)
            return normalize_at_position(p, st.length)
        except PositionError as error:
            return Reason("out-of-range", f"{error}: left to fail at run time as before")
    found_in = known if known is not None else positions(emit, st, int(inserting))
    int64, one = ir.TensorType(ir.DataType.INT64), ir.Shape([1])
    if position is None:
        where = emit.int64s([-1])
    else:
        if position.dtype != ir.DataType.INT64:  # int32 (or not declared): one dtype below
            position = emit.op("Cast", [position], type=int64, to=int(ir.DataType.INT64))
        where = emit.op("Reshape", [position, emit.int64s([1])], type=int64, shape=one)
    if inserting and position is not None:
        # an insert accepts [-n, n]: a negative p means p + n (not p + n + 1, what Gather over
        # the n + 1 positions would give), so it looks one further back: p - 1 lands on p + n
        # and -n - 1 falls outside, failing as SequenceInsert does
        boolean = ir.TensorType(ir.DataType.BOOL)
        negative = emit.op("Less", [where, emit.int64(0)], type=boolean, shape=one)
        back = emit.op("Sub", [where, emit.int64(1)], type=emit.type_of(where), shape=one)
        where = emit.op("Where", [negative, back, where], type=emit.type_of(back), shape=one)
    found = emit.op("Gather", [found_in, where], type=int64, shape=one, axis=0)
    return emit.check(found)  # (out of range it fails, whatever reads it)


def without_row(emit: Emitter, st: StackedSequence, index: ir.Value, known: ir.Value) -> ir.Value:
    """``S`` without the row at ``index`` (a ``[1]`` value from :func:`normalized`, checked),
    ``known`` its :func:`positions`: one ``Gather`` of the rows kept, ``k + (k >= index)`` for
    ``k`` in ``[0, n - 1)``. (Not a Concat of two Slices of run-time bounds, which tract does
    not take.)"""
    int64 = ir.TensorType(ir.DataType.INT64)
    if isinstance(st.length, int) and st.length <= MAX_ELEMENTS:
        kept = emit.constant(np.arange(max(st.length - 1, 0), dtype=np.int64))
    else:
        bounds = [emit.int64s([0]), emit.int64s([-1]), emit.int64s([0])]
        some = ir.Shape([ir.SymbolicDim(None)])
        kept = emit.op("Slice", [known, *bounds], type=int64, shape=some)
    boolean, shape = ir.TensorType(ir.DataType.BOOL), kept.shape
    if emit.opset >= 12:
        later = emit.op("GreaterOrEqual", [kept, index], type=boolean, shape=shape)
    else:  # (GreaterOrEqual is opset 12)
        before = emit.op("Less", [kept, index], type=boolean, shape=shape)
        later = emit.op("Not", [before], type=boolean, shape=shape)
    step = emit.op("Cast", [later], type=int64, shape=shape, to=int(ir.DataType.INT64))
    rows = emit.op("Add", [kept, step], type=int64, shape=shape)
    fewer = ir.Shape([plus(st.length, -1), *st.element])
    return emit.op("Gather", [st.tensor, rows], type=emit.type_of(st.tensor), shape=fewer, axis=0)


def check_row(emit: Emitter, st: StackedSequence, position: int) -> None:
    """A check, read by nothing, that fails at run time where row ``position`` (a number,
    negative from the back) is not in ``S``: ``Gather(S, [position])``, which accepts exactly
    ``[-n, n-1]``. Nothing when ``st.least`` rows already prove it there. (Cheaper than
    normalizing the position with ``Range`` and gathering every row kept: ONNX Runtime and
    onnx.reference run a node no one reads.)"""
    if -st.least <= position < st.least:
        return
    one = ir.Shape([1, *st.element])
    index = emit.int64s([position])
    emit.check(
        emit.op("Gather", [st.tensor, index], type=emit.type_of(st.tensor), shape=one, axis=0)
    )


def slice_rows(
    emit: Emitter,
    st: StackedSequence,
    start: int | ir.Value,
    end: int | ir.Value,
    length: int | ir.SymbolicDim | None = None,
) -> ir.Value:
    """``S[start:end]`` along the first axis (``length`` rows, when the caller knows)."""
    bounds = [emit.int64s([b]) if isinstance(b, int) else b for b in (start, end)]
    some = ir.Shape([ir.SymbolicDim(None) if length is None else length, *st.element])
    inputs = [st.tensor, bounds[0], bounds[1], emit.int64s([0])]
    return emit.op("Slice", inputs, type=emit.type_of(st.tensor), shape=some)


def joined(
    emit: Emitter, st: StackedSequence, parts: list[ir.Value], length: int | ir.SymbolicDim
) -> ir.Value:
    """``parts`` (rows of ``st``'s tensor, and new rows) joined: ``[length, *E]``. One part is
    the result as it is (a slice :func:`slice_rows` made of ``length`` rows)."""
    if len(parts) == 1:
        return parts[0]
    shape = ir.Shape([length, *st.element])
    return emit.concat(parts, 0, type=emit.type_of(st.tensor), shape=shape)


def guard_of(emit: Emitter, st: StackedSequence, index: int | ir.Value) -> ir.Value | None:
    """The guard (see :class:`StackedSequence`) of what an edit at ``index`` (a normalized
    position, checked) makes of ``st``: ``0 * index``, the old guard, or their sum."""
    if not isinstance(index, ir.Value):
        return st.guard
    int64 = ir.TensorType(ir.DataType.INT64)
    zero = emit.op("Mul", [index, emit.int64s([0])], type=int64, shape=ir.Shape([1]))
    return joined_guard(emit, st, zero)


def joined_guard(emit: Emitter, st: StackedSequence, zero: ir.Value) -> ir.Value:
    """``zero`` (a new guard) with ``st``'s own, when it has one in the same graph."""
    if st.guard is None or st.guard.graph is not zero.graph:
        return zero
    shape = zero.shape if zero.shape == st.guard.shape else ir.Shape([1])
    return emit.op("Add", [st.guard, zero], type=emit.type_of(zero), shape=shape)


def by_table(
    emit: Emitter,
    st: StackedSequence,
    position: ir.Value,
    shape: ir.Shape | None,
    inserting: bool,
) -> tuple[ir.Value, ir.Value] | None:
    """An edit at a run-time ``position`` of a list of a small known length ``n``, as two
    ``Gather``s of constant tables: the rows the result takes (of ``S`` for an erase, of
    ``S`` with the new row after it for an insert), and its guard (zeros). Gather accepts
    exactly ``[-m, m-1]`` for ``m`` rows: an erase accepts ``[-n, n-1]``, so it reads its
    tables at ``p``; an insert accepts ``[-n, n]``, so at ``2p`` of tables of ``2n+1`` rows
    (row ``i`` stands for position ``i // 2``: ``2p`` for ``p >= 0``, ``2n + 1 + 2p`` for
    ``p < 0``, i.e. ``p + n``), ``p`` clipped to ``[-n-1, n+1]`` first (opset 12 on). Out
    of range both fail, as the edit does. None when ``n`` is not small, or the position (of
    shape ``shape``) is not known to be an integer scalar, or an insert's opset is below 12."""
    n = st.length
    if not isinstance(n, int) or n > TABLE_ROWS or (n == 0 and not inserting):
        return None
    if position.dtype not in (ir.DataType.INT64, ir.DataType.INT32):
        return None
    if shape is None or len(shape) != 0:
        return None
    index_type = ir.TensorType(position.dtype)
    if inserting:
        if emit.opset < 12:  # (Clip takes integers from opset 12)
            return None
        kept = [[*range(i // 2), n, *range(i // 2, n)] for i in range(2 * n + 1)]
        kind = position.dtype.numpy()
        # clipped first to [-n-1, n+1], still outside what an insert accepts where p was: 2p
        # of a p past 2**62 would wrap around into the table
        bounds = [emit.constant(np.array(b, dtype=kind)) for b in (-n - 1, n + 1)]
        near = emit.op("Clip", [position, *bounds], type=index_type, shape=ir.Shape([]))
        two = emit.constant(np.array(2, dtype=kind))
        at = emit.op("Mul", [near, two], type=index_type, shape=ir.Shape([]))
    else:
        kept = [[k for k in range(n) if k != i] for i in range(n)]
        at = position
    table = emit.constant(np.array(kept, dtype=np.int64).reshape(len(kept), -1))
    int64 = ir.TensorType(ir.DataType.INT64)
    width = ir.Shape([n + 1 if inserting else n - 1])
    taken = emit.check(emit.op("Gather", [table, at], type=int64, shape=width, axis=0))
    zeros = emit.constant(np.zeros(len(kept), dtype=np.int64))
    guard = emit.op("Gather", [zeros, at], type=int64, shape=ir.Shape([]), axis=0)
    return taken, guard


def plus(length: object, k: int) -> int | ir.SymbolicDim:
    if isinstance(length, int):
        return length + k
    assert isinstance(length, ir.SymbolicDim)
    return add_dims([length, k]) if length.value else ir.SymbolicDim(None)

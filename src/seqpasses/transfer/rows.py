"""Tensor arithmetic on a list held as one tensor ``S`` of shape ``[n, *E]``: its length,
no rows, rows ``S[a:b]``, rows joined, and a run-time position normalized the way the sequence
op checks it (out of range it fails at run time, as the original does)."""

from __future__ import annotations

import numpy as np
import onnx_ir as ir

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

__all__ = ["END", "empty_rows", "joined", "length_of", "normalized", "plus", "slice_rows"]

END = 2**63 - 1


def empty_rows(
    emit: Emitter, element: ir.Shape, dtype: ir.DataType | None, like: ir.Value | None
) -> ir.Value | None:
    """An empty ``[0, *element]`` tensor: no rows of ``like`` (a value of that shape), or a
    ConstantOfShape when the element's dims are numbers; None when neither can be made."""
    if like is not None:
        rows = emit.unsqueeze(like, 0)
        empty = emit.op("Slice", [rows, emit.int64s([0]), emit.int64s([0]), emit.int64s([0])])
        empty.type, empty.shape = like.type, ir.Shape([0, *element])
        return empty
    dims = list(element)
    if dtype is None or dtype == ir.DataType.STRING or not all(isinstance(d, int) for d in dims):
        return None  # (ConstantOfShape makes no strings)
    zero = ir.tensor(np.zeros((1,), dtype=dtype.numpy()))
    empty = emit.op("ConstantOfShape", [emit.int64s([0, *dims])], value=zero)  # type: ignore[list-item]
    empty.type, empty.shape = ir.TensorType(dtype), ir.Shape([0, *element])
    return empty


def length_of(emit: Emitter, st: StackedSequence) -> ir.Value:
    """``n``, an int64 scalar (read off the tensor when it holds a check: see ``checked``)."""
    if isinstance(st.length, int) and not st.checked:
        return emit.constant(np.array(st.length, dtype=np.int64))
    int64 = ir.TensorType(ir.DataType.INT64)
    if isinstance(st.length, int) and st.guard is not None:
        zero = emit.op("Mul", [st.guard, emit.int64s([0])])
        zero.type, zero.shape = int64, ir.Shape([1])
        n = emit.op("Add", [emit.int64s([st.length]), zero])
        n.type, n.shape = int64, ir.Shape([1])
        found = emit.op("Gather", [n, emit.int64(0)], axis=0)
        found.type, found.shape = int64, ir.Shape([])
        return found
    shape = emit.op("Shape", [st.tensor])
    shape.type, shape.shape = ir.TensorType(ir.DataType.INT64), ir.Shape([len(st.element) + 1])
    n = emit.op("Gather", [shape, emit.constant(np.array(0, dtype=np.int64))], axis=0)
    n.type, n.shape = ir.TensorType(ir.DataType.INT64), ir.Shape([])
    return n


def positions(emit: Emitter, st: StackedSequence, extra: int) -> ir.Value:
    """``[0, 1, ..., n - 1 + extra]``: a constant when ``n`` is known."""
    if isinstance(st.length, int):
        return emit.constant(np.arange(st.length + extra, dtype=np.int64))
    n = length_of(emit, st)
    if extra:
        n = emit.op("Add", [n, emit.int64(extra)])
        n.type, n.shape = ir.TensorType(ir.DataType.INT64), ir.Shape([])
    found = emit.op("Range", [emit.int64(0), n, emit.int64(1)])
    found.type = ir.TensorType(ir.DataType.INT64)
    found.shape = ir.Shape([ir.SymbolicDim(None)])
    return found


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
    int64 = ir.TensorType(ir.DataType.INT64)
    if position is None:
        where = emit.int64s([-1])
    else:
        if position.dtype != ir.DataType.INT64:  # int32 (or not declared): one dtype below
            position = emit.op("Cast", [position], to=int(ir.DataType.INT64))
            position.type = int64
        where = emit.op("Reshape", [position, emit.int64s([1])])
        where.type, where.shape = int64, ir.Shape([1])
    if inserting and position is not None:
        # an insert accepts [-n, n]: a negative p means p + n (not p + n + 1, what Gather over
        # the n + 1 positions would give), so it looks one further back: p - 1 lands on p + n
        # and -n - 1 falls outside, failing as SequenceInsert does
        zero, one = emit.int64(0), emit.int64(1)
        negative = emit.op("Less", [where, zero])
        negative.type, negative.shape = ir.TensorType(ir.DataType.BOOL), ir.Shape([1])
        back = emit.op("Sub", [where, one])
        back.type, back.shape = where.type, ir.Shape([1])
        where = emit.op("Where", [negative, back, where])
        where.type, where.shape = back.type, ir.Shape([1])
    found = emit.op("Gather", [found_in, where], axis=0)
    found.type, found.shape = ir.TensorType(ir.DataType.INT64), ir.Shape([1])
    return ctx.edits.check(found)  # (out of range it fails, whatever reads it)


def without_row(emit: Emitter, st: StackedSequence, index: ir.Value, known: ir.Value) -> ir.Value:
    """``S`` without the row at ``index`` (a ``[1]`` value from :func:`normalized`, checked),
    ``known`` its :func:`positions`: one ``Gather`` of the rows kept, ``k + (k >= index)`` for
    ``k`` in ``[0, n - 1)``. (Not a Concat of two Slices of run-time bounds, which tract does
    not take.)"""
    int64 = ir.TensorType(ir.DataType.INT64)
    if isinstance(st.length, int):
        kept = emit.constant(np.arange(max(st.length - 1, 0), dtype=np.int64))
    else:
        kept = emit.op("Slice", [known, emit.int64s([0]), emit.int64s([-1]), emit.int64s([0])])
        kept.type, kept.shape = int64, ir.Shape([ir.SymbolicDim(None)])
    boolean = ir.TensorType(ir.DataType.BOOL)
    if emit.opset >= 12:
        later = emit.op("GreaterOrEqual", [kept, index])
    else:  # (GreaterOrEqual is opset 12)
        before = emit.op("Less", [kept, index])
        before.type, before.shape = boolean, kept.shape
        later = emit.op("Not", [before])
    later.type, later.shape = boolean, kept.shape
    step = emit.op("Cast", [later], to=int(ir.DataType.INT64))
    step.type, step.shape = int64, kept.shape
    rows = emit.op("Add", [kept, step])
    rows.type, rows.shape = int64, kept.shape
    out = emit.op("Gather", [st.tensor, rows], axis=0)
    out.type = st.tensor.type
    out.shape = ir.Shape([plus(st.length, -1), *st.element])
    return out


def slice_rows(
    emit: Emitter, st: StackedSequence, start: int | ir.Value, end: int | ir.Value
) -> ir.Value:
    """``S[start:end]`` along the first axis."""
    bounds = [emit.int64s([b]) if isinstance(b, int) else b for b in (start, end)]
    out = emit.op("Slice", [st.tensor, bounds[0], bounds[1], emit.int64s([0])])
    out.type, out.shape = st.tensor.type, ir.Shape([ir.SymbolicDim(None), *st.element])
    return out


def joined(emit: Emitter, st: StackedSequence, parts: list[ir.Value], length: object) -> ir.Value:
    out = parts[0] if len(parts) == 1 else emit.concat(parts, 0)
    out.type = st.tensor.type
    out.shape = ir.Shape([length, *st.element])  # type: ignore[list-item]
    return out


def guard_of(emit: Emitter, st: StackedSequence, index: int | ir.Value) -> ir.Value | None:
    """The guard (see :class:`StackedSequence`) of what an edit at ``index`` makes of ``st``:
    the new check, the old one, or both."""
    if not isinstance(index, ir.Value):
        return st.guard
    if st.guard is None or st.guard.graph is not index.graph:
        return index
    both = emit.op("Add", [st.guard, index])
    both.type, both.shape = index.type, ir.Shape([1])
    return both


def plus(length: object, k: int) -> int | ir.SymbolicDim:
    if isinstance(length, int):
        return length + k
    assert isinstance(length, ir.SymbolicDim)
    return add_dims([length, k]) if length.value else ir.SymbolicDim(None)

"""Slices whose bounds are known only in part: a ``Slice``'s output dims where its ends or
axes are named dims or vectors known entry by entry (``min(N,128)``, ``floor(N/2)``, a
symbol's own axis), and the constant gap between two bounds (``x[i:i+k]``). Pure functions
of what the oracle (:mod:`seqpasses.core.shapes`) reads and hands on.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np
import onnx_ir as ir

from seqpasses.core.arithmetic import INT64_MAX, Dim, add_dims, at_least
from seqpasses.core.dims import cap_of, capped
from seqpasses.core.graph import is_default
from seqpasses.core.partial import Known

__all__ = ["constant_gap", "slice_dims"]

TypeAndShape = tuple[ir.TypeProtocol | None, ir.Shape | None]


def _unknown(d: int | ir.SymbolicDim) -> bool:
    return not isinstance(d, int) and getattr(d, "value", None) is None


def _through_casts(value: ir.Value | None) -> ir.Value | None:
    """``value`` before the Identities and Casts (CastLike included) that only retype it."""
    while value is not None:
        node = value.producer()
        if node is None or not is_default(node) or not node.inputs:
            return value
        if node.op_type not in ("Identity", "Cast", "CastLike"):
            return value
        value = node.inputs[0]
    return value


def constant_gap(
    starts: ir.Value | None,
    ends: ir.Value | None,
    constant: Callable[[ir.Value], np.ndarray | None],
) -> int | None:
    """``k`` when ``ends`` is ``starts + k`` (or ``k + starts``) for a constant scalar (or
    one-entry) ``k``, through Casts and Identities; None otherwise."""
    node = _through_casts(ends)
    producer = node.producer() if node is not None else None
    if producer is None or producer.op_type != "Add" or len(producer.inputs) != 2:
        return None
    left, right = (_through_casts(v) for v in producer.inputs)
    start = _through_casts(starts)
    for mine, other in ((left, right), (right, left)):
        if mine is not start or other is None:
            continue
        array = constant(other)
        if array is not None and array.size == 1 and array.dtype.kind in "iu":
            return int(array.reshape(-1)[0])
    return None


def slice_dims(
    node: ir.Node,
    inputs: list[TypeAndShape | None],
    shape: ir.Shape,
    vector: Callable[[int], list[Known] | None],
    most_entries: Callable[[], int | None],
) -> ir.Shape:
    """The dims of a Slice's output that onnx's inference leaves unknown when an end is
    known only in part (an entry computed at run time beside constant ones), or the
    sliced axis is a symbol: a number where the axis and the slice are numbers; the
    symbol itself for a slice from 0 to an end past any size; ``min(symbol, end)``
    (:func:`~seqpasses.core.dims.capped`) to a smaller constant end."""
    data = inputs[0][1] if inputs and inputs[0] is not None else None
    if data is None or len(data) != len(shape) or len(node.inputs) < 3:
        return shape

    starts, ends = vector(1), vector(2)
    no_axes = len(node.inputs) <= 3 or node.inputs[3] is None
    if starts is None and no_axes:
        # starts of a length known only in part: with no axes given, an axis at or past
        # its most entries is not sliced, and keeps its size
        most = most_entries()
        if most is None:
            return shape
        return ir.Shape([data[k] if k >= most and _unknown(d) else d for k, d in enumerate(shape)])
    if starts is None or ends is None or len(starts) != len(ends):
        return shape
    axes = vector(3) if len(node.inputs) > 3 and node.inputs[3] is not None else None
    steps = vector(4) if len(node.inputs) > 4 and node.inputs[4] is not None else None
    axes = axes if axes is not None else list(range(len(starts)))
    steps = steps if steps is not None else [1] * len(starts)
    if len(axes) != len(starts) or len(steps) != len(starts):
        return shape
    dims = list(shape)
    rank = len(data)
    if any(not isinstance(a, int) or isinstance(a, bool) or not -rank <= a < rank for a in axes):
        return shape
    sliced = {a % rank for a in axes}  # type: ignore[operator]
    for k in range(rank):  # (an axis not sliced keeps its size)
        if (
            k not in sliced
            and not isinstance(dims[k], int)
            and getattr(dims[k], "value", None) is None
        ):
            dims[k] = data[k]
    for axis, start, end, step in zip(axes, starts, ends, steps, strict=True):
        assert isinstance(axis, int)
        axis %= rank
        if (
            start == 0
            and not isinstance(start, bool)
            and step == 1
            and isinstance(end, ir.SymbolicDim)
            and not isinstance(dims[axis], int)
        ):
            dims[axis] = _to_named_end(data[axis], end.value or "")
            continue
        if any(not isinstance(x, int) or isinstance(x, bool) for x in (start, end, step)):
            continue
        assert isinstance(start, int) and isinstance(end, int) and isinstance(step, int)
        if step == 0 or isinstance(dims[axis], int):
            continue
        size = data[axis]
        if isinstance(size, int):
            dims[axis] = _slice_length(size, start, end, step)
        elif isinstance(size, ir.SymbolicDim) and size.value and step == 1:
            found = _named_length(size, start, end)
            if not _unknown(found):
                dims[axis] = found
    return ir.Shape(dims)


def _named_length(size: ir.SymbolicDim, start: int, end: int) -> Dim:
    """How many elements a Slice of step 1 takes from an axis of the named ``size``: ``size``
    itself from 0 to past its end; ``min(size, end)`` to a constant end from 0; ``size`` less
    what is cut where the size is sure to reach the bounds (a chomp ``x[:-2]`` of ``T+2`` is
    ``T``; ``x[-3:]`` of ``T+4`` is 3); else unknown (a bound may pass the end: ONNX clamps)."""
    past = end >= INT64_MAX // 2
    if start == 0 and past:
        return size
    if start == 0 and end > 0:
        return capped(size.value or "", end) if cap_of(size) is None else ir.SymbolicDim(None)
    if start >= 0 and (past or end < 0):
        cut = start - (0 if past else end)  # (elements before start and after end)
        return add_dims([size, -cut]) if at_least(size, cut) else ir.SymbolicDim(None)
    if start >= 0 and end >= start:  # (both from the front, the size reaching the end)
        return end - start if at_least(size, end) else ir.SymbolicDim(None)
    if start < 0 and (past or end < 0) and at_least(size, -start):
        return max(0, (0 if past else end) - start)
    return ir.SymbolicDim(None)


def _to_named_end(size: Dim, end: str) -> Dim:
    """A slice from 0 to the named end ``end`` (a dim's size: never negative) of an axis of
    ``size``: the end where the axis is the same name; ``min(end, size)`` where the size is
    a number; else unknown."""
    halved = _FLOORED.match(end)
    if halved is not None and getattr(size, "value", None) == halved.group(1):
        return ir.SymbolicDim(end)  # (``x[:n // k]`` of an axis of size n)
    if not _NAME.match(end):
        return ir.SymbolicDim(None)
    if isinstance(size, int):
        return capped(end, size) if size > 0 else 0
    if getattr(size, "value", None) == end:
        return size
    return ir.SymbolicDim(None)


_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_FLOORED = re.compile(r"^floor\(([A-Za-z_][A-Za-z0-9_]*)/\d+\)$")


def _slice_length(size: int, start: int, end: int, step: int) -> int:
    """How many elements ONNX's Slice takes from an axis of ``size``: a negative index counts
    from the end; then, stepping forward, start and end are clamped into [0, size]; stepping
    back, start into [0, size-1] and end into [-1, size-1] (not Python's clamping: a start
    before the first element stepping back takes it)."""
    if start < 0:
        start += size
    if end < 0:
        end += size
    if step > 0:
        start, end = min(max(start, 0), size), min(max(end, 0), size)
        return max(0, -(-(end - start) // step))
    start, end = min(max(start, 0), size - 1), min(max(end, -1), size - 1)
    return max(0, -(-(start - end) // -step))

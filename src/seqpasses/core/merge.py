"""Two adjacent axes of a tensor merged into one by a ``Reshape`` whose target is right for
every size, zero included (see :func:`seqpasses.core.dims.merge_form`)."""

from __future__ import annotations

from collections.abc import Sequence

import onnx_ir as ir

from seqpasses.core.dims import Dim, merge_form
from seqpasses.core.emit import Emitter

__all__ = ["merge_axes"]


def merge_axes(
    emit: Emitter,
    x: ir.Value,
    dims: Sequence[Dim],
    axis: int,
    first_positive: bool,
    *,
    shape: ir.Shape | None = None,
) -> ir.Value | None:
    """``x`` (of dims ``dims``) with axes ``axis`` and ``axis + 1`` merged into one, row
    major: a ``Reshape`` whose target is right for every size, zero included; None where
    the opset gives no such target (see :func:`merge_form`). ``first_positive``: dim
    ``axis`` is at least 1 at run time; ``shape``: the result's, when the caller knows it
    better."""
    merged = _merge_axes(emit, x, dims, axis, first_positive)
    if merged is not None:
        found = emit.type_of(x)
        if found is not None:
            merged.type = found
        if shape is not None:
            merged.shape = shape
    return merged


def _merge_axes(
    emit: Emitter, x: ir.Value, dims: Sequence[Dim], axis: int, first_positive: bool
) -> ir.Value | None:
    form = merge_form(dims, axis, first_positive, emit.opset)
    if form is None:
        return None
    int64 = ir.TensorType(ir.DataType.INT64)
    tail = list(dims[axis + 2 :])
    if form == "infer":
        target = emit.int64s([0] * axis + [-1] + [d for d in tail if isinstance(d, int)])
        return emit.op("Reshape", [x, target], type=emit.type_of(x))
    first, second = dims[axis], dims[axis + 1]
    known = first * second if isinstance(first, int) and isinstance(second, int) else None
    shape: ir.Value | None = None
    if known is None or form == "exact":
        shape = emit.op("Shape", [x], type=int64, shape=ir.Shape([len(dims)]))
    merged: ir.Value | None = None
    if known is None:
        assert shape is not None
        factors = [
            emit.int64s([d]) if isinstance(d, int) else _dim(emit, shape, k)
            for k, d in ((axis, first), (axis + 1, second))
        ]
        merged = emit.op("Mul", factors, type=int64, shape=ir.Shape([1]))
    if form == "exact":  # opset 14+: every dim literal (allowzero), read off x where needed
        assert shape is not None
        parts = [
            emit.int64s([d]) if isinstance(d, int) else _dim(emit, shape, k)
            for k, d in enumerate(dims[:axis])
        ]
        parts.append(merged if merged is not None else emit.int64s([known or 0]))
        parts += [
            emit.int64s([d]) if isinstance(d, int) else _dim(emit, shape, axis + 2 + k)
            for k, d in enumerate(tail)
        ]
        target_shape = ir.Shape([len(dims) - 1])
        if len(parts) == 1:
            target = parts[0]
        else:
            target = emit.concat(parts, 0, type=int64, shape=target_shape)
        return emit.op("Reshape", [x, target], type=emit.type_of(x), allowzero=1)
    # the same rank, a 1 beside the merged dim: every other dim is copied (a 0 in the
    # target) from the same place in x; a merged dim of 0 copies the dim at its place,
    # which is 0 too: the second one (one-before: the first is at least 1) or the first
    # (one-after: the second is positive)
    before = form == "one-before"
    head, rest = [0] * axis, [0] * len(tail)
    if merged is None:
        assert known is not None
        pair = [1, known] if before else [known, 1]
        target = emit.int64s([*head, *pair, *rest])
    else:
        one = emit.int64s([1])
        pieces = ([emit.int64s(head)] if head else []) + (
            [one, merged] if before else [merged, one]
        )
        pieces += [emit.int64s(rest)] if rest else []
        target = emit.concat(pieces, 0, type=int64, shape=ir.Shape([len(dims)]))
    size: Dim = ir.SymbolicDim(None) if known is None else known
    pair_dims: list[Dim] = [1, size] if before else [size, 1]
    kept_shape = ir.Shape([*dims[:axis], *pair_dims, *tail])
    kept = emit.op("Reshape", [x, target], type=emit.type_of(x), shape=kept_shape)
    return emit.squeeze(kept, axis if before else axis + 1)


def _dim(emit: Emitter, shape: ir.Value, k: int) -> ir.Value:
    int64 = ir.TensorType(ir.DataType.INT64)
    return emit.op("Gather", [shape, emit.int64s([k])], type=int64, shape=ir.Shape([1]), axis=0)

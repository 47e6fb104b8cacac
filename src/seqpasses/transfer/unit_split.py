"""Reads of a split into chunks of one (``torch.unbind``), whatever its length.

``SplitToSequence(x)`` with no split, or a scalar split of 1, makes as many elements as the
split axis is long: element ``i`` is ``x`` gathered at ``i`` on that axis, so its reads lower
even when that length is known only at run time:

1. ``SequenceAt(s, i)`` -> ``Gather(x, i)`` (``Gather(x, [i])`` where the chunks keep the
   axis), any ``i``: Gather accepts exactly SequenceAt's range ``[-n, n-1]`` and fails outside
   it as SequenceAt does.
2. ``SequenceLength(s)`` -> ``Gather(Shape(x), axis)``.
3. ``ConcatFromSequence(s)``: squeezed slices stacked again -> a ``Transpose`` of ``x`` (or
   ``x``); laid end to end -> a ``Reshape`` (after a ``Transpose``); kept slices concatenated on
   the split axis -> ``x``. With zero slices the original fails at run time: where the axis
   may be 0 long, an unread ``Gather`` of slice 0 fails there too.
"""

from __future__ import annotations

import numpy as np
import onnx_ir as ir

from seqpasses.core.emit import Emitter
from seqpasses.core.graph import is_default
from seqpasses.core.merge import merge_axes
from seqpasses.core.sequence import Reason, ones_as_long_as, split_squeezes
from seqpasses.options import Group
from seqpasses.transfer.common import concat_new_axis, follows_ort
from seqpasses.walk.context import Context, Entry, Scope
from seqpasses.walk.outcomes import Learned, Leave, Outcome, Record, Replace, Said

__all__ = ["RULES", "TABLE", "find", "read_at"]

END = 2**63 - 1


def find(
    ctx: Context, value: ir.Value | None, scope: Scope
) -> tuple[ir.Value, int, bool, bool] | None:
    """``(data, axis, squeezed, follows_ort)`` when ``value`` is ``SplitToSequence(data)`` cut
    into chunks of one along ``axis`` (no split, a scalar split of 1, any scalar split of a
    dim of 1, or a vector of ones provably as long as the axis). ``follows_ort``: squeezed only because ONNX Runtime squeezes such chunks of a
    scalar split with ``keepdims=0`` (the spec keeps the axis: see ``split_squeezes``)."""
    while value is not None:
        producer = value.producer()
        if producer is None or not is_default(producer):
            return None
        if producer.op_type == "Identity":
            value = producer.inputs[0]
            continue
        if producer.op_type != "SplitToSequence" or producer.inputs[0] is None:
            return None
        data = producer.inputs[0]
        shape = scope.shapes.shape(data)
        axis = producer.attributes.get_int("axis", 0)
        if shape is None or not -len(shape) <= axis < len(shape):
            return None
        keepdims = bool(producer.attributes.get_int("keepdims", 1))
        split = producer.inputs[1] if len(producer.inputs) > 1 else None
        axis = axis + len(shape) if axis < 0 else axis
        strict = ctx.options.strict_spec
        if split is None:
            return data, axis, bool(split_squeezes(None, keepdims, True, strict, False)), False
        array = ctx.const_array(split)
        if array is None and ones_as_long_as(split, scope.shapes.shape(split), shape[axis]):
            return data, axis, False, False  # (sizes given: every chunk keeps the axis)
        if array is None or array.ndim != 0 or int(array) < 1:
            return None
        if int(array) != 1 and shape[axis] != 1:
            return None  # chunks longer than one
        squeeze = bool(split_squeezes(0, keepdims, True, strict, False))
        return data, axis, squeeze, squeeze
    return None


def _loop_counter(ctx: Context, position: ir.Value) -> bool:
    """Whether ``position`` is the iteration number of the Loop whose body it is in."""
    owner = ctx.facts.owner(position.graph)
    return (
        owner is not None
        and owner[0].op_type == "Loop"
        and position.graph is not None
        and position.graph.inputs[:1] == [position]
    )


def _at_counter_of_unrolled_loop(ctx: Context, position: ir.Value) -> bool:
    owner = ctx.facts.owner(position.graph)
    return _loop_counter(ctx, position) and owner is not None and owner[0] in ctx.facts.unrolling


def read_at(ctx: Context, node: ir.Node, scope: Scope) -> Outcome | None:
    """``SequenceAt(split in chunks of 1, i)`` -> ``Gather(x, i)``; None when not such a read."""
    found = find(ctx, node.inputs[0], scope)
    position = node.inputs[1] if len(node.inputs) > 1 else None
    if found is None or position is None:
        return None
    if _at_counter_of_unrolled_loop(ctx, position):
        return None  # read at the loop counter of a loop that will be unrolled: folded then
    pos_shape = scope.shapes.shape(position)
    # (a Loop's counter declared int64[1], as TorchScript declares it, is fed so by ONNX
    # Runtime: one value either way, reshaped to what the Gather needs)
    counter = _loop_counter(ctx, position) and pos_shape is not None and pos_shape.dims == (1,)
    if pos_shape is None or (len(pos_shape) != 0 and not counter):
        return None
    data, axis, squeeze, diverges = found
    emit = ctx.emitter(scope, node)
    if counter:
        int64 = ir.TensorType(ir.DataType.INT64)
        target, ones = (emit.int64s([]), []) if squeeze else (emit.int64s([1]), [1])
        index = emit.op("Reshape", [position, target], type=int64, shape=ir.Shape(ones))
    else:
        index = position if squeeze else emit.unsqueeze(position, 0)
    data_shape = scope.shapes.shape(data)
    shape = None
    if data_shape is not None:
        dims = list(data_shape)
        if squeeze:
            del dims[axis]
        else:
            dims[axis] = 1
        shape = ir.Shape(dims)
    data_type = scope.shapes.type(data)
    out = emit.check(emit.op("Gather", [data, index], type=data_type, shape=shape, axis=axis))
    kept = ", keeping the axis" if not squeeze else ""
    record = Record("sequence-at-split", f"Gather on axis {axis} of '{data.name}'{kept}")
    return _replaced(node, out, record, "the element is squeezed" if diverges else "")


def _sequence_at(ctx: Context, node: ir.Node, scope: Scope) -> Outcome:
    read = read_at(ctx, node, scope)
    if read is not None:
        return read
    return Leave(reason=ctx.facts.why_unknown(node.inputs[0]))


def _sequence_length(ctx: Context, node: ir.Node, scope: Scope) -> Outcome:
    found = find(ctx, node.inputs[0], scope)
    if found is None:
        return Leave(reason=ctx.facts.why_unknown(node.inputs[0]))
    data, axis, _, _ = found  # chunks of one: as many as the axis is long
    emit = ctx.emitter(scope, node)
    int64 = ir.TensorType(ir.DataType.INT64)
    shape = emit.op("Shape", [data], type=int64)
    position = emit.constant(np.array(axis, dtype=np.int64))
    length = emit.op("Gather", [shape, position], type=int64, shape=ir.Shape([]), axis=0)
    record = Record("sequence-length-split", f"dim {axis} of '{data.name}'")
    return Replace(uses=[(node.outputs[0], length)], records=[record])


def _at_least_one(emit: Emitter, data: ir.Value, shape: ir.Shape, axis: int) -> ir.Value:
    """``data`` again, with a check, read by nothing, that fails at run time when it has no
    slice on ``axis`` (a ``Gather`` of slice 0): a ConcatFromSequence of no slice fails, and
    so must what replaces it. (ONNX Runtime and onnx.reference run a node no one reads; a
    ``Concat`` of that slice and the rest would copy ``data`` once more.)"""
    one = ir.Shape([1 if k == axis else d for k, d in enumerate(shape)])
    emit.check(
        emit.op("Gather", [data, emit.int64s([0])], type=emit.type_of(data), shape=one, axis=axis)
    )
    return data


def _restack(ctx: Context, node: ir.Node, scope: Scope, new_axis: int) -> Outcome | None:
    found = find(ctx, node.inputs[0], scope)
    axis_attr = node.attributes.get("axis")
    if found is None or axis_attr is None:
        return None
    data, split_axis, squeeze, diverges = found
    shape = scope.shapes.shape(data)
    assert shape is not None  # find checked the rank
    rank = len(shape)
    merge = squeeze and new_axis == 0  # squeezed slices laid end to end: a Reshape
    if not squeeze and new_axis == 1:
        return None
    out_rank = rank - 1 if merge else rank
    axis = axis_attr.as_int()
    if not -out_rank <= axis < out_rank:
        return None
    axis = axis + out_rank if axis < 0 else axis
    if axis != split_axis and not squeeze:
        return None
    perm = [d for d in range(rank) if d != split_axis]
    perm.insert(axis, split_axis)
    emit = ctx.emitter(scope, node)
    count = shape[split_axis]
    result = data
    if not (isinstance(count, int) and count >= 1):  # no slice at all: fail, as the original
        result = _at_least_one(emit, data, shape, split_axis)
    if perm != list(range(rank)):
        moved = ir.Shape([shape[d] for d in perm])
        result = emit.op(
            "Transpose", [result], type=scope.shapes.type(data), shape=moved, perm=perm
        )
    if merge:
        dims = [shape[d] for d in perm]
        merged = merge_axes(emit, result, dims, axis, first_positive=True)
        assert merged is not None  # (a first dim of at least 1 always has a form)
        result = merged
    moved_text = (
        "its input" if axis == split_axis else f"Transpose {axis_attr.as_int()}<-{split_axis}"
    )
    moved_text += ", merged by Reshape" if merge else ""
    record = Record("concat-of-split", f"chunks of one on axis {split_axis}: {moved_text}")
    return _replaced(node, result, record, "stacks the slices squeezed" if diverges else "")


def _replaced(node: ir.Node, value: ir.Value, record: Record, squeezed: str) -> Outcome:
    """``node``'s output replaced by ``value``; ``squeezed``: what it squeezes as ONNX
    Runtime does, not the spec (the report says so, and ``value``'s shape may differ from
    what the model declares), or ''."""
    if not squeezed:
        return Replace(uses=[(node.outputs[0], value)], records=[record])
    return Replace(
        uses=[(node.outputs[0], value)],
        records=[record],
        learned=Learned(diverged=[value]),
        said=Said(notes=[follows_ort(node, squeezed)]),
    )


def _concat_from_sequence(ctx: Context, node: ir.Node, scope: Scope) -> Outcome:
    new_axis = concat_new_axis(node)
    if isinstance(new_axis, Reason):
        return Leave(reason=new_axis)
    found = find(ctx, node.inputs[0], scope)
    if found is not None:
        shape = scope.shapes.shape(found[0])
        if shape is not None and shape[found[1]] == 0:  # provably no chunk at all
            text = "ConcatFromSequence of an empty sequence fails at run time; left as is"
            return Leave(reason=Reason("run-time-failure", text))
    restacked = _restack(ctx, node, scope, new_axis)
    if restacked is not None:
        return restacked
    return Leave(reason=ctx.facts.why_unknown(node.inputs[0]))


TABLE: dict[tuple[str, str], Entry] = {
    ("SequenceAt", "other"): Entry(_sequence_at),
    ("SequenceLength", "other"): Entry(_sequence_length),
    ("ConcatFromSequence", "other"): Entry(_concat_from_sequence),
}

RULES: dict[str, tuple[str, str]] = {
    "sequence-at-split": (
        Group.SEQUENCE_OPS,
        "SequenceAt of a split into chunks of one, any position -> Gather on the split axis",
    ),
    "sequence-length-split": (
        Group.SEQUENCE_OPS,
        "SequenceLength of a split into chunks of one -> Gather(Shape(x), axis)",
    ),
    "concat-of-split": (
        Group.SEQUENCE_OPS,
        "ConcatFromSequence of a split into chunks of one -> its input, a Transpose or a Reshape",
    ),
}

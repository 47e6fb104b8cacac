"""A Split seqpasses wrote of which one piece is read becomes a Slice of that piece (a Gather
of that row, when the piece is one row read only through Squeezes of the split axis).

Lowering ``x.unbind()[k]`` or one read of a split list leaves a ``Split`` whose other outputs
nothing reads once dead code is gone. Back ends take a ``Slice`` more readily (onnx2torch turns
a Split into a tuple, and has no converter for Split at opset 18). Only Splits this run made,
with constant sizes that provably sum to the input's dim (a Split that would fail at run time
stays, so that it still fails), are narrowed.
"""

from __future__ import annotations

import numpy as np
import onnx_ir as ir

from seqpasses.core.constants import integer_array
from seqpasses.core.graph import detach, is_default
from seqpasses.walk.trial import CreatedNodes

__all__ = ["narrow_splits"]


def _ints(value: ir.Value | None) -> list[int] | None:
    """The int64s a constant input holds (an initializer or a Constant's), flattened."""
    array = integer_array(value) if value is not None else None
    return None if array is None else [int(v) for v in array.reshape(-1)]


def _sizes(node: ir.Node) -> list[int] | None:
    attr = node.attributes.get("split")
    if attr is not None:
        return [int(v) for v in attr.as_ints()]
    return _ints(node.inputs[1] if len(node.inputs) > 1 else None)


def _constant(graph: ir.Graph | ir.Function, anchor: ir.Node, values: list[int]) -> ir.Value:
    tensor = ir.Tensor(np.array(values, dtype=np.int64))
    node = ir.Node("", "Constant", [], [ir.AttrTensor("value", tensor)], name=None)
    graph.insert_before(anchor, node)
    out = node.outputs[0]
    out.type, out.shape, out.const_value = ir.TensorType(ir.DataType.INT64), ir.Shape([1]), tensor
    return out


def _squeezed_axis(squeeze: ir.Node, rank: int) -> int | None:
    """The one axis a Squeeze removes, when it is given as a constant."""
    attr = squeeze.attributes.get("axes")
    if attr is not None:
        axes: list[int] | None = [int(a) for a in attr.as_ints()]
    else:
        axes = _ints(squeeze.inputs[1] if len(squeeze.inputs) > 1 else None)
    if axes is None:
        return None
    if len(axes) != 1 or not -rank <= axes[0] < rank:
        return None
    return axes[0] + rank if axes[0] < 0 else axes[0]


def _gather_for_squeezes(
    graph: ir.Graph | ir.Function,
    split: ir.Node,
    x: ir.Value,
    piece: ir.Value,
    axis: int,
    k: int,
    created: CreatedNodes,
) -> bool:
    """A piece of one row read only by Squeezes of the split axis (``x.unbind()[k]``): each
    Squeeze becomes ``Gather(x, k, axis)``; whether done."""
    rank = len(x.shape) if x.shape is not None else 0
    uses = [use.node for use in piece.uses()]
    if not uses or any(
        u.op_type != "Squeeze" or not is_default(u) or _squeezed_axis(u, rank) != axis for u in uses
    ):
        return False
    tensor = ir.Tensor(np.array(k, dtype=np.int64))
    index = ir.Node("", "Constant", [], [ir.AttrTensor("value", tensor)])
    graph.insert_before(split, index)
    position = index.outputs[0]
    position.type, position.shape = ir.TensorType(ir.DataType.INT64), ir.Shape([])
    position.const_value = tensor
    for squeeze in uses:
        row = ir.Node("", "Gather", [x, position], [ir.AttrInt64("axis", axis)])
        graph.insert_before(squeeze, row)
        out, old = row.outputs[0], squeeze.outputs[0]
        out.type, out.shape = old.type, old.shape
        if old.is_graph_output():
            out.name, old.name = old.name, None
            outputs = graph.outputs
            for j, value in enumerate(outputs):
                if value is old:
                    outputs[j] = out
        old.replace_all_uses_with(out)
        given = squeeze.inputs[1] if len(squeeze.inputs) > 1 else None
        detach([squeeze])
        _drop_if_unused(given, created)
        created.update([index, row])
    given = split.inputs[1] if len(split.inputs) > 1 else None
    detach([split])
    _drop_if_unused(given, created)
    return True


def _drop_if_unused(value: ir.Value | None, created: CreatedNodes) -> None:
    maker = value.producer() if value is not None else None
    if value is not None and maker is not None and not value.uses() and maker in created:
        detach([maker])


def narrow_splits(created: CreatedNodes, opset: int) -> int:
    """Narrow the Splits in ``created`` that qualify (see the module docstring); how many."""
    if opset < 10:  # (Slice takes its bounds as inputs from opset 10)
        return 0
    count = 0
    splits = [n for n in created if n.op_type == "Split" and is_default(n)]
    for node in splits:
        graph = node.graph
        if graph is None:
            continue  # (made, then dropped again)
        read = [k for k, o in enumerate(node.outputs) if o.uses() or o.is_graph_output()]
        x = node.inputs[0] if node.inputs else None
        sizes = _sizes(node)
        if len(read) != 1 or len(node.outputs) < 2 or x is None or sizes is None:
            continue
        axis = node.attributes.get_int("axis", 0)
        shape = x.shape
        if shape is None or not -len(shape) <= axis < len(shape):
            continue
        axis = axis + len(shape) if axis < 0 else axis
        if shape[axis] != sum(sizes) or len(sizes) != len(node.outputs):
            continue  # (a Split that may fail at run time keeps failing)
        k = read[0]
        old = node.outputs[k]
        if old.is_graph_output():
            continue
        if sizes[k] == 1 and _gather_for_squeezes(graph, node, x, old, axis, k, created):
            count += 1
            continue
        start = sum(sizes[:k])
        bounds = [_constant(graph, node, v) for v in ([start], [start + sizes[k]], [axis])]
        piece = ir.Node("", "Slice", [x, *bounds], name=node.name)
        graph.insert_before(node, piece)
        new = piece.outputs[0]
        new.type, new.shape = old.type, old.shape
        old.replace_all_uses_with(new)
        given = node.inputs[1] if len(node.inputs) > 1 else None
        detach([node])
        _drop_if_unused(given, created)
        created.add(piece)
        count += 1
    return count

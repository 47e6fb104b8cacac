"""The append pattern of a loop body, and what may read the list it builds.

``l.append(x)`` in a loop exports to a carried sequence grown by one ``SequenceInsert`` at the
back per iteration (``l.insert(0, x)``: at a constant position 0). Matching only: nothing here
changes a graph.
"""

from __future__ import annotations

from typing import NamedTuple

import onnx_ir as ir

from seqpasses.core.dims import merge_form
from seqpasses.core.graph import is_default, label
from seqpasses.core.sequence import StaticSequence
from seqpasses.walk.context import Context

__all__ = [
    "READERS",
    "Append",
    "append_pattern",
    "appended_list",
    "reader_ok",
    "why_not_append",
]

READERS = frozenset({"ConcatFromSequence", "SequenceLength", "SequenceAt"})
"""Reads of a loop's final list that have a scan-output form."""


class Append(NamedTuple):
    """One element appended to a carried list per iteration."""

    insert: ir.Node  # the SequenceInsert
    tensor: ir.Value  # what it inserts
    front: bool  # at a constant position 0 (``l.insert(0, x)``) rather than at the back


def append_pattern(
    ctx: Context, body: ir.Graph, j: int, ignore: set[ir.Node] | frozenset[ir.Node] = frozenset()
) -> Append | None:
    """The SequenceInsert that grows carried value ``j`` by one element per iteration, the
    tensor it inserts, and whether it inserts at the front (constant position 0:
    ``l.insert(0, x)``) rather than at the back."""
    carried_in = body.inputs[2 + j]
    carried_out = body.outputs[1 + j]
    insert = carried_out.producer()
    if insert is None or insert.op_type != "SequenceInsert" or not is_default(insert):
        return None
    if insert.inputs[0] is not carried_in:
        return None
    position = insert.inputs[2] if len(insert.inputs) > 2 else None
    front = position is not None
    if position is not None and ctx.const_int(position)[0] != 0:
        return None
    if (
        len([u for u in carried_in.uses() if u.node not in ignore]) != 1
        or carried_in.is_graph_output()  # (the body hands the list on: a read, not a use)
        or carried_out.uses()
        or sum(o is carried_out for o in body.outputs) != 1
    ):
        return None
    tensor = insert.inputs[1]
    if tensor is None:
        return None
    return Append(insert, tensor, front)


def appended_list(
    ctx: Context, node: ir.Node, body: ir.Graph, j: int
) -> tuple[StaticSequence, Append] | str:
    """Carried value ``j`` of Loop ``node`` as a list that starts static and grows by one
    append per iteration, with no graph output of the final list; or why it is not."""
    initial = ctx.facts.static(node.inputs[2 + j])
    if initial is None:
        return "the list it starts from is not statically known"
    if node.outputs[j].is_graph_output():
        return "the final list is a graph output"
    found = append_pattern(ctx, body, j)
    if found is None:
        return why_not_append(body, j)
    return initial, found


def why_not_append(body: ir.Graph, j: int) -> str:
    """Why carried sequence ``j`` is not grown by one append at the back per iteration."""
    carried_in, carried_out = body.inputs[2 + j], body.outputs[1 + j]
    insert = carried_out.producer()
    if carried_out is carried_in:
        return "the body passes the list through unchanged"
    if carried_in.is_graph_output():
        return "the body hands the list on as another of its outputs"
    if insert is not None and insert.op_type == "SequenceInsert":
        if len(insert.inputs) > 2 and insert.inputs[2] is not None:
            return "the body inserts at a position other than the back or a constant 0"
        readers = [u.node for u in carried_in.uses() if u.node is not insert]
        if insert.inputs[0] is carried_in and readers:
            return f"the body also reads the list ({label(readers[0])})"
    if insert is not None and insert.op_type == "If":
        return f"the list grows inside {label(insert)} (a conditional append)"
    if insert is None or insert.graph is not body:
        return "the list is changed inside a nested graph (an If branch or an inner loop)"
    return f"the body changes the list with {label(insert)}, not one append at the back"


def reader_ok(
    ctx: Context, reader: ir.Node, shape: ir.Shape, initial: int, runs_some: bool, opset: int
) -> str:
    """Why ``reader`` of the final list has no scan-output form ('' when it has).
    ``runs_some``: the loop provably appends at least once, or an empty list makes the read
    fail anyway (no initial element)."""
    rank = len(shape)
    if reader.op_type == "SequenceLength":
        return ""
    if reader.op_type == "SequenceAt":
        if len(reader.inputs) < 2 or reader.inputs[1] is None:
            return "no position"
        position, why = ctx.const_int(reader.inputs[1])
        if position is None:
            return str(why)
        if position < 0 and initial:
            return "negative SequenceAt position with initial elements"
        return ""
    new_axis = reader.attributes.get_int("new_axis", 0)
    if new_axis not in (0, 1):
        return f"new_axis {new_axis} is not 0 or 1"
    axis = reader.attributes.get_int("axis", 0)
    out_rank = rank + 1 if new_axis else rank
    if not -out_rank <= axis < out_rank:
        return f"axis {axis} out of range"
    axis = axis + out_rank if axis < 0 else axis
    dims = [*shape[:axis], ir.SymbolicDim(None), *shape[axis:]]
    if not new_axis and merge_form(dims, axis, runs_some, opset) is None:
        return (
            "the loop may append nothing and the element's dims may be 0: before opset 14 no "
            "Reshape target merges the appended rows right for every size"
        )
    return ""

"""A check whose data reaches no output gets a reader of its data.

A rewrite keeps a node that fails where the original fails (a ``Gather`` at a run-time
position, a ``Concat`` of elements that may disagree): dead-code removal keeps it whatever
reads it. But ONNX Runtime's optimizer folds a ``Shape`` of a tensor whose shape it knows into
a constant, and drops the nodes that only fed it (back to the check): the failure is gone. A
node no one reads from the start is still run, so a check whose data reaches no graph output
(only ``Shape`` or ``Size`` read what it feeds) gets one more reader of its data, read by
nothing: a ``Cast`` (to bool, or to int32 for a bool). seqpasses' own length reads need none
(they are computed from the check: see ``StackedSequence.guard``).
"""

from __future__ import annotations

from collections.abc import Iterable

import onnx_ir as ir

__all__ = ["anchor_checks"]


SHAPE_READERS = ("Shape", "Size")
_LIMIT = 256  # nodes followed from one check before it is anchored anyway


def _data_reaches_output(node: ir.Node) -> bool:
    """Whether data ``node`` makes reaches a graph output (of any graph) other than through a
    ``Shape`` or ``Size``."""
    stack = list(node.outputs)
    seen: set[ir.Node] = set()
    while stack:
        value = stack.pop()
        if value.is_graph_output():
            return True
        for use in value.uses():
            reader = use.node
            if reader.op_type in SHAPE_READERS or reader in seen:
                continue
            seen.add(reader)
            if len(seen) > _LIMIT:
                return False
            stack.extend(reader.outputs)
    return False


def anchor_checks(checks: Iterable[ir.Node]) -> int:
    """Give each check of ``checks`` still in a graph, read, whose data reaches no graph
    output, an unread ``Cast`` of its first output; how many."""
    anchored = 0
    for node in checks:
        graph = node.graph
        if graph is None or not node.outputs:
            continue
        if not any(out.uses() for out in node.outputs) or _data_reaches_output(node):
            continue
        outputs = node.outputs
        value = outputs[0]
        dtype = value.dtype
        if dtype is None or dtype == ir.DataType.STRING:
            continue
        target = ir.DataType.INT32 if dtype == ir.DataType.BOOL else ir.DataType.BOOL
        cast = ir.node("Cast", [value], {"to": int(target)}, name=f"{node.name or 'check'}/kept")
        cast.outputs[0].type = ir.TensorType(target)
        cast.outputs[0].shape = value.shape
        graph.insert_after(node, cast)
        anchored += 1
    return anchored

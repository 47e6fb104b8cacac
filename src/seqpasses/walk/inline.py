"""Copying a graph's nodes into an enclosing one: an If branch taken, a loop body per
iteration, a SequenceMap body per element. The copies are walked at once, so the rewrites that
call this see what they compute (the engine builds; transfers decide what to copy)."""

from __future__ import annotations

from collections.abc import Mapping

import onnx_ir as ir

from seqpasses.core.graph import detach, hold
from seqpasses.walk.context import Walk
from seqpasses.walk.edits import Edits
from seqpasses.walk.scope import Scope

__all__ = ["inline_graph"]


def inline_graph(
    walk: Walk,
    edits: Edits,
    scope: Scope,
    anchor: ir.Node,
    body: ir.Graph,
    inputs: Mapping[ir.Value, ir.Value],
) -> tuple[list[ir.Node], list[ir.Value]]:
    """Copy ``body``'s nodes before ``anchor`` with its inputs bound; return nodes and outputs.

    The copies are walked at once (by ``walk``), so static sequences inside them are known to
    what follows.
    """
    base = anchor.name or anchor.op_type
    copy = body.clone(allow_outer_scope_values=True)
    bound = {
        mine: inputs.get(theirs) for theirs, mine in zip(body.inputs, copy.inputs, strict=True)
    }
    outputs = [bound.get(out) or out for out in copy.outputs]
    copy.outputs.clear()
    for mine, value in bound.items():
        if value is not None:
            mine.replace_all_uses_with(value)
    copy.inputs.clear()
    constants: list[ir.Node] = []
    for name in list(copy.initializers):
        init = copy.initializers.pop(name)
        fresh = edits.next_name(base, name).replace("/", "_")
        if init.const_value is not None:
            # the clone shares the tensor (and, for a loaded model, the caller's TensorProto):
            # renaming the value would rename it there too
            init.const_value = ir.tensor(init.const_value.numpy(), name=fresh)
        init.name = fresh
        if isinstance(scope.graph, ir.Graph):
            edits.register_initializer(scope.graph, init)
        elif init.const_value is not None:  # a function has no initializers: a Constant
            constant = ir.node("Constant", [], {"value": init.const_value}, name=init.name)
            constant.outputs[0].type, constant.outputs[0].shape = init.type, init.shape
            init.replace_all_uses_with(constant.outputs[0])
            constants.append(constant)
    nodes = list(copy)
    copy.remove(nodes)
    for new, node in zip(nodes, body, strict=True):
        edits.recorder.record_copy(new, node)
        new.name = edits.next_name(base, node.name or node.op_type)
        for out in new.outputs:
            out.name = None
            # a body's declared shapes are guesses, often true of one iteration only (an
            # exporter's dim names would claim copies of different shapes are alike)
            out.shape = None
    # what the copies return is read (by what the anchor's outputs feed) while they are
    # walked: held, so that no rewrite takes a returned value for unread (a Loop must not
    # drop the final list it is) and each replacement reaches it
    held_by = hold(outputs)
    scope.graph.insert_before(anchor, [*constants, *nodes, held_by])
    edits.created.update(constants)
    edits.created.update(nodes)
    for node in nodes:
        walk.visit(node, scope)
    held = list(held_by.inputs)
    detach([held_by])
    # the walk may have replaced an output (an inner If inlined, a Loop rebuilt)
    return nodes, [edits.current(v) for v in held if v is not None]

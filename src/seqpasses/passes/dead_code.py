"""Dead-code removal, including what only the subgraphs of a removed node read.

onnx_ir's ``RemoveUnusedNodesPass`` removes dead nodes one ``Graph.remove`` call at a time, and
each call builds a set of the graph's outputs: O(dead nodes x graph outputs), seconds on a graph
with thousands of outputs. It also keeps a node alive while the subgraph of another dead node
still reads it. So the dead set is found here first, in one backward sweep per graph, and
removed with one ``Graph.remove`` call (linear in what it removes). The library's pass then runs
on what is left: it finds nothing dead, and does the rest of its job as it always does (trailing
empty inputs, unused optional outputs, unused initializers, function bodies).
"""

from __future__ import annotations

import onnx_ir as ir
import onnx_ir.passes.common as common_passes

from seqpasses.core.graph import drop_subgraphs, nested_nodes, subgraphs

__all__ = ["RemoveDeadNodesPass", "remove_dead_nodes"]


def remove_dead_nodes(graph: ir.Graph | ir.Function) -> int:
    """Remove the nodes of ``graph`` (and of its live nodes' subgraphs, at any depth) that
    reach none of its outputs; the number removed. A node read only from inside the subgraph
    of a dead node is dead too."""
    outputs = frozenset(graph.outputs)
    owner: dict[ir.Node, ir.Node] = {}  # a node of a subgraph -> the node of ``graph`` holding it
    for node in graph:
        if subgraphs(node):
            for inner in nested_nodes(node):
                owner[inner] = node
    dead: set[ir.Node] = set()
    for node in reversed(graph):
        if all(_unread(value, outputs, owner, dead) for value in node.outputs):
            dead.add(node)
    for node in dead:
        if subgraphs(node):
            drop_subgraphs(node)
    if dead:
        graph.remove(dead, safe=True)
    count = len(dead)
    for node in graph:
        for _, held in subgraphs(node):
            count += remove_dead_nodes(held)
    return count


def _unread(
    value: ir.Value,
    outputs: frozenset[ir.Value],
    owner: dict[ir.Node, ir.Node],
    dead: set[ir.Node],
) -> bool:
    if value in outputs:
        return False
    # in a sorted graph every reader comes later and has been decided; one not yet decided
    # (an unsorted graph) counts as alive
    return all(owner.get(user, user) in dead for user, _ in value.uses())


class RemoveDeadNodesPass(ir.passes.InPlacePass):
    """Dead nodes of the main graph, its subgraphs and its functions, removed in one batch per
    graph; then onnx_ir's own pass for the rest of its job (see the module's docstring)."""

    def call(self, model: ir.Model) -> ir.passes.PassResult:
        count = remove_dead_nodes(model.graph)
        for function in model.functions.values():
            count += remove_dead_nodes(function)
        modified = common_passes.RemoveUnusedNodesPass()(model).modified
        return ir.passes.PassResult(model, modified=modified or count > 0)

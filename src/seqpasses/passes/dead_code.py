"""Dead-code removal, including what only the subgraphs of a removed node read.

onnx_ir's ``RemoveUnusedNodesPass`` removes dead nodes one ``Graph.remove`` call at a time, and
each call builds a set of the graph's outputs: O(dead nodes x graph outputs), seconds on a graph
with thousands of outputs. It also keeps a node alive while the subgraph of another dead node
still reads it. So the dead set is found here first, by marking what the outputs read, and
removed with one ``Graph.remove`` call (linear in what it removes). The library's pass then runs
on what is left: it finds nothing dead, and does the rest of its job as it always does (trailing
empty inputs, unused optional outputs, unused initializers, function bodies).
"""

from __future__ import annotations

import onnx_ir as ir
import onnx_ir.passes.common as common_passes

from seqpasses.core.graph import drop_subgraphs, subgraphs

__all__ = ["RemoveDeadNodesPass", "remove_dead_nodes"]


def remove_dead_nodes(graph: ir.Graph | ir.Function, removed: list[ir.Node]) -> None:
    """Remove the nodes of ``graph`` (and of its live nodes' subgraphs, at any depth) that
    reach none of its outputs, appending them to ``removed``. A node read only from inside the subgraph
    of a dead node is dead too. Liveness is marked from the outputs backwards, so the order
    of the nodes does not matter (an unrolled or inlined copy may leave them unsorted).
    Subgraphs are cleaned first: what a dead node inside a branch read must not keep an outer
    node alive."""
    holders = []
    for node in graph:
        if subgraphs(node):
            holders.append(node)
            for _, held in subgraphs(node):
                remove_dead_nodes(held, removed)
    owner = graph.graph if isinstance(graph, ir.Function) else graph
    live: set[ir.Node] = set()
    stack = [p for p in (v.producer() for v in graph.outputs) if p is not None]
    while stack:
        node = stack.pop()
        if node in live or node.graph is not owner:
            continue
        live.add(node)
        for value in _reads(node):
            producer = value.producer() if value is not None else None
            if producer is not None and producer not in live:
                stack.append(producer)
    if len(live) == len(graph):
        return
    dead = [node for node in graph if node not in live]
    for node in holders:
        if node not in live:
            drop_subgraphs(node)
    graph.remove(dead, safe=True)
    removed.extend(dead)


def _reads(node: ir.Node) -> list[ir.Value | None]:
    """What ``node`` reads: its inputs, and every value its subgraphs (at any depth) read or
    return (a branch may return an outer value as it is)."""
    reads = list(node.inputs)
    graphs = [g for _, g in subgraphs(node)]
    while graphs:
        inner = graphs.pop()
        reads.extend(inner.outputs)
        for held in inner:
            reads.extend(held.inputs)
            graphs.extend(g for _, g in subgraphs(held))
    return reads


class RemoveDeadNodesPass(ir.passes.InPlacePass):
    """Dead nodes of the main graph, its subgraphs and its functions, removed in one batch per
    graph; then onnx_ir's own pass for the rest of its job (see the module's docstring).
    ``removed`` lists the nodes it took out."""

    def __init__(self) -> None:
        super().__init__()
        self.removed: list[ir.Node] = []

    def call(self, model: ir.Model) -> ir.passes.PassResult:
        remove_dead_nodes(model.graph, self.removed)
        for function in model.functions.values():
            remove_dead_nodes(function, self.removed)
        modified = common_passes.RemoveUnusedNodesPass()(model).modified
        return ir.passes.PassResult(model, modified=modified or bool(self.removed))

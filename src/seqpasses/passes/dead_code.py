"""Dead-code removal, including what only the subgraphs of a removed node read.

This is onnx_ir's ``RemoveUnusedNodesPass``, done in one batch per graph. We do not call the
library's pass because it removes dead nodes one ``Graph.remove`` call at a time, and each call
builds a set of the graph's outputs: O(dead nodes x graph outputs), seconds on a graph with
thousands of outputs. It also keeps a node alive while the subgraph of another dead node still
reads it, and it looks up an operator schema for every node of every graph. Here the dead set
is found by marking what the outputs read and removed with one ``Graph.remove`` call (linear in
what it removes); then the rest of the library pass's job is done with its semantics: trailing
empty inputs dropped, unused optional outputs unnamed (schemas looked up once per op and
opset), unused initializers of the main graph removed, function bodies cleaned alike. Graph
inputs and outputs never change.

seqpasses gives it the nodes it must keep even when nothing reads them (``protected``: what
was dead in the model it was given, what fails at run time as it stands, the checks its
rewrites emit: a failure is an output too), and :func:`dead_nodes` finds the first.
"""

from __future__ import annotations

import functools
from collections.abc import Collection, Iterable

import onnx
import onnx_ir as ir

from seqpasses.core.graph import (
    all_nodes,
    clear_inputs,
    drop_subgraphs,
    is_default,
    onnx_opset,
    subgraphs,
)

__all__ = ["RemoveDeadNodesPass", "dead_nodes", "marked_dead", "remove_dead_nodes"]


def remove_dead_nodes(
    graph: ir.Graph | ir.Function,
    removed: list[ir.Node],
    opset: int | None = None,
    protected: Collection[ir.Node] = frozenset(),
) -> bool:
    """Remove the nodes of ``graph`` (and of its live nodes' subgraphs, at any depth) that
    reach none of its outputs, appending them to ``removed``; tidy the inputs and outputs of
    the nodes left (ONNX opset ``opset``, by default the graph's own import). Whether a
    ``protected`` node stays in it (at any depth).

    A node read only from inside the subgraph of a dead node is dead too. Liveness is marked
    from the outputs backwards, so the order of the nodes does not matter (an unrolled or
    inlined copy may leave them unsorted). Subgraphs are cleaned first: what a dead node
    inside a branch read must not keep an outer node alive. ``protected`` nodes are live
    whatever reads them, and so is a node whose subgraph holds one (a run-time check inside
    a branch runs when the branch does)."""
    opset = onnx_opset(graph.opset_imports) if opset is None else opset
    holders = []
    rooted: list[ir.Node] = []
    for node in graph:
        inner = subgraphs(node)
        if inner:
            holders.append(node)
            held = [remove_dead_nodes(g, removed, opset, protected) for _, g in inner]
            if any(held):
                rooted.append(node)
    live = _live(graph, protected, rooted) if _sinks(graph) else None
    if live is not None and len(live) != len(graph):
        dead = [node for node in graph if node not in live]
        for node in holders:
            if node not in live:
                drop_subgraphs(node)
        for node in dead:  # (the dead set is closed: nothing live reads it)
            clear_inputs(node)
        graph.remove(dead)
        removed.extend(dead)
    outputs = frozenset(graph.outputs)
    for node in graph:
        _tidy(node, outputs, opset)
    if not protected:
        return False
    return bool(rooted) or any(node in protected for node in graph)


def dead_nodes(model: ir.Model) -> set[ir.Node]:
    """The nodes :func:`remove_dead_nodes` would remove from ``model`` (main graph,
    subgraphs at any depth, functions), removing nothing."""
    return marked_dead(model) if _sinks(all_nodes(model)) else set()


def marked_dead(model: ir.Model) -> set[ir.Node]:
    """:func:`dead_nodes` by marking what each graph's outputs read (what it does when some
    node is read by nothing)."""
    dead: set[ir.Node] = set()

    def mark(graph: ir.Graph | ir.Function) -> None:
        for node in graph:
            for _, inner in subgraphs(node):
                mark(inner)
        live = _live(graph, frozenset(), [], skip=dead)
        dead.update(node for node in graph if node not in live)

    mark(model.graph)
    for function in model.functions.values():
        mark(function)
    return dead


def _sinks(nodes: Iterable[ir.Node]) -> bool:
    """Whether one of ``nodes`` (a model's at any depth, or a graph's once its subgraphs are
    cleaned) has no output that a node reads or a graph returns. Without one, none of them is
    dead: the readers of a dead node are dead (or dead nodes inside a subgraph), so the last
    of them would be read by nothing. A walk of the nodes instead of their liveness, in the
    models as exporters write them."""
    for node in nodes:
        if not any(out.uses() or out.is_graph_output() for out in node.outputs):
            return True
    return False


def _live(
    graph: ir.Graph | ir.Function,
    protected: Collection[ir.Node],
    rooted: list[ir.Node],
    skip: Collection[ir.Node] = frozenset(),
) -> set[ir.Node]:
    """The nodes of ``graph`` its outputs, its ``protected`` nodes and ``rooted`` depend on
    (what nodes of ``skip`` in subgraphs read does not count)."""
    owner = graph.graph if isinstance(graph, ir.Function) else graph
    live: set[ir.Node] = set()
    stack = [p for p in (v.producer() for v in graph.outputs) if p is not None]
    stack += rooted
    if protected:
        stack += [node for node in graph if node in protected]
    while stack:
        node = stack.pop()
        if node in live or node.graph is not owner:
            continue
        live.add(node)
        for value in _reads(node, skip):
            producer = value.producer() if value is not None else None
            if producer is not None and producer not in live:
                stack.append(producer)
    return live


def _tidy(node: ir.Node, graph_outputs: frozenset[ir.Value], opset: int | None) -> None:
    """Drop ``node``'s trailing empty inputs (down to the fewest its op takes: a Loop keeps an
    empty condition slot), and unname its optional outputs nobody reads (dropping the trailing
    ones), as onnx_ir's pass does."""
    inputs = node.inputs
    if inputs and inputs[-1] is None:
        keep = len(inputs)
        least = _min_inputs(node.op_type, opset) if is_default(node) else 0
        while keep > least and inputs[keep - 1] is None:
            keep -= 1
        if keep != len(inputs):
            node.resize_inputs(keep)
    optional = _optional_outputs(node.op_type, opset) if is_default(node) else None
    if not optional:
        return
    outputs = node.outputs
    for k, out in enumerate(outputs[: len(optional)]):
        if optional[k] and out not in graph_outputs and not out.uses():
            out.name = ""
    keep = len(outputs)
    while keep and not outputs[keep - 1].name:
        keep -= 1
    if keep != len(outputs):
        node.resize_outputs(keep)


@functools.cache
def _min_inputs(op_type: str, opset: int | None) -> int:
    """How many inputs an ONNX op takes at least (empty ones count: ``Loop(M, "")``)."""
    if opset is None:
        return 0
    try:
        return int(onnx.defs.get_schema(op_type, opset, "").min_input)
    except Exception:  # (no schema for this op at this opset)
        return 0


@functools.cache
def _optional_outputs(op_type: str, opset: int | None) -> tuple[bool, ...] | None:
    """Which outputs of an ONNX op are optional; None when no output is, when the op has a
    variadic output, or is BatchNormalization (whose output count selects training mode),
    or unknown."""
    if opset is None or op_type == "BatchNormalization":
        return None
    try:
        schema = onnx.defs.get_schema(op_type, opset, "")
    except Exception:  # (no schema for this op at this opset)
        return None
    options = [out.option for out in schema.outputs]
    if onnx.defs.OpSchema.FormalParameterOption.Variadic in options:
        return None
    flags = tuple(o == onnx.defs.OpSchema.FormalParameterOption.Optional for o in options)
    return flags if any(flags) else None


def _reads(node: ir.Node, skip: Collection[ir.Node] = frozenset()) -> list[ir.Value | None]:
    """What ``node`` reads: its inputs, and every value its subgraphs (at any depth) read or
    return (a branch may return an outer value as it is), but for their nodes in ``skip``."""
    reads = list(node.inputs)
    graphs = [g for _, g in subgraphs(node)]
    while graphs:
        inner = graphs.pop()
        reads.extend(inner.outputs)
        for held in inner:
            if held in skip:
                continue
            reads.extend(held.inputs)
            graphs.extend(g for _, g in subgraphs(held))
    return reads


class RemoveDeadNodesPass(ir.passes.InPlacePass):
    """Dead nodes of the main graph, its subgraphs and its functions, removed in one batch per
    graph, and unused initializers of the main graph (see the module's docstring), but for
    the ``protected`` nodes (and what they read). ``removed`` lists the nodes it took out."""

    def __init__(self, protected: Collection[ir.Node] = frozenset()) -> None:
        super().__init__()
        self.removed: list[ir.Node] = []
        self.protected = protected

    def call(self, model: ir.Model) -> ir.passes.PassResult:
        remove_dead_nodes(model.graph, self.removed, protected=self.protected)
        for function in model.functions.values():
            remove_dead_nodes(function, self.removed, protected=self.protected)
        graph = model.graph
        kept = frozenset([*graph.inputs, *graph.outputs])
        unused = [
            name
            for name, value in graph.initializers.items()
            if value not in kept and not value.uses()
        ]
        for name in unused:
            del graph.initializers[name]
        return ir.passes.PassResult(model, modified=bool(self.removed or unused))

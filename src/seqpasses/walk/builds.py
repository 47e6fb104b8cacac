"""What an outcome's rebuilds and builds do to the graph, a part of the writer
(:class:`~seqpasses.walk.edits.Edits`): a :class:`~seqpasses.walk.outcomes.Rebuild` applied,
a body given its :class:`~seqpasses.walk.outcomes.BodyForm`, nodes a rewrite replaced inside
a body taken out, a discarded copy dropped, the subgraphs of a node whose work was inlined
retired, an attribute set, a node built whole (a Loop) put in, a body swept.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import onnx_ir as ir

from seqpasses.core.graph import detach, drop_nodes_of, drop_subgraphs, rebuild, subgraphs
from seqpasses.walk.facts import Facts
from seqpasses.walk.keep import Liveness
from seqpasses.walk.outcomes import BodyForm, Rebuild
from seqpasses.walk.scope import Scope
from seqpasses.walk.trial import CreatedNodes

__all__ = ["BuildsMixin"]


class BuildsMixin:
    """Applying what transfers propose; mixed into :class:`~seqpasses.walk.edits.Edits`, which
    sets these attributes and methods."""

    facts: Facts
    created: CreatedNodes
    dry: bool
    rebuilt: Callable[[ir.Node, ir.Node, Scope], None]
    replace: Callable[[ir.Value, ir.Value, Scope], None]
    keep: Liveness

    def shape_body(self, graph: ir.Graph, form: BodyForm) -> None:
        """Give ``graph`` the form ``form`` describes."""
        for old, new in form.moved.items():
            old.replace_all_uses_with(new)
        self.take_out(form.drop)
        if form.inputs is not None:
            while len(graph.inputs):
                graph.inputs.pop()
            graph.inputs.extend(form.inputs)
        if form.outputs is not None:
            before = set(graph.outputs)
            while len(graph.outputs):
                graph.outputs.pop()
            seen: set[ir.Value] = set()
            for value in form.outputs:
                kept = value in before and (_made_here(value, graph) or value.is_graph_input())
                if value in seen or not (kept or _made_here(value, graph)):
                    ident = ir.Node("", "Identity", [value])  # (ir.node converts: 3x dearer)
                    graph.append(ident)
                    ident.outputs[0].type, ident.outputs[0].shape = value.type, value.shape
                    value = ident.outputs[0]
                seen.add(value)
                graph.outputs.append(value)

    def remake(self, plan: Rebuild, scope: Scope) -> ir.Node:
        """Apply ``plan`` in ``scope``'s graph; the node that replaces ``plan.node``."""
        for graph, form in plan.bodies.values():
            self.shape_body(graph, form)
        graphs = {attr: graph for attr, (graph, _) in plan.bodies.items()}
        new = rebuild(plan.node, plan.inputs, graphs, plan.num_outputs)
        self.rebuilt(new, plan.node, scope)
        for k, index in plan.moved.items():
            old, fresh = plan.node.outputs[k], new.outputs[index]
            fresh.type, fresh.shape = old.type, old.shape
            if plan.facts and old in self.facts.values:
                self.facts.values[fresh] = self.facts.values[old]
            self.replace(old, fresh, scope)
        return new

    def add_node(self, node: ir.Node, before: ir.Node) -> None:
        """Put ``node``, built whole by a transfer (a Loop and its body), before ``before``."""
        assert before.graph is not None
        before.graph.insert_before(before, node)
        self.created.add(node)

    def take_out(self, nodes: Iterable[ir.Node]) -> None:
        """Take ``nodes`` (and what their subgraphs hold) out of their graphs: what a rewrite
        replaced inside a body being built."""
        nodes = list(nodes)
        for node in nodes:
            drop_subgraphs(node)
        detach(nodes)

    def discard(self, graph: ir.Graph) -> None:
        """Drop every node of ``graph``, a copy or body no longer used, so that it stops using
        outer values."""
        drop_nodes_of(graph)

    def retire(self, node: ir.Node) -> None:
        """``node``'s work was inlined: its subgraphs stop using outer values (dead-code
        removal then takes it and what only it read)."""
        drop_subgraphs(node)

    def set_attribute(self, node: ir.Node, attr: ir.Attr) -> None:
        """Give ``node`` the attribute ``attr`` (in a dry walk, nothing changes)."""
        if not self.dry:
            node.attributes[attr.name] = attr

    def sweep(self, graph: ir.Graph) -> None:
        """Remove what nothing reads from ``graph`` and its subgraphs (what a walk replaced),
        but what stays whatever reads it (a check, a node that fails at run time)."""
        for inner in list(graph):
            for _, sub in subgraphs(inner):
                self.sweep(sub)
        for inner in reversed(list(graph)):
            if self.keep.holds_failure(inner, settled=False):
                continue
            if all(not out.uses() and not out.is_graph_output() for out in inner.outputs):
                self.take_out([inner])


def _made_here(value: ir.Value, graph: ir.Graph) -> bool:
    producer = value.producer()
    return producer is not None and producer.graph is graph

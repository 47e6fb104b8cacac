"""What a transfer proposes for control flow, and how ``walk/`` applies it.

A transfer never changes a graph itself (``tests/test_structure.py`` scans ``transfer/`` for
such calls). For a straight-line op it builds new nodes with the emitter ``ctx.edits`` gives
it and hands the replacement to :meth:`Edits.replace`. For control flow it describes the new
form and hands that over:

- :class:`BodyForm`: what a body (a clone, or the body its node gives up) becomes: its inputs
  and outputs in order, the nodes its new form replaces, uses moved from one value to another;
- :class:`Rebuild`: a control-flow node remade with new inputs, bodies and outputs, and which
  of its old outputs the new ones stand for.

:class:`OutcomesMixin` (mixed into :class:`~seqpasses.walk.edits.Edits`) applies them, and
holds the few other changes a transfer may ask for: taking out nodes a rewrite replaced inside
a body, dropping a discarded copy, retiring the subgraphs of a node whose work was inlined,
setting an attribute, putting a node a transfer built whole (a Loop) into the graph.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import onnx_ir as ir

from seqpasses.core.emit import Emitter
from seqpasses.core.graph import detach, drop_nodes_of, drop_subgraphs, rebuild, subgraphs
from seqpasses.walk.facts import Facts
from seqpasses.walk.scope import Scope
from seqpasses.walk.trial import CreatedNodes

__all__ = ["BodyForm", "OutcomesMixin", "Rebuild"]


@dataclass(frozen=True)
class BodyForm:
    """What a body becomes. ``None``: as it is.

    ``outputs``: each one made by the body, once: a value the body had as an output keeps its
    slot's form; any other that is an input, comes from outside, is not made by a node of the
    body or repeats goes through a new Identity (a graph output must be made by its graph).
    """

    inputs: Sequence[ir.Value] | None = None
    outputs: Sequence[ir.Value] | None = None
    drop: Sequence[ir.Node] = ()  # nodes the new form replaces, taken out first
    moved: Mapping[ir.Value, ir.Value] = field(default_factory=dict)  # uses of old -> new


@dataclass(frozen=True)
class Rebuild:
    """``node`` remade: new ``inputs``, its graph attributes reshaped (attribute -> the graph
    and its :class:`BodyForm`), ``num_outputs`` outputs. ``moved``: an old output's index ->
    the index of the new output that stands for it (its uses move over, with its type and
    shape; with ``facts``, what is known of it too). Outputs not in ``moved`` are the
    transfer's to settle."""

    node: ir.Node
    inputs: Sequence[ir.Value | None]
    bodies: Mapping[str, tuple[ir.Graph, BodyForm]]
    num_outputs: int
    moved: Mapping[int, int] = field(default_factory=dict)
    facts: bool = False


def _made_here(value: ir.Value, graph: ir.Graph) -> bool:
    producer = value.producer()
    return producer is not None and producer.graph is graph


class OutcomesMixin:
    """Applying what transfers propose; mixed into :class:`~seqpasses.walk.edits.Edits`, which
    sets these attributes and methods."""

    facts: Facts
    created: CreatedNodes
    dry: bool
    rebuilt: Callable[[ir.Node, ir.Node, Scope], None]
    replace: Callable[[ir.Value, ir.Value, Scope], None]
    holds_failure: Callable[..., bool]

    def body_emitter(self, graph: ir.Graph, anchor: ir.Node | None, opset: int) -> Emitter:
        """An emitter into a body being built (a clone, or one its node gives up), before
        ``anchor`` (at the end when ``None``)."""
        owner: Any = self  # (Edits: the Owner every emitter records with)
        return Emitter(graph, anchor, opset, owner)

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
                    ident = ir.node("Identity", [value])
                    graph.append(ident)
                    ident.outputs[0].type, ident.outputs[0].shape = value.type, value.shape
                    value = ident.outputs[0]
                seen.add(value)
                graph.outputs.append(value)

    def apply(self, plan: Rebuild, scope: Scope) -> ir.Node:
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
            if self.holds_failure(inner, settled=False):
                continue
            if all(not out.uses() and not out.is_graph_output() for out in inner.outputs):
                self.take_out([inner])

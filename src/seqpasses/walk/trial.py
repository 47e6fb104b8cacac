"""Speculative rewrites (an unrolling, an inlined SequenceMap, a loop carried as one tensor):
where the records stood (a :class:`Checkpoint` over the nodes a walk created, in order), which
sequence ops the nodes created since then leave alive, and undoing them all."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

import onnx_ir as ir

from seqpasses.core.graph import detach, drop_subgraphs, is_default, nested_nodes
from seqpasses.core.ops import SEQUENCE_OPS

if TYPE_CHECKING:
    from seqpasses.walk.edits import Edits

__all__ = ["Checkpoint", "CreatedNodes", "checkpoint", "left_since", "live_nodes", "rollback"]


class CreatedNodes:
    """The nodes a walk created, in creation order (a rollback removes a suffix of them)."""

    def __init__(self) -> None:
        self.order: list[ir.Node] = []
        self._members: set[ir.Node] = set()

    def add(self, node: ir.Node) -> None:
        if node not in self._members:
            self._members.add(node)
            self.order.append(node)

    def update(self, nodes: Iterable[ir.Node]) -> None:
        for node in nodes:
            self.add(node)

    def __contains__(self, node: object) -> bool:
        return node in self._members

    def __len__(self) -> int:
        return len(self.order)

    def __iter__(self) -> Iterator[ir.Node]:
        return iter(self.order)

    def truncate(self, length: int) -> list[ir.Node]:
        """Forget the nodes created after the first ``length``; return them."""
        dropped = self.order[length:]
        del self.order[length:]
        self._members.difference_update(dropped)
        return dropped


@dataclass(frozen=True)
class Checkpoint:
    """Where the records stood before a speculative rewrite (see :meth:`Edits.rollback`)."""

    created: int
    rewrites: int
    notes: int
    diverged: int
    initializers: int
    rewrote: bool


def live_nodes(window: list[ir.Node], roots: Iterable[ir.Value]) -> list[ir.Node]:
    """The nodes of ``window`` (in its order) that ``roots`` or a use outside the window
    depend on, through inputs and the outputs of subgraphs."""
    members = set(window)
    wanted = set(roots)
    live: set[ir.Node] = set()
    stack = [
        node
        for node in window
        if any(
            out in wanted or any(use.node not in members for use in out.uses())
            for out in node.outputs
        )
    ]
    while stack:
        node = stack.pop()
        if node in live:
            continue
        live.add(node)
        sources = list(node.inputs)
        for attr in node.attributes.values():
            if attr.is_ref():
                continue
            if attr.type == ir.AttributeType.GRAPH:
                sources.extend(attr.as_graph().outputs)
            elif attr.type == ir.AttributeType.GRAPHS:
                sources.extend(o for g in attr.as_graphs() for o in g.outputs)
        for value in sources:
            producer = value.producer() if value is not None else None
            if producer in members and producer not in live:
                stack.append(producer)
    return [node for node in window if node in live]


def checkpoint(edits: Edits) -> Checkpoint:
    """Where the records stand now."""
    return Checkpoint(
        len(edits.created),
        len(edits.report.rewrites),
        len(edits.report.notes),
        len(edits.diverged),
        len(edits.registered),
        edits.rewrote,
    )


def left_since(edits: Edits, mark: Checkpoint, roots: Iterable[ir.Value]) -> list[ir.Node]:
    """Sequence ops among the nodes created since ``mark`` (subgraphs included) that will
    stay: left with a reason, a canonical sequence made for a consumer that needs one, or any
    in a subgraph of a copy (a list a copied If returns from a branch: nothing folds it), and
    live: ``roots`` (the values the new nodes stand in for), a graph output or a node that
    stays whatever reads it (:meth:`Edits.holds_failure`) depend on them."""
    nested = {inner for node in edits.created.order[mark.created :] for inner in nested_nodes(node)}
    window = [
        inner
        for node in edits.created.order[mark.created :]
        for inner in (node, *nested_nodes(node))
    ]
    # (a node that fails at run time, or a check, stays whatever reads it)
    kept = [
        out for node in window if edits.holds_failure(node, settled=False) for out in node.outputs
    ]
    return [
        node
        for node in live_nodes(window, [*roots, *kept])
        if node.op_type in SEQUENCE_OPS
        and is_default(node)
        and (node in edits.facts.reasons or node in edits.canonical or node in nested)
    ]


def rollback(edits: Edits, mark: Checkpoint) -> None:
    """Remove every node created since ``mark`` and forget what was recorded about it.

    Only valid while nothing that existed before ``mark`` was changed (the speculative
    rewrites only add nodes before their anchor and rewrite those new nodes)."""
    dropped = edits.created.truncate(mark.created)
    gone = set(dropped)
    for node in dropped:
        drop_subgraphs(node)
    detach(dropped)
    for graph, name in edits.registered[mark.initializers :]:
        graph.initializers.pop(name, None)
    del edits.registered[mark.initializers :]
    del edits.report.rewrites[mark.rewrites :]
    del edits.report.notes[mark.notes :]
    del edits.diverged[mark.diverged :]
    edits.rewrote = mark.rewrote
    edits.canonical -= gone
    edits.unloadable[:] = [node for node in edits.unloadable if node not in gone]
    for key in [k for k, v in edits.constants.items() if v.producer() in gone]:
        del edits.constants[key]
    for seq_key in [k for k, v in edits.materialized.items() if v.producer() in gone]:
        del edits.materialized[seq_key]
    for stack_key in [k for k, v in edits.stacks.items() if v.producer() in gone]:
        del edits.stacks[stack_key]

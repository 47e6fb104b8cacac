"""The records a speculative rewrite can be undone by: the nodes a walk created, in order, and
where the records stood (a :class:`Checkpoint`); and which of the nodes created since one are
live (what :meth:`seqpasses.walk.edits.Edits.left_since` asks before keeping a trial)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import onnx_ir as ir

__all__ = ["Checkpoint", "CreatedNodes", "live_nodes"]


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

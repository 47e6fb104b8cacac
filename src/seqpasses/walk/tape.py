"""A tape: the nodes a transfer emits, recorded in order and placed by the applier.

A transfer builds its replacement with an :class:`~seqpasses.core.emit.Emitter` whose owner
is the tape of the node being visited (``ctx.emitter``): each new node is recorded with the
graph and the anchor it goes before, and nothing enters a graph until the applier
(:mod:`seqpasses.walk.apply`) places the tape, after the transfer has returned. A new node
already reads its inputs (its values exist, with their types and shapes), so the transfer
reasons about it as it would about a placed one; the model it was given is unchanged.

Names and the caches emitters share (constants made once per graph, undoable squeezes,
Splits' axes, stacked lists) are the walk's, so that what one tape built the next may reuse:
the applier places a tape right after the transfer that recorded it (a trial that fails
removes its nodes, and a rollback drops the cache entries that name them), so no later
transfer reads a cached value that is not in its graph.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import onnx_ir as ir

if TYPE_CHECKING:
    from seqpasses.walk.edits import Edits

__all__ = ["Tape"]


class Tape:
    """The nodes emitted during one visit, the values among them that are run-time checks
    (what must stay whatever reads it), and those whose shape follows ONNX Runtime rather
    than the spec (with the report's note)."""

    def __init__(self, edits: Edits) -> None:
        self.edits = edits
        self.start = len(edits.created)  # (what a trial proposed by its transfer undoes to)
        self.entries: list[tuple[ir.Graph | ir.Function, ir.Node | None, ir.Node]] = []
        self.checks: list[ir.Value] = []
        self.notes: list[str] = []  # what the helpers that built the nodes noted
        self.diverged: list[ir.Value] = []
        self.caches = edits.caches  # (what emitters share: an Emitter's Owner)

    def next_name(self, base: str, op_type: str) -> str:
        return self.edits.next_name(base, op_type)

    def place(self, graph: ir.Graph | ir.Function, anchor: ir.Node | None, node: ir.Node) -> None:
        """Record ``node``, to go into ``graph`` before ``anchor`` (at the end when ``None``)."""
        self.entries.append((graph, anchor, node))
        self.edits.created.add(node)

    def check(self, value: ir.Value) -> ir.Value:
        self.checks.append(value)
        return value

    def diverges(self, value: ir.Value, note: str) -> None:
        self.notes.append(note)
        self.diverged.append(value)

    def __len__(self) -> int:
        return len(self.entries)

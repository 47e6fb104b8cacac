"""The work one run may do, counted before it is done.

Every rewrite that copies a graph (an unrolled loop, an inlined branch, function or
SequenceMap body, a body carried as one tensor) asks :meth:`Budget.afford` whether the copies
fit, in nodes and in bytes of constants, and proposes the charge with its outcome; the applier
takes it (:meth:`Budget.charge`) as it writes the outcome. The budget is one for the whole
model, not one per loop: nested loops each within ``--max-unroll`` cannot multiply past it.
A speculative rewrite that is undone gives its charge back (the model did not grow), but not
its work: what all attempts may copy, kept or undone, is bounded too
(:data:`WORK_FACTOR` times the budget).
"""

from __future__ import annotations

from dataclasses import dataclass

import onnx_ir as ir

from seqpasses.core.graph import graph_nodes, subgraphs
from seqpasses.core.sequence import Reason
from seqpasses.options import NODE_BUDGET_FACTOR, NODE_BUDGET_FLOOR

__all__ = ["BYTE_BUDGET_FLOOR", "WORK_FACTOR", "Budget", "cost_of"]

BYTE_BUDGET_FLOOR = 64 * 2**20
"""Bytes of constants one run may add, at least (else twice the input's own)."""

WORK_FACTOR = 4
"""What every attempt together may copy, kept or undone, in budgets."""


def _tensor_bytes(tensor: ir.TensorProtocol | None) -> int:
    if tensor is None:
        return 0
    try:
        return int(tensor.nbytes)
    except Exception:
        return 0


def _constant_bytes(node: ir.Node) -> int:
    total = 0
    for attr in node.attributes.values():
        if attr.is_ref():
            continue
        if attr.type == ir.AttributeType.TENSOR:
            total += _tensor_bytes(attr.value)
        elif attr.type == ir.AttributeType.TENSORS:
            total += sum(_tensor_bytes(t) for t in attr.value)
    return total


def cost_of(graph: ir.Graph | ir.Function) -> tuple[int, int]:
    """What one copy of ``graph`` costs: its nodes at any depth, and the bytes of its constants
    (Constant nodes and initializers, nested graphs included)."""
    nodes = graph_nodes(graph)
    size = sum(_constant_bytes(node) for node in nodes)
    graphs = [graph, *(g for node in nodes for _, g in subgraphs(node))]
    for held in graphs:
        if isinstance(held, ir.Graph):
            size += sum(_tensor_bytes(v.const_value) for v in held.initializers.values())
    return len(nodes) + len(getattr(graph, "initializers", ())), size


@dataclass
class Budget:
    """Nodes and bytes of constants a run may still add (and copy, in all its attempts)."""

    nodes: int
    bytes: int
    spent_nodes: int = 0
    spent_bytes: int = 0
    worked_nodes: int = 0  # (kept or undone: never given back)

    @classmethod
    def for_model(cls, model: ir.Model, nodes: int | None) -> Budget:
        """The default budget of a model (``nodes``: the caller's, when given)."""
        have = len(graph_nodes(model.graph)) + sum(
            len(graph_nodes(f)) for f in model.functions.values()
        )
        held = sum(_tensor_bytes(v.const_value) for v in model.graph.initializers.values())
        limit = nodes if nodes is not None else max(NODE_BUDGET_FLOOR, NODE_BUDGET_FACTOR * have)
        return cls(limit, max(BYTE_BUDGET_FLOOR, 2 * held))

    def afford(self, nodes: int, size: int, what: str) -> Reason | None:
        """Why ``nodes`` and ``size`` bytes for ``what`` do not fit (None: they do). Nothing
        is taken: the charge goes with the outcome that makes them."""
        if self.spent_nodes + nodes > self.nodes:
            left = self.nodes - self.spent_nodes
            return Reason(
                "limit",
                f"{what} would add about {nodes} nodes, more than the {left} left of the "
                f"node budget ({self.nodes}; --node-budget)",
            )
        if self.spent_bytes + size > self.bytes:
            left = self.bytes - self.spent_bytes
            return Reason(
                "limit",
                f"{what} would add {size} bytes of constants, more than the {left} left of "
                f"the budget ({self.bytes} bytes)",
            )
        if self.worked_nodes + nodes > WORK_FACTOR * self.nodes:
            return Reason(
                "limit",
                f"{what} would copy about {nodes} nodes, past {WORK_FACTOR} times the node "
                f"budget ({self.nodes}; --node-budget) in all attempts, kept or undone",
            )
        return None

    def charge(self, nodes: int, size: int) -> None:
        """Take what an outcome the applier writes costs."""
        self.spent_nodes += nodes
        self.spent_bytes += size
        self.worked_nodes += nodes

    def state(self) -> tuple[int, int]:
        """What is spent (for a checkpoint)."""
        return self.spent_nodes, self.spent_bytes

    def restore(self, state: tuple[int, int]) -> None:
        """Give back what was spent since ``state`` (a rollback: the model did not grow)."""
        self.spent_nodes, self.spent_bytes = state

"""The work one run may do, counted before it is done.

Every rewrite that copies a graph (an unrolled loop, an inlined branch, function or
SequenceMap body, a body carried as one tensor) asks :meth:`Budget.spend` for what the copies
will cost, in nodes and in bytes of constants, before it makes them. The budget is one for the
whole model, not one per loop: nested loops each within ``--max-unroll`` cannot multiply past
it. What a speculative rewrite spent stays spent when it is undone (the work was done).
"""

from __future__ import annotations

from dataclasses import dataclass

import onnx_ir as ir

from seqpasses.core.graph import graph_nodes, subgraphs
from seqpasses.core.sequence import Reason
from seqpasses.options import NODE_BUDGET_FACTOR, NODE_BUDGET_FLOOR

__all__ = ["BYTE_BUDGET_FLOOR", "Budget", "cost_of"]

BYTE_BUDGET_FLOOR = 64 * 2**20
"""Bytes of constants one run may add, at least (else twice the input's own)."""


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
    """Nodes and bytes of constants a run may still add."""

    nodes: int
    bytes: int
    spent_nodes: int = 0
    spent_bytes: int = 0

    @classmethod
    def for_model(cls, model: ir.Model, nodes: int | None) -> Budget:
        """The default budget of a model (``nodes``: the caller's, when given)."""
        have = len(graph_nodes(model.graph)) + sum(
            len(graph_nodes(f)) for f in model.functions.values()
        )
        held = sum(_tensor_bytes(v.const_value) for v in model.graph.initializers.values())
        limit = nodes if nodes is not None else max(NODE_BUDGET_FLOOR, NODE_BUDGET_FACTOR * have)
        return cls(limit, max(BYTE_BUDGET_FLOOR, 2 * held))

    def spend(self, nodes: int, size: int, what: str, *, dry: bool = False) -> Reason | None:
        """Take ``nodes`` and ``size`` bytes for ``what``, or say why not (nothing taken);
        ``dry``: only ask."""
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
        if not dry:
            self.spent_nodes += nodes
            self.spent_bytes += size
        return None

"""A graph being walked: its path, opset and shape oracle."""

from __future__ import annotations

from dataclasses import dataclass, field

import onnx_ir as ir

from seqpasses.core.shapes import ShapeOracle

__all__ = ["Scope"]


@dataclass
class Scope:
    """A graph being walked: where it sits, its opset, and which outputs each value fills."""

    graph: ir.Graph | ir.Function
    path: str
    opset: int
    shapes: ShapeOracle
    output_slots: dict[ir.Value, list[int]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for index, value in enumerate(self.graph.outputs):
            self.output_slots.setdefault(value, []).append(index)

    def inner(self, graph: ir.Graph, path: str) -> Scope:
        """A graph nested in this one (a body, a branch): same opset and shape oracle."""
        return Scope(graph, path, self.opset, self.shapes)

"""The options of a walk, and a graph being walked (its path, opset, shape oracle)."""

from __future__ import annotations

from dataclasses import dataclass, field

import onnx_ir as ir

from seqpasses.core.shapes import ShapeOracle

__all__ = ["DEFAULT_MAX_UNROLL", "FoldOptions", "Scope"]

DEFAULT_MAX_UNROLL = 64
"""The largest constant trip count a Loop that reads a sequence is unrolled for."""


@dataclass(frozen=True)
class FoldOptions:
    """Choices a caller makes explicitly.

    ``freeze_inputs``: treat initializers that are also graph inputs as constants (a caller
    could override them at run time, so by default they are not).
    ``strict_spec``: follow the ONNX spec for ``SplitToSequence`` with a scalar split of 1 and
    ``keepdims=0`` (elements keep the axis) instead of ONNX Runtime and PyTorch (squeezed).
    """

    freeze_inputs: bool = False
    strict_spec: bool = False
    disabled: frozenset[str] = frozenset()  # rewrite groups that are switched off
    max_unroll: int = DEFAULT_MAX_UNROLL


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

"""A dry walk: what the walk learns of each sequence, without changing the model's nodes."""

from __future__ import annotations

from dataclasses import dataclass

import onnx_ir as ir

from seqpasses.core.dims import same_shape
from seqpasses.core.graph import clear_inputs
from seqpasses.core.sequence import StackedSequence, StaticSequence, Unknown
from seqpasses.core.shapes import ShapeOracle
from seqpasses.options import FoldOptions
from seqpasses.passes.walk import main_opset
from seqpasses.report import Report
from seqpasses.transfer.loops.appends import append_pattern
from seqpasses.transfer.loops.induction import appended_shape, scan_shapes
from seqpasses.transfer.table import DRY_TABLE
from seqpasses.walk.scope import Scope
from seqpasses.walk.walker import Walker

__all__ = ["Analysis", "analyze"]


@dataclass
class Analysis:
    """What the walk learned: each sequence value's abstract value, and integers it folded."""

    sequences: dict[ir.Value, StaticSequence | StackedSequence | Unknown]
    integers: dict[ir.Value, int]


def analyze(model: ir.Model, options: FoldOptions | None = None) -> Analysis:
    """Run the walk without changing the model's nodes, and return what it learned.

    SequenceAt/ConcatFromSequence/SequenceLength outputs get the type and shape their rewrite
    would have.
    """
    walker = Walker(DRY_TABLE, options or FoldOptions(), Report(), dry=True)
    opset = main_opset(model)
    walker.run_model(model, opset)
    _loop_shapes(walker, model, opset)
    for node in walker.edits.created:  # the descriptive nodes must not stay users of real values
        clear_inputs(node)
    return Analysis(walker.facts.values, walker.facts.ints)


def _loop_shapes(walker: Walker, model: ir.Model, opset: int) -> None:
    """What a dry walk can say of the main graph's Loops without rewriting them: the shapes
    induction proves for their carried tensors and scan outputs, and for a carried list that
    only grows by appends of one proven shape, that shape for its elements (a sequence value's
    shape is its elements')."""
    ctx = walker.ctx
    scope = Scope(model.graph, "main", opset, ShapeOracle(opset, ctx.constant))
    for node in list(model.graph):
        body = node.attributes.get("body")
        if node.op_type != "Loop" or body is None or body.type != ir.AttributeType.GRAPH:
            continue
        graph = body.as_graph()
        if len(graph.inputs) != len(node.inputs) or len(graph.outputs) < len(node.inputs) - 1:
            continue
        try:
            declared = scan_shapes(ctx, scope, node, graph)
        except Exception:
            continue  # (what induction cannot follow stays unknown)
        for value, (type_, shape) in declared.items():
            value.type, value.shape = type_, shape
        for j, initial in enumerate(node.inputs[2:]):
            out = node.outputs[j] if j < len(node.outputs) else None
            seq = ctx.facts.static(initial)
            found = append_pattern(ctx, graph, j) if seq is not None else None
            if out is None or seq is None or found is None or out.shape is not None:
                continue
            proven = appended_shape(ctx, scope, node, graph, found.tensor)
            shape = proven[1] if proven is not None else None
            if shape is not None and all(same_shape(e.shape, shape) for e in seq.elements):
                out.shape = shape

"""A dry walk: what the walk learns of each sequence, without changing the model's nodes."""

from __future__ import annotations

from dataclasses import dataclass

import onnx_ir as ir

from seqpasses.core.graph import DEFAULT_DOMAINS, GRAPH_HOLDERS, all_nodes, clear_inputs
from seqpasses.core.ops import LEFT_OPS
from seqpasses.core.sequence import StackedSequence, StaticSequence, Unknown
from seqpasses.options import FoldOptions

__all__ = ["Analysis", "analyze", "has_lists"]


@dataclass
class Analysis:
    """What the walk learned: each sequence value's abstract value, integers it folded, and
    the values whose declared type and shape it proved (a loop's lists and body: induction)."""

    sequences: dict[ir.Value, StaticSequence | StackedSequence | Unknown]
    integers: dict[ir.Value, int]
    proven: set[ir.Value]


def analyze(model: ir.Model, options: FoldOptions | None = None) -> Analysis:
    """Run the walk without changing the model's nodes, and return what it learned.

    SequenceAt/ConcatFromSequence/SequenceLength outputs get the type and shape their rewrite
    would have.
    """
    if not has_lists(model):  # (nothing the walk follows: a plain model learns nothing)
        return Analysis({}, {}, set())
    # (imported here: a plain model, what ``shapes`` mostly meets, needs none of the rules)
    from seqpasses.passes.walk import main_opset
    from seqpasses.report import Report
    from seqpasses.transfer.table import DRY_TABLE
    from seqpasses.walk.walker import Walker

    walker = Walker(DRY_TABLE, options or FoldOptions(), Report(), dry=True)
    opset = main_opset(model)
    walker.run_model(model, opset)
    for node in walker.edits.created:  # the descriptive nodes must not stay users of real values
        clear_inputs(node)
    return Analysis(walker.facts.values, walker.facts.ints, set(walker.facts.proven))


def has_lists(model: ir.Model) -> bool:
    """Whether ``model`` holds anything the walk follows: a sequence or optional op, a
    subgraph, a call of a function, or a graph input that is not a tensor."""
    if any(not isinstance(v.type, ir.TensorType | None) for v in model.graph.inputs):
        return True
    return any(
        node.op_type in LEFT_OPS
        or node.op_type in GRAPH_HOLDERS
        or node.domain not in DEFAULT_DOMAINS
        for node in all_nodes(model)
    )

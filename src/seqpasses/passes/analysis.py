"""A dry walk: what the walk learns of each sequence, without changing the model's nodes."""

from __future__ import annotations

from dataclasses import dataclass

import onnx_ir as ir

from seqpasses.core.graph import clear_inputs
from seqpasses.core.sequence import StackedSequence, StaticSequence, Unknown
from seqpasses.options import FoldOptions
from seqpasses.passes.walk import main_opset
from seqpasses.report import Report
from seqpasses.transfer.table import DRY_TABLE
from seqpasses.walk.walker import Walker

__all__ = ["Analysis", "analyze"]


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
    walker = Walker(DRY_TABLE, options or FoldOptions(), Report(), dry=True)
    opset = main_opset(model)
    walker.run_model(model, opset)
    for node in walker.edits.created:  # the descriptive nodes must not stay users of real values
        clear_inputs(node)
    return Analysis(walker.facts.values, walker.facts.ints, set(walker.facts.proven))

"""The walk as an onnx_ir pass: abstract values pushed through every graph, rewrites applied.

The facts and records the walk leaves (:attr:`WalkPass.walker`) are what the passes after it
work from: repairing declared shapes, recording what was left.
"""

from __future__ import annotations

import onnx_ir as ir

from seqpasses.core.graph import onnx_opset
from seqpasses.options import FoldOptions
from seqpasses.report import Report
from seqpasses.transfer.table import TABLE
from seqpasses.walk.walker import Walker

__all__ = ["WalkPass", "main_opset"]


def main_opset(model: ir.Model) -> int:
    opset = onnx_opset(model.opset_imports)
    if opset is None:
        raise ValueError("the model imports no ONNX opset")
    return opset


class WalkPass(ir.passes.InPlacePass):
    """Fold static sequences and lower the ops that read them, in the main graph, every
    subgraph and every model-local function (the transfers of :mod:`seqpasses.transfer`)."""

    def __init__(self, options: FoldOptions, report: Report) -> None:
        super().__init__()
        self.walker = Walker(TABLE, options, report)

    def call(self, model: ir.Model) -> ir.passes.PassResult:
        self.walker.run_model(model, main_opset(model))
        return ir.passes.PassResult(model, modified=self.walker.edits.recorder.rewrote)

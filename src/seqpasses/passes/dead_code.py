"""Dead-code removal, including what only the subgraphs of a removed node read."""

from __future__ import annotations

import onnx_ir as ir
import onnx_ir.passes.common as common_passes

from seqpasses.core.graph import all_nodes, drop_subgraphs, subgraphs

__all__ = ["RemoveDeadNodesPass"]


class RemoveDeadNodesPass(ir.passes.InPlacePass):
    """onnx_ir's dead-code removal, until what only a removed node's subgraphs read is gone
    too (their nodes still count as uses of outer values until the subgraphs are detached)."""

    def call(self, model: ir.Model) -> ir.passes.PassResult:
        modified = False
        while True:
            holders = [node for node in all_nodes(model) if subgraphs(node)]
            modified |= common_passes.RemoveUnusedNodesPass()(model).modified
            removed = [node for node in holders if node.graph is None]
            if not removed:
                return ir.passes.PassResult(model, modified=modified)
            for node in removed:
                drop_subgraphs(node)

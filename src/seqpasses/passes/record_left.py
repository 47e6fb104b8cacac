"""What stays: every sequence or optional op left in the model, with its reason and source."""

from __future__ import annotations

import onnx_ir as ir

from seqpasses.core.graph import all_nodes, is_default, label, node_name
from seqpasses.core.ops import LEFT_OPS, NOT_ON_SEQUENCES, OPTIONAL_OPS, defined_on_sequences
from seqpasses.report import ORIGIN, Report, Rewrite
from seqpasses.walk.facts import Reason
from seqpasses.walk.walker import Walker

__all__ = ["RecordLeftPass"]


class RecordLeftPass(ir.passes.InPlacePass):
    """Record each sequence and optional op left after the walk and the clean-up (changes
    nothing)."""

    def __init__(self, walker: Walker, report: Report) -> None:
        super().__init__()
        self.walker = walker
        self.report = report

    def call(self, model: ir.Model) -> ir.passes.PassResult:
        facts = self.walker.facts
        for node in all_nodes(model):
            if node.op_type not in LEFT_OPS or not is_default(node):
                continue
            reason = facts.reasons.get(node) or self._why_kept(node)
            self.report.left.append(
                Rewrite(
                    "left",
                    node_name(node),
                    node.op_type,
                    facts.paths.get(node, ""),
                    str(reason),
                    self.walker.edits.recorder.source(node),
                    reason.kind,
                    node.metadata_props.get(ORIGIN, ""),
                )
            )
        return ir.passes.PassResult(model, modified=False)

    def _why_kept(self, node: ir.Node) -> Reason:
        facts = self.walker.facts
        out = node.outputs[0]
        if node.op_type in OPTIONAL_OPS:
            if node.op_type == "Optional":
                users = sorted({use.node.op_type for use in out.uses()})
                where = "a graph output" if out.is_graph_output() else ", ".join(users)
                return Reason("needs-sequence", f"the optional is needed as one ({where})")
            source = node.inputs[0] if node.inputs else None
            why = facts.why_unknown(source) if source is not None else Reason("invalid", "missing")
            return Reason(why.kind, f"optional {why}")
        if out.is_graph_output():
            owner = facts.owner(out.graph)
            if owner is not None:
                text = (
                    f"canonical form of a sequence returned by the {owner[1]} of {label(owner[0])}"
                )
                return Reason("needs-sequence", text)
            return Reason("needs-sequence", "canonical form of a sequence that is a graph output")
        users = sorted({use.node.op_type for use in out.uses()})
        text = "canonical form of a sequence consumed by " + ", ".join(users)
        opset = facts.opset_of(node)
        strange = sorted(
            label(use.node)
            for use in out.uses()
            if is_default(use.node) and not defined_on_sequences(use.node.op_type, opset)
        )
        if strange:
            text = f"a sequence read by {', '.join(strange)}, {NOT_ON_SEQUENCES}"
        return Reason("needs-sequence", text)

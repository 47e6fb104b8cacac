"""The order of the walk: each graph in order, a node's subgraphs before the node itself.

The walker is given its table (``(op_type, kind) -> Entry``, see
:mod:`seqpasses.walk.context`) and knows no op: for each node it walks the node's subgraphs
(so a static sequence of the enclosing scope is static inside a body), looks up the transfer
for the node's op and the kind of its first input's abstract value, and runs it; a node no
transfer handles gets its sequence inputs in canonical form. Model-local functions are walked
with their own opset.
"""

from __future__ import annotations

import onnx_ir as ir

from seqpasses.core.graph import is_default, onnx_opset, subgraph_path, subgraphs
from seqpasses.core.shapes import ShapeOracle
from seqpasses.options import FoldOptions
from seqpasses.report import Report
from seqpasses.walk.apply import Applier
from seqpasses.walk.budget import Budget
from seqpasses.walk.context import Context, Entry, Scope, Table, Transfer
from seqpasses.walk.edits import Edits
from seqpasses.walk.facts import Facts, Reason
from seqpasses.walk.tape import Tape

__all__ = ["Walker"]


class Walker:
    """One walk of a model with one table; ``dry`` records what would change and changes
    nothing (and runs only the table's entries that make sense without changes)."""

    def __init__(
        self, table: Table, options: FoldOptions, report: Report, dry: bool = False
    ) -> None:
        self.table = table
        self.ops = frozenset(op for op, _ in table)  # (the ops the table has a row for)
        self.dry = dry
        self.facts = Facts()
        self.edits = Edits(self.facts, report, dry, options.max_split)
        self.ctx = Context(options, self.facts, self.edits, self)
        self.applier = Applier(self.ctx, self.edits)
        # (what the budget was charged: given back when a trial is undone)
        self.edits.journal.state(
            lambda: self.ctx.budget.state(), lambda spent: self.ctx.budget.restore(spent)
        )
        self.functions: dict[ir.OperatorIdentifier, ir.Function] = {}

    def run_model(self, model: ir.Model, opset: int) -> None:
        """Walk the main graph, then each model-local function under its own opset."""
        self.facts.main_opset = opset
        self.ctx.budget = Budget.for_model(model, self.ctx.options.node_budget)
        for value in model.graph.inputs:
            for axis, dim in enumerate(value.shape or ()):
                if isinstance(dim, ir.SymbolicDim) and dim.value:
                    self.facts.input_dims.add(dim.value)
                    if isinstance(value.type, ir.TensorType):
                        self.facts.dim_sources.setdefault(dim.value, (value, axis))
        self.functions = model.functions
        oracle = ShapeOracle(opset, self.ctx.constant, model.functions)
        self.run_graph(Scope(model.graph, "main", opset, oracle))
        for function in model.functions.values():
            own = onnx_opset(function.opset_imports, opset) or opset
            oracle = ShapeOracle(own, self.ctx.constant, model.functions)
            self.run_graph(Scope(function, f"function {function.name}", own, oracle))

    def run_graph(self, scope: Scope) -> None:
        self.facts.opsets[id(scope.graph)] = scope.opset
        if isinstance(scope.graph, ir.Function):
            self.facts.opsets[id(scope.graph.graph)] = scope.opset
            self.facts.functions[id(scope.graph.graph)] = scope.graph.name
        for node in list(scope.graph):
            self.visit(node, scope)
        self.edits.canonicalize_outputs(scope)

    def _entry(self, node: ir.Node, kind: str) -> Entry | None:
        """The row for the node's op and kind, else its row for any kind; a row switched off
        (its group disabled, or not for a dry walk) passes to the next."""
        for key in ((node.op_type, kind), (node.op_type, "*")):
            entry = self.table.get(key)
            if entry is None or entry.group in self.ctx.options.disabled:
                continue
            if self.dry and not entry.dry and entry.analyze is None:
                continue
            return entry
        return None

    def visit(self, node: ir.Node, scope: Scope) -> None:
        """Walk a node's subgraphs, then apply its transfer function (or the fallback)."""
        default = is_default(node)
        listed = default and node.op_type in self.ops  # (most nodes: no row, no lookup)
        first = self._entry(node, "*") if listed else None
        if first is not None and first.before is not None and (first.dry or not self.dry):
            said = first.before(self.ctx, node, scope)
            if said is not None:
                self.applier.apply(said, node, scope, Tape(self.edits))
        for attr, graph in subgraphs(node):
            self._run_subgraph(graph, scope, node, attr)
        if not default:
            return
        self.facts.paths[node] = scope.path
        if not listed:
            self.edits.fallback(node, scope)
            return
        source = node.inputs[0] if node.inputs else None
        entry = self._entry(node, self.facts.kind(source))
        refs = [a for a in node.attributes.values() if a.is_ref()] if node.attributes else []
        if entry is not None and refs:
            self.facts.leave(
                node,
                Reason(
                    "attribute-reference",
                    f"attribute '{refs[0].name}' is the function's attribute "
                    f"'{refs[0].ref_attr_name}', known only at each call",
                ),
            )
            entry = None
        if entry is not None and self.dry and not entry.dry:
            transfer = entry.analyze  # (what a rewrite that is not dry knows without one)
        else:
            transfer = entry.transfer if entry is not None else None
        done = self._run(transfer, node, scope) if transfer is not None else False
        if not done:
            self.edits.fallback(node, scope)

    def _run(self, transfer: Transfer, node: ir.Node, scope: Scope) -> bool:
        """Run ``transfer`` on ``node`` and apply what it proposes; whether it handled it."""
        tape = Tape(self.edits)
        outer = self.ctx.owner  # (a visit inside the walk of copies an applier makes)
        self.ctx.owner = tape
        try:
            proposal = transfer(self.ctx, node, scope)
        finally:
            self.ctx.owner = outer
        return self.applier.apply(proposal, node, scope, tape)

    def rewalk(self, graph: ir.Graph, scope: Scope, node: ir.Node, attr: str) -> None:
        """Walk a subgraph of ``node`` again (a decision it was walked under has changed)."""
        self._run_subgraph(graph, scope, node, attr)

    def _run_subgraph(self, graph: ir.Graph, scope: Scope, node: ir.Node, attr: str) -> None:
        self.facts.owners[id(graph)] = (node, attr)
        self.run_graph(scope.inner(graph, subgraph_path(scope.path, node, attr)))

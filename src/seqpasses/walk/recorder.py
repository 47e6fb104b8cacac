"""What the report learns from a walk: the rewrites applied (some counted only once dead-code
removal shows they took effect), the notes, where a copied node comes from, and what the
checker must be told (a declaration no rewrite proved, shapes that follow ONNX Runtime
rather than the spec). The applier records through it; nothing here changes a graph."""

from __future__ import annotations

import onnx_ir as ir

from seqpasses.core.graph import nested_nodes, node_name
from seqpasses.report import ORIGIN, Report, Rewrite
from seqpasses.walk.facts import Facts
from seqpasses.walk.scope import Scope
from seqpasses.walk.trial import CreatedNodes

__all__ = ["Recorder"]


class Recorder:
    """The report's side of a walk (see the module docstring)."""

    def __init__(self, report: Report, facts: Facts, created: CreatedNodes) -> None:
        self.report = report
        self.facts = facts
        self.created = created
        self.rewrote = False
        self.pending: list[tuple[Rewrite, ir.Node, bool]] = []  # computed(), written_back()
        self.origin: dict[ir.Node, ir.Node] = {}  # a copy made by inlining -> what it copies
        # a declaration was kept that no rewrite proved (see passes/repair_shapes.py)
        self.unverified = False
        # values whose shape departs from what the spec (and so an exporter's declared shapes
        # downstream) says: SplitToSequence chunks squeezed as ONNX Runtime and PyTorch do
        self.diverged: list[ir.Value] = []

    def applied(self, rule: str, node: ir.Node, detail: str = "") -> bool:
        """Record a rewrite (``rule``: a registered rewrite id); True, for the transfer."""
        self.rewrote = True
        path = self.facts.paths.get(node, "")
        origin = node.metadata_props.get(ORIGIN, "")
        self.report.rewrites.append(
            Rewrite(rule, node_name(node), node.op_type, path, detail, origin=origin)
        )
        return True

    def computed(self, rule: str, node: ir.Node, detail: str = "") -> bool:
        """Record a rewrite whose effect depends on what reads ``node``'s result: a list held
        as one tensor takes effect when its readers are rewritten (``node`` then dies). It
        counts only if ``node`` is gone after dead-code removal (:meth:`drop_unused`)."""
        path = self.facts.paths.get(node, "")
        origin = node.metadata_props.get(ORIGIN, "")
        rewrite = Rewrite(rule, node_name(node), node.op_type, path, detail, origin=origin)
        self.report.rewrites.append(rewrite)
        self.pending.append((rewrite, node, False))
        return True

    def written_back(self, made: ir.Node, rewrite: Rewrite) -> None:
        """Record ``rewrite``, made by writing ``made``: it counts only if ``made`` is still in
        the graph after dead-code removal (a later rewrite may have made it unneeded)."""
        self.rewrote = True
        self.report.rewrites.append(rewrite)
        self.pending.append((rewrite, made, True))

    def drop_unused(self) -> None:
        """Forget the recorded rewrites that did not take effect: a node whose new form nothing
        read is still there, or a node written for a reader is gone."""
        void = {id(r) for r, node, made in self.pending if (node.graph is not None) != made}
        if void:
            self.report.rewrites[:] = [r for r in self.report.rewrites if id(r) not in void]
        self.pending.clear()

    def applied_output(self, rule: str, value: ir.Value, scope: Scope, detail: str) -> None:
        """Record a rewrite of a value rather than a node (a graph output written back)."""
        self.rewrote = True
        self.report.rewrites.append(Rewrite(rule, value.name or "", "output", scope.path, detail))

    def note(self, text: str) -> None:
        self.report.notes.append(text)

    def record_copy(self, copy: ir.Node, original: ir.Node) -> None:
        """``copy`` (and its subgraphs' nodes) copies ``original``: the report says so."""
        self.origin[copy] = original
        for inner, source in zip(nested_nodes(copy), nested_nodes(original), strict=True):
            self.origin[inner] = source

    def source(self, node: ir.Node) -> str:
        """Where a node comes from, for the report (see :class:`~seqpasses.report.Rewrite`)."""
        original = self.origin.get(node)
        if original is not None:
            while original in self.origin:
                original = self.origin[original]
            return f"copy of {node_name(original) or original.op_type}"
        return "added" if node in self.created else ""

"""What the walk knows: each sequence's abstract value, the integers it folded, and why.

A sequence value is a :class:`~seqpasses.core.sequence.StaticSequence` or
:class:`~seqpasses.core.sequence.Unknown` (holding a :class:`~seqpasses.core.sequence.Reason`).
A node the walk leaves gets a reason too: data (a kind from
:data:`~seqpasses.core.sequence.REASON_KINDS`, and the text a user reads), passed on to what
reads the node's sequence, and noted when a later decision (a Loop that is not unrolled)
bears on it.
"""

from __future__ import annotations

import onnx_ir as ir

from seqpasses.core.graph import is_default, label
from seqpasses.core.ops import NOT_ON_SEQUENCES, defined_on_sequences
from seqpasses.core.sequence import (
    REASON_KINDS,
    LoopReason,
    Reason,
    StackedSequence,
    StaticSequence,
    Unknown,
)
from seqpasses.walk.trial import Undo, UndoableDict, UndoableSet

__all__ = ["REASON_KINDS", "Facts", "Reason"]


class Facts:
    """Abstract values, folded integers, optionals, reasons, and where each graph sits."""

    def __init__(self, main_opset: int = 0) -> None:
        # what a trial may change is logged while one is open, and undone with it
        self.undo = undo = Undo()
        self.values: dict[ir.Value, StaticSequence | StackedSequence | Unknown] = UndoableDict(undo)
        self.ints: dict[ir.Value, int] = UndoableDict(undo)
        # Optional(x) -> x (None: empty)
        self.optionals: dict[ir.Value, ir.Value | None] = UndoableDict(undo)
        self.reasons: dict[ir.Node, Reason] = UndoableDict(undo)
        # why a Loop's list stays
        self.loop_reasons: dict[ir.Node, tuple[LoopReason, ...]] = UndoableDict(undo)
        self.proven: set[ir.Value] = UndoableSet(undo)  # shapes proved (scan outputs made)
        self.unrolling: set[ir.Node] = UndoableSet(undo)  # Loops to unroll (walk their body so)
        self.paths: dict[ir.Node, str] = {}
        self.owners: dict[int, tuple[ir.Node, str]] = {}  # id(subgraph) -> (node, attribute)
        self.functions: dict[int, str] = {}  # id(function graph) -> the function's name
        self.opsets: dict[int, int] = {}  # id(graph) -> the ONNX opset its nodes run under
        self.input_dims: set[str] = set()  # symbolic dims named by the main graph's inputs
        self.dim_sources: dict[str, tuple[ir.Value, int]] = {}  # such a dim -> (input, axis)
        self.main_opset = main_opset

    def opset_of(self, node: ir.Node) -> int:
        return self.opsets.get(id(node.graph), self.main_opset)

    def static(self, value: ir.Value | None) -> StaticSequence | None:
        known = self.values.get(value) if value is not None else None
        return known if isinstance(known, StaticSequence) else None

    def stacked(self, value: ir.Value | None) -> StackedSequence | None:
        known = self.values.get(value) if value is not None else None
        return known if isinstance(known, StackedSequence) else None

    def kind(self, value: ir.Value | None) -> str:
        """The kind of abstract value, as the transfer table keys it."""
        known = self.values.get(value) if value is not None else None
        if isinstance(known, StaticSequence):
            return "static"
        return "stacked" if isinstance(known, StackedSequence) else "other"

    def owner(self, graph: ir.Graph | ir.Function | None) -> tuple[ir.Node, str] | None:
        """The node (and its attribute) that holds ``graph``, when it is a subgraph."""
        return self.owners.get(id(graph)) if graph is not None else None

    def in_unrolled_body(self, graph: ir.Graph | ir.Function | None) -> bool:
        """Whether ``graph`` sits (at any depth) in the body of a Loop that will be unrolled:
        what is walked there now is walked again, with constants, in the copies."""
        while graph is not None:
            owner = self.owner(graph)
            if owner is None:
                return False
            if owner[0] in self.unrolling:
                return True
            graph = owner[0].graph
        return False

    def leave(self, node: ir.Node, reason: Reason) -> bool:
        """Record why ``node`` stays; what reads its sequence learns where the root cause is."""
        self.reasons[node] = reason
        passed = reason.through(node)
        for out in node.outputs:
            if out.type is None or isinstance(out.type, ir.SequenceType) or out in self.values:
                self.values[out] = Unknown(passed)
        return False

    def note(self, node: ir.Node, text: str) -> None:
        """Add a later decision to the reason a node was left with (when it has one)."""
        if node in self.reasons:
            self.reasons[node] = self.reasons[node].noted(text)

    def why_unknown(self, value: ir.Value | None) -> Reason:
        if value is None:
            return Reason("invalid", "input is missing")
        known = self.values.get(value)
        if isinstance(known, Unknown):
            return known.reason
        if value.is_graph_input():
            return Reason(
                "unknown-sequence", f"sequence '{value.name}' is {self.input_role(value)}"
            )
        producer = value.producer()
        if producer is None:
            return Reason(
                "unknown-sequence",
                f"sequence '{value.name}' comes from an enclosing scope that is not static",
            )
        kind = "loop" if producer.op_type == "Loop" else "unknown-sequence"
        if is_default(producer) and not defined_on_sequences(
            producer.op_type, self.opset_of(producer)
        ):
            return Reason("invalid", self.produced_by(producer, f", {NOT_ON_SEQUENCES}"))
        return Reason(kind, self.produced_by(producer, ", not statically known"))

    def input_role(self, value: ir.Value) -> str:
        """What a graph input is, in words: the model's input or a body's (loop counter, ...)."""
        owner = self.owner(value.graph)
        if owner is None:
            function = self.functions.get(id(value.graph))
            return f"an input of function '{function}'" if function else "a graph input"
        node, attr = owner
        graph = value.graph
        index = next((k for k, v in enumerate(graph.inputs) if v is value), -1) if graph else -1
        if node.op_type == "Loop" and attr == "body":
            if index == 0:
                return f"the iteration number of {label(node)}"
            if index == 1:
                return f"the loop condition of {label(node)}"
            return f"carried by {label(node)} (it changes every iteration)"
        if node.op_type == "Scan" and attr == "body":
            return f"a state or scanned slice of {label(node)}"
        if node.op_type == "SequenceMap" and attr == "body":
            return f"one element at a time of {label(node)}'s input"
        return f"an input of {label(node)}'s {attr}"

    def loop_refused(self, node: ir.Node, attempt: str, text: str) -> None:
        """Record why ``attempt`` (a key of ``LOOP_ATTEMPTS``) left Loop ``node``'s list."""
        self.loop_reasons[node] = (*self.loop_reasons.get(node, ()), LoopReason(attempt, text))

    def produced_by(self, node: ir.Node, otherwise: str) -> str:
        """Why a sequence ``node`` makes is unknown: its loop's reasons, when it is a Loop."""
        why = "; ".join(map(str, self.loop_reasons.get(node, ())))
        return f"sequence comes from {label(node)}" + (f" ({why})" if why else otherwise)

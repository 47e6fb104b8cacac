"""What a transfer function sees, and the shape of the table the walker is given.

A transfer ``(ctx, node, scope) -> Outcome`` reads abstract values from ``ctx.facts``, asks
``ctx`` what a value holds before run time, builds new nodes with ``ctx.emitter`` (onto the
visit's tape: nothing enters a graph), and returns what it proposes
(:mod:`seqpasses.walk.outcomes`); the applier (:mod:`seqpasses.walk.apply`) writes it. An
outcome that is not ``handled`` (:class:`~seqpasses.walk.outcomes.Leave`) lets the walker's
fallback give the node its sequence inputs in canonical form.

``ctx.edits`` is there to be read (what was created, what replaced a value): every write is
the applier's.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Mapping, Sized
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import onnx_ir as ir

from seqpasses.core.constants import ConstantEvaluator
from seqpasses.core.emit import Emitter
from seqpasses.options import NODE_BUDGET_FLOOR, FoldOptions, Group
from seqpasses.walk.budget import BYTE_BUDGET_FLOOR, Budget
from seqpasses.walk.edits import Edits
from seqpasses.walk.facts import Facts, Reason
from seqpasses.walk.outcomes import Outcome, Proposal
from seqpasses.walk.scope import Scope
from seqpasses.walk.tape import Tape

__all__ = [
    "Context",
    "Entry",
    "FoldOptions",
    "Scope",
    "Table",
    "Transfer",
]


class Walk(Protocol):
    """The walker, as a transfer may use it: to walk nodes it inserted (inlined copies)."""

    def visit(self, node: ir.Node, scope: Scope) -> None: ...

    def rewalk(self, graph: ir.Graph, scope: Scope, node: ir.Node, attr: str) -> None: ...


class Written(Protocol):
    """What a transfer may read of the walk's edits: every write is the applier's (mypy
    refuses a transfer's call of anything else)."""

    @property
    def created(self) -> Container[ir.Node]:
        """The nodes this walk made."""

    @property
    def unloadable(self) -> Sized:
        """The write-backs ONNX Runtime cannot load, so far."""

    @property
    def check_nodes(self) -> Container[ir.Node]:
        """The nodes that stay whatever reads them (run-time checks)."""

    def current(self, value: ir.Value) -> ir.Value:
        """What ``value`` stands for now (its replacement, if a rewrite replaced it)."""

    def next_name(self, base: str, op_type: str) -> str:
        """A fresh name for a node built whole."""


class Context:
    """The surface a transfer sees: options, facts, what the edits say, constants, the
    emitters (onto the visit's tape), and the walk (for the applier)."""

    def __init__(self, options: FoldOptions, facts: Facts, edits: Edits, walk: Walk) -> None:
        self.options = options
        self.facts = facts
        self.edits: Written = edits
        self.walk = walk
        # the one freeze-inputs policy: an initializer that is also a graph input is a value
        # the caller may override, so it is read only with --freeze-inputs
        self.evaluator = ConstantEvaluator(facts.opset_of, self._readable)
        self.budget = Budget(options.node_budget or NODE_BUDGET_FLOOR, BYTE_BUDGET_FLOOR)
        # what new nodes are recorded onto: the tape of the visit or step being run (set by
        # the walker and the applier); outside a visit, the edits themselves (placed at once)
        self.owner: Tape | Edits = edits

    def emitter(self, scope: Scope, anchor: ir.Node | None) -> Emitter:
        """An emitter of new nodes for ``scope``'s graph, before ``anchor`` (at the end when
        ``None``), onto the visit's tape."""
        return Emitter(scope.graph, anchor, scope.opset, self.owner, scope.shapes.seen)

    def body_emitter(self, graph: ir.Graph, anchor: ir.Node | None, opset: int) -> Emitter:
        """An emitter into a body being built (a clone, or one its node gives up)."""
        return Emitter(graph, anchor, opset, self.owner)

    def too_many_pieces(self, count: int, what: str) -> Reason | None:
        """Why a Split of ``count`` pieces is not written (None when it may be)."""
        if count <= self.options.max_split:
            return None
        return Reason(
            "limit",
            f"{what} would need a Split of {count} pieces, more than --max-split "
            f"{self.options.max_split}",
        )

    def _readable(self, value: ir.Value) -> bool:
        return self.options.freeze_inputs or not value.is_graph_input()

    def constant(self, value: ir.Value) -> np.ndarray | None:
        """The array ``value`` holds before run time (a constant, or small shape arithmetic)."""
        return self.evaluator.value(value)

    def const_array(self, value: ir.Value) -> np.ndarray | None:
        """An int32/int64 array ``value`` holds before run time."""
        array = self.constant(value)
        return array if array is not None and array.dtype in (np.int32, np.int64) else None

    def const_int(
        self, value: ir.Value, role: str = "position"
    ) -> tuple[int | None, Reason | None]:
        """The integer a scalar input holds, or ``None`` and why not (``role`` names it in the
        reason: a position, a trip count)."""
        if value in self.facts.ints:
            return self.facts.ints[value], None
        subject = f"{role} '{value.name}'"
        if value.is_graph_input() and not self.options.freeze_inputs:
            if value.const_value is not None:
                return None, Reason(
                    "run-time-value",
                    f"{subject} is an initializer that is also a graph input "
                    "(the caller may override it; --freeze-inputs treats it as constant)",
                )
            role_text = self.facts.input_role(value)
            return None, Reason(
                "run-time-value", f"{subject} is {role_text}, known only at run time"
            )
        array = self.constant(value)
        if array is None:
            return None, Reason("run-time-value", f"{subject} is known only at run time")
        if array.dtype not in (np.int32, np.int64):
            return None, Reason("bad-value", f"{subject} has type {array.dtype}, not int32/int64")
        if array.size != 1:
            return None, Reason("bad-value", f"{subject} has {array.size} elements, not one")
        return int(array.reshape(-1)[0]), None

    def is_true(self, value: ir.Value) -> bool:
        """Whether ``value`` is provably a true boolean before run time."""
        array = self.constant(value)
        return array is not None and array.size == 1 and bool(array.reshape(-1)[0])


Transfer = Callable[[Context, ir.Node, Scope], Proposal]
Hook = Callable[[Context, ir.Node, Scope], Outcome | None]


@dataclass(frozen=True)
class Entry:
    """One row of the transfer table: the transfer, the rewrite group that switches it off,
    and a hook run before the node's subgraphs are walked (a Loop decides there whether it
    will be unrolled, which the walk of its body needs to know)."""

    transfer: Transfer
    group: Group = Group.SEQUENCE_OPS
    before: Hook | None = None
    dry: bool = True  # also run in a dry walk (analysis): False for whole-graph rewrites
    # what a dry walk runs instead of a transfer that is not dry: it may give the node's
    # outputs (and their readers') types and shapes, and changes nothing else
    analyze: Transfer | None = None


Table = Mapping[tuple[str, str], Entry]
"""``(op_type, kind)`` -> entry; kind is the abstract value of the node's first input:
``"static"`` (a static sequence), ``"other"``, or ``"*"`` (any, the fallback key)."""

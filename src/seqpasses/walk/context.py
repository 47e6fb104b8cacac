"""What a transfer function sees, and the shape of the table the walker is given.

A transfer ``(ctx, node, scope) -> bool`` reads abstract values from ``ctx.facts``, changes
the graph only through ``ctx.edits``, asks ``ctx`` what a value holds before run time, and
returns True when it handled the node (False: the walker's fallback gives the node its
sequence inputs in canonical form).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import onnx_ir as ir

from seqpasses.core.constants import ConstantEvaluator
from seqpasses.options import NODE_BUDGET_FLOOR, FoldOptions, Group
from seqpasses.walk.budget import BYTE_BUDGET_FLOOR, Budget
from seqpasses.walk.edits import Edits
from seqpasses.walk.facts import Facts, Reason
from seqpasses.walk.scope import Scope

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


class Context:
    """The surface a transfer sees: options, facts, edits, constants, and the walk."""

    def __init__(self, options: FoldOptions, facts: Facts, edits: Edits, walk: Walk) -> None:
        self.options = options
        self.facts = facts
        self.edits = edits
        self.walk = walk
        # the one freeze-inputs policy: an initializer that is also a graph input is a value
        # the caller may override, so it is read only with --freeze-inputs
        self.evaluator = ConstantEvaluator(facts.opset_of, self._readable)
        self.budget = Budget(options.node_budget or NODE_BUDGET_FLOOR, BYTE_BUDGET_FLOOR)

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


Transfer = Callable[[Context, ir.Node, Scope], bool]
Hook = Callable[[Context, ir.Node, Scope], None]


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

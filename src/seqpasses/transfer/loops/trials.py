"""A Loop's body remade on a copy: the copy walked with some carried inputs in a new form,
kept only when the walk leaves it in the form wanted (else dropped, and nothing changed). The
shared steps of :mod:`.carry` (a list as one tensor) and :mod:`.elements` (a list as its
elements)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import onnx_ir as ir

from seqpasses.core.sequence import Reason
from seqpasses.walk.budget import cost_of
from seqpasses.walk.outcomes import (
    EMPTY,
    AbstractValue,
    BodyForm,
    Build,
    Declared,
    Made,
    Outcome,
    Proposal,
    Trial,
)

__all__ = ["walked_copy", "with_outputs"]


def walked_copy(
    node: ir.Node,
    body: ir.Graph,
    copy: ir.Graph,
    inputs: Sequence[ir.Value],
    values: Mapping[ir.Value, AbstractValue],
    then: Callable[[Made], Proposal | Reason],
    otherwise: Callable[[Reason], Proposal],
    declare: Mapping[ir.Value, Declared] = EMPTY,
) -> Trial:
    """A trial: ``copy`` (a clone of ``body``, the body of ``node``) given ``inputs`` and
    walked knowing ``values``, then ``then``; undone and ``otherwise`` where a step fails."""
    build = Build(
        clones=[(copy, body)],
        bodies=[(copy, BodyForm(inputs=inputs))],
        walk=[(copy, node, "body")],
    )
    attempt = Outcome(declare=declare, values=values, build=build, then=then, charge=cost_of(body))
    return Trial(attempt=attempt, otherwise=otherwise, drop=[copy])


def with_outputs(
    copy: ir.Graph, outputs: Sequence[ir.Value], then: Callable[[Made], Proposal | Reason]
) -> Outcome:
    """The walked ``copy`` given ``outputs``, its unread nodes swept, then ``then``."""
    return Outcome(build=Build(bodies=[(copy, BodyForm(outputs=outputs))], sweep=[copy]), then=then)

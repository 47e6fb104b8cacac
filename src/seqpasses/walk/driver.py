"""A driver: an ordered list of patterns tried on one node, each on the node as the patterns
before it left it.

A node with several ways of being rewritten (a ``Loop``: scan outputs, unrolling, lifted
reads, running concatenations, carried lists) is given to its patterns in order. A pattern
is a function of the node and returns None (not its case: the next one is tried), or a
proposal. A proposal that ends in :class:`~seqpasses.walk.outcomes.Next` (at once, after the
steps of a rebuild, or as a failed trial's ``otherwise``) hands the node as it is then (the
rebuilt one, or the same) to the patterns after it; one that ends otherwise ends the drive.
The applier writes each proposal as it writes any other, so a pattern is a transfer like the
others: it proposes, and names no pattern that comes after it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Generic, TypeVar

import onnx_ir as ir

from seqpasses.core.sequence import Reason
from seqpasses.walk.context import Context
from seqpasses.walk.outcomes import Leave, Made, Next, Outcome, Proposal, Trial
from seqpasses.walk.scope import Scope

__all__ = ["Drive", "Pattern", "drive", "onward"]

S = TypeVar("S")


@dataclass(frozen=True)
class Drive(Generic[S]):
    """Where a drive is: what its entry worked out once (``given``), the names of the
    patterns that changed the node so far, and how ``given`` is worked out for another node
    (``refresh``: a pattern that rebuilds the node hands it to every pattern again, from
    the first, as what it now is; without it, to the patterns after its own)."""

    given: S
    changed: frozenset[str] = frozenset()
    refresh: Callable[[ir.Node], S] | None = None


@dataclass(frozen=True)
class Pattern(Generic[S]):
    """One way of rewriting a node: ``run`` proposes, or gives None (not its case)."""

    name: str
    run: Callable[[Context, ir.Node, Scope, Drive[S]], Proposal | None]


def drive(
    ctx: Context,
    node: ir.Node,
    scope: Scope,
    patterns: Sequence[Pattern[S]],
    state: Drive[S],
    start: int = 0,
) -> Proposal:
    """The proposal of the first of ``patterns`` (from ``start``) whose case ``node`` is, with
    every :class:`Next` it ends in leading to the patterns after it (a rebuilt node, with
    ``state.refresh``: to all of them again); none: :class:`Leave`."""
    for index in range(start, len(patterns)):
        pattern = patterns[index]
        proposal = pattern.run(ctx, node, scope, state)
        if proposal is None:
            continue

        def go(
            passed: Next, index: int = index, name: str = pattern.name, node: ir.Node = node
        ) -> Proposal:
            learned = replace(state, changed=state.changed | {name}) if passed.changed else state
            if passed.changed and passed.node is not node and state.refresh is not None:
                # (a rebuilt node: what the patterns before may now do with it, they do)
                fresh = replace(learned, given=state.refresh(passed.node))
                return drive(ctx, passed.node, scope, patterns, fresh)
            return drive(ctx, passed.node, scope, patterns, learned, index + 1)

        if isinstance(proposal, Next) and _bare(proposal):  # (nothing to write first)
            return go(proposal)
        return _onward(proposal, go)
    return Leave()


def onward(made: Made) -> Next:
    """The node a rebuild made (``made.new``), handed to the patterns after the one that
    rebuilt it (with :attr:`Drive.refresh`: to them all again)."""
    assert made.new is not None
    return Next(node=made.new, changed=True)


def _bare(passed: Next) -> bool:
    """Whether ``passed`` says nothing but which node the next patterns get."""
    return passed == Next(node=passed.node, changed=passed.changed)


def _onward(proposal: Proposal, go: Callable[[Next], Proposal]) -> Proposal:
    """``proposal`` with each :class:`Next` it ends in followed by ``go(that Next)``."""
    if isinstance(proposal, Trial):
        otherwise = proposal.otherwise
        return replace(
            proposal,
            attempt=_then_onward(proposal.attempt, go),
            otherwise=lambda reason: _onward(otherwise(reason), go),
        )
    return _then_onward(proposal, go)


def _then_onward(outcome: Outcome, go: Callable[[Next], Proposal]) -> Outcome:
    if isinstance(outcome, Next):
        assert outcome.then is None, "a Next names no step of its own"
        passed = outcome
        return replace(outcome, then=lambda _: go(passed))
    then = outcome.then
    if then is None:
        return outcome

    def following(made: Made) -> Proposal | Reason:
        found = then(made)
        return found if isinstance(found, Reason) else _onward(found, go)

    return replace(outcome, then=following)

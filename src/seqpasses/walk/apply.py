"""The applier: the one place where what a transfer proposes is written.

A transfer returns a :data:`~seqpasses.walk.outcomes.Proposal` and has changed nothing: the
nodes it built are on the visit's :class:`~seqpasses.walk.tape.Tape`. :class:`Applier` places
the tape, then writes the outcome, always in this order: clones, the tape's nodes (and its
run-time checks), declared types, the forms of bodies being built, nodes built whole,
inlined copies (walked at once), a rebuilt control-flow node, what values hold, moved uses,
nodes taken out or retired, attributes, subgraphs walked again, what the report learns,
bodies swept or emptied, and last the records. Then the outcome's ``then`` step, if any, is
asked for what comes next, with what was made (a rebuilt node, the copies' outputs).

A :class:`~seqpasses.walk.outcomes.Trial` is written under a checkpoint: when a step of it
gives a reason instead of an outcome, everything it made is removed and what was recorded of
it forgotten (``walk/trial.py``), and its ``otherwise`` is written in its place.

In a dry walk (analysis) the same outcomes are written by the same code, and
:class:`~seqpasses.walk.edits.Edits` records instead of writing: the tape is not placed, uses
do not move (the old value learns the new one's type instead), no attribute changes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, TypeVar

import onnx_ir as ir

from seqpasses.core.sequence import Reason, StackedSequence, StaticSequence
from seqpasses.walk.edits import Edits
from seqpasses.walk.inline import inline_graph
from seqpasses.walk.outcomes import (
    Fold,
    Inline,
    Leave,
    Listed,
    Made,
    Outcome,
    Proposal,
    Restructure,
    Trial,
)
from seqpasses.walk.scope import Scope
from seqpasses.walk.tape import Tape
from seqpasses.walk.trial import Checkpoint

if TYPE_CHECKING:
    from seqpasses.walk.context import Context

__all__ = ["Applier", "place"]

T = TypeVar("T")


class _Failed(Exception):
    """A step of a trial gave a reason instead of an outcome."""

    def __init__(self, reason: Reason) -> None:
        super().__init__(str(reason))
        self.reason = reason


def place(edits: Edits, tape: Tape) -> None:
    """Put the tape's nodes into their graphs, in the order they were recorded (in a dry walk,
    nowhere), and keep its checks and notes."""
    if tape.entries:
        if not edits.dry:
            for graph, anchor, node in tape.entries:
                if anchor is None:
                    graph.append(node)
                else:
                    graph.insert_before(anchor, node)
        tape.entries.clear()
    if tape.checks:
        for value in tape.checks:
            edits.check(value)
        tape.checks.clear()
    if tape.diverged:
        for text in tape.notes:
            edits.recorder.note(text)
        edits.recorder.diverged.extend(tape.diverged)
        tape.notes.clear()
        tape.diverged.clear()


_NOTHING = Made()  # (what a plain write made: nothing a next step asks about)


def _reads_tape(outcome: Outcome, tape: Tape) -> bool:
    """Whether ``outcome`` names a value the tape's nodes make (else they can go unplaced)."""
    made = {out for _, _, node in tape.entries for out in node.outputs}
    named: list[ir.Value] = [*outcome.declare, *outcome.values]
    for known in outcome.values.values():
        named.extend(getattr(known, "elements", ()))
        tensor = getattr(known, "tensor", None)
        if tensor is not None:
            named.append(tensor)
    for use in outcome.uses:
        named.extend(use[:2])
    return any(value in made for value in named)


def _plain(outcome: Outcome) -> bool:
    """Whether ``outcome`` only knows lists, declares, replaces, records or leaves: nothing
    to build or settle, and no next step."""
    learned = outcome.learned
    return (
        outcome.then is None
        and outcome.build is None
        and outcome.said is None
        and outcome.charge is None
        and (learned is None or not learned.settles)
        and not isinstance(outcome, Restructure)
        and not (isinstance(outcome, Fold) and outcome.canonical_inputs)
    )


class Applier:
    """Writes proposals for one walk, through its ``edits``; ``ctx`` gives the facts and the
    walker (to walk copies and bodies)."""

    def __init__(self, ctx: Context, edits: Edits) -> None:
        self.ctx = ctx
        self.edits = edits
        self.facts = ctx.facts

    def apply(self, proposal: Proposal, node: ir.Node, scope: Scope, tape: Tape) -> bool:
        """Write ``proposal``, made for ``node`` in ``scope`` by a transfer whose nodes are on
        ``tape``; whether the node was handled (else the walker's fallback gives it its
        sequence inputs in canonical form)."""
        if isinstance(proposal, Trial) or proposal.then is not None:
            return self._proposal(proposal, node, scope, tape, None)
        self._write(proposal, node, scope, tape, None)  # (most visits: no step follows)
        return proposal.handled

    def _proposal(
        self,
        proposal: Proposal,
        node: ir.Node,
        scope: Scope,
        tape: Tape,
        trial: Checkpoint | None,
    ) -> bool:
        """Write ``proposal`` (``trial``: inside a trial, where it began)."""
        if not isinstance(proposal, Trial):
            return self._chain(proposal, node, scope, tape, trial)
        edits = self.edits
        mark = edits.checkpoint(tape.start)
        undo = self.facts.undo
        undo.depth += 1  # (what the walk learns from here on can be undone)
        try:
            handled = self._chain(proposal.attempt, node, scope, tape, mark)
        except _Failed as failed:
            reason = failed.reason
            for graph in proposal.drop:
                edits.discard(graph)
            edits.rollback(mark)
            undo.close()
        except BaseException:
            undo.close()
            raise
        else:
            undo.close()
            return handled
        fresh = Tape(edits)
        following = self._step(proposal.otherwise, reason, fresh)
        assert not isinstance(following, Reason)
        return self._proposal(following, node, scope, fresh, trial)

    def _step(
        self, make: Callable[[T], Proposal | Reason], given: T, tape: Tape
    ) -> Proposal | Reason:
        """Ask a transfer's step for what comes next (``make(given)``), its emitters recording
        onto ``tape``."""
        ctx = self.ctx
        outer = ctx.owner
        ctx.owner = tape
        try:
            return make(given)
        finally:
            ctx.owner = outer

    def _chain(
        self,
        outcome: Outcome,
        node: ir.Node,
        scope: Scope,
        tape: Tape,
        trial: Checkpoint | None,
    ) -> bool:
        """Write ``outcome`` and the steps that follow it; whether the last one handled the
        node. Inside a trial (begun at ``trial``) a step may give a reason: the trial fails."""
        while True:
            made = self._write(outcome, node, scope, tape, trial)
            then = outcome.then
            if then is None:
                return outcome.handled
            tape = Tape(self.edits)
            following = self._step(then, made, tape)
            if isinstance(following, Reason):
                assert trial is not None, f"a step outside a trial failed: {following}"
                raise _Failed(following)
            if isinstance(following, Trial):
                return self._proposal(following, node, scope, tape, trial)
            outcome = following

    def _write(
        self,
        outcome: Outcome,
        node: ir.Node,
        scope: Scope,
        tape: Tape,
        trial: Checkpoint | None,
    ) -> Made:
        """Write ``outcome`` (after its transfer's ``tape``); what was made, for its next
        step. What most visits propose (a list known, a value replaced) asks for nothing
        else: the building and the settling only where the outcome has some."""
        edits, facts = self.edits, self.facts
        plain = _plain(outcome)
        made = _NOTHING if plain else Made()
        build, learned = outcome.build, outcome.learned
        if not plain:
            if trial is not None:
                made.left = lambda roots: edits.left_since(trial, roots)
            for copy, graph in build.clones if build is not None else ():
                edits.record_clone(copy, graph)  # (before the tape adds to a copy)
        if isinstance(outcome, Leave) and tape.entries and not _reads_tape(outcome, tape):
            # (what the transfer built to try, and does not use: dropped, not placed)
            edits.rollback(edits.checkpoint(tape.start))
            tape.entries.clear()
            tape.checks.clear()
        place(edits, tape)
        for value, (type_, shape) in scope.shapes.settle().items():  # (what the oracle found)
            value.type, value.shape = type_, shape
        for value, (type_, shape) in outcome.declare.items():
            value.type, value.shape = type_, shape
        if not plain:
            if outcome.charge is not None:
                self.ctx.budget.charge(*outcome.charge)
            self._build(outcome, node, scope, made)
        if outcome.values:
            facts.values.update(outcome.values)
        if learned is not None:
            if learned.optionals:
                facts.optionals.update(learned.optionals)
            for value, seq in learned.canonical.items():
                edits.known_canonical(value, seq, scope)
        if not plain:
            if isinstance(outcome, Fold) and outcome.canonical_inputs:
                edits.canonical_inputs(node, scope, speculative=True)
            if learned is not None and learned.unrolling is True:
                facts.unrolling.add(node)
            elif learned is not None and learned.unrolling is False:
                facts.unrolling.discard(node)
        for use in outcome.uses:
            edits.replace(use[0], use[1], use[2] if len(use) == 3 else scope)
        if not plain:
            self._settle(outcome, node, scope)
        for record in outcome.records:
            if record.computed:
                edits.recorder.computed(record.rule, node, record.detail)
            else:
                edits.recorder.applied(record.rule, node, record.detail)
        if isinstance(outcome, Leave) and outcome.reason is not None:
            facts.leave(node, outcome.reason)
        return made

    def _build(self, outcome: Outcome, node: ir.Node, scope: Scope, made: Made) -> None:
        """Bodies given their forms, nodes built whole put in, copies inlined (their outputs
        and a rebuilt node go to ``made``), values forgotten."""
        edits, build = self.edits, outcome.build
        if build is not None:
            for graph, form in build.bodies:
                edits.shape_body(graph, form)
            for built, before in build.add:
                edits.add_node(built, before)
            if build.inline is not None:
                made.copies = self._inline(build.inline, node, scope)
        if isinstance(outcome, Restructure):
            made.new = self._restructure(outcome, scope)
        if outcome.learned is not None:
            for value in outcome.learned.forget:
                self.facts.values.pop(value, None)

    def _settle(self, outcome: Outcome, node: ir.Node, scope: Scope) -> None:
        """Nodes taken out or retired, attributes set, bodies walked again, what the report
        and the facts learn, bodies swept or emptied."""
        edits, facts = self.edits, self.facts
        build, learned, said = outcome.build, outcome.learned, outcome.said
        if build is not None:
            if build.take_out:
                edits.take_out(build.take_out)
            for retired in build.retire:
                edits.retire(retired)
            for target, attr in build.attributes:
                edits.set_attribute(target, attr)
            for graph, owner, slot in build.walk:
                self.ctx.walk.rewalk(graph, scope, owner, slot)
        if learned is not None:
            edits.recorder.diverged.extend(learned.diverged)
            facts.proven.update(learned.proven)
        if said is not None:
            for text in said.notes:
                edits.recorder.note(text)
            for loop, attempt, text in said.refused:
                facts.loop_refused(loop, attempt, text)
            for left, text in said.noted:
                facts.note(left, text)
        if build is not None:
            for graph in build.sweep:
                edits.sweep(graph)
            for graph in build.discard:
                edits.discard(graph)

    def _inline(self, inline: Inline, node: ir.Node, scope: Scope) -> list[list[ir.Value]]:
        copies: list[list[ir.Value]] = []
        previous: Sequence[ir.Value] = []
        for i in range(inline.count):
            bound = inline.bind(i, previous)
            _, previous = inline_graph(self.ctx.walk, self.edits, scope, node, inline.body, bound)
            copies.append(list(previous))
        return copies

    def _restructure(self, outcome: Restructure, scope: Scope) -> ir.Node:
        edits = self.edits
        new = edits.remake(outcome.plan, scope)
        for old, held in outcome.held.items():
            if isinstance(held, Listed):
                elements = [new.outputs[k] for k in held.indices]
                for element, (type_, shape) in zip(elements, held.types, strict=True):
                    element.type, element.shape = type_, shape
                edits.facts.values[old] = StaticSequence(tuple(elements), held.dtype)
                continue
            out = new.outputs[held.index]
            out.type = ir.TensorType(held.dtype) if held.dtype is not None else None
            out.shape = ir.Shape([held.length, *held.element])
            edits.facts.values[old] = StackedSequence(
                out, held.length, held.element, held.dtype, held.least, held.checked
            )
        return new

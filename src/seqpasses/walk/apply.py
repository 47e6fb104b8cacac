"""The applier: the one place where what a transfer proposes is written.

A transfer returns an :class:`~seqpasses.walk.outcomes.Outcome` and has changed nothing: the
nodes it built are on the visit's :class:`~seqpasses.walk.tape.Tape`. :func:`apply` places the
tape, then writes the outcome, always in this order: the tape's nodes (and its run-time
checks), a rebuilt control-flow node, what values hold, declared types, moved uses, retired
subgraphs, attributes, and the records. In a dry walk (analysis) the same outcome is applied
by the same code, and :class:`~seqpasses.walk.edits.Edits` records instead of writing: the
tape is not placed, uses do not move (the old value learns the new one's type instead), no
attribute changes.
"""

from __future__ import annotations

import onnx_ir as ir

from seqpasses.core.sequence import StackedSequence, StaticSequence
from seqpasses.walk.edits import Edits
from seqpasses.walk.outcomes import Fold, Leave, Listed, Outcome, Replace, Restructure
from seqpasses.walk.scope import Scope
from seqpasses.walk.tape import Tape

__all__ = ["apply", "place"]


def place(edits: Edits, tape: Tape) -> None:
    """Put the tape's nodes into their graphs, in the order they were recorded (in a dry walk,
    nowhere), and keep its checks."""
    if not edits.dry:
        for graph, anchor, node in tape.entries:
            if anchor is None:
                graph.append(node)
            else:
                graph.insert_before(anchor, node)
    for value in tape.checks:
        edits.check(value)
    for text in tape.notes:
        edits.note(text)
    edits.diverged.extend(tape.diverged)
    tape.entries.clear()
    tape.checks.clear()
    tape.notes.clear()
    tape.diverged.clear()


def apply(edits: Edits, outcome: Outcome, node: ir.Node, scope: Scope, tape: Tape) -> bool:
    """Write ``outcome``, proposed for ``node`` in ``scope``; whether the node was handled
    (else the walker's fallback gives it its sequence inputs in canonical form)."""
    facts = edits.facts
    place(edits, tape)
    if isinstance(outcome, Restructure):
        _restructure(edits, outcome, scope)
    for value in outcome.forget:
        facts.values.pop(value, None)
    facts.values.update(outcome.values)
    facts.optionals.update(outcome.optionals)
    for value, (type_, shape) in outcome.declare.items():
        value.type, value.shape = type_, shape
    for value, seq in outcome.canonical.items():
        edits.known_canonical(value, seq, scope)
    if isinstance(outcome, Fold) and outcome.canonical_inputs:
        edits.canonical_inputs(node, scope, speculative=True)
    if isinstance(outcome, Replace):
        for old, new in outcome.uses:
            edits.replace(old, new, scope)
        for retired in outcome.retire:
            edits.retire(retired)
    for target, attr in outcome.attributes:
        edits.set_attribute(target, attr)
    edits.diverged.extend(outcome.diverged)
    facts.proven.update(outcome.proven)
    for text in outcome.notes:
        edits.note(text)
    for record in outcome.records:
        if record.computed:
            edits.computed(record.rule, node, record.detail)
        else:
            edits.applied(record.rule, node, record.detail)
    if isinstance(outcome, Leave) and outcome.reason is not None:
        facts.leave(node, outcome.reason)
    return outcome.handled


def _restructure(edits: Edits, outcome: Restructure, scope: Scope) -> None:
    new = edits.apply(outcome.plan, scope)
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

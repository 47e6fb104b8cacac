"""A Loop that carries a list of one length at every iteration carries its elements.

A queue (``l.pop(0)`` then ``l.append(t)``), a list of RNN states rebuilt each step
(``SequenceConstruct(h1, h2)`` read back with ``SequenceAt``): the list starts with ``L``
known elements, the body reads and edits it only at positions known before run time, and
returns ``L`` elements again. Such a list is ``L`` loop-carried tensors: the body's sequence
ops on it fold away (a pop and an append only pass tensors on: nothing is copied), and what
reads the final list reads them. Carried as one ``[n, *E]`` tensor (:mod:`.carry`) each step
would copy the list.

Tried on a copy of the body walked with the list as its elements (each declared as the
element it starts as); kept when every sequence op on the list went, the body returns ``L``
elements, and induction proves each keeps the type and shape it starts with (else the copy is
dropped and nothing changed).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypeVar

import onnx_ir as ir

from seqpasses.core.graph import is_default
from seqpasses.core.ops import SEQUENCE_OPS
from seqpasses.core.sequence import Reason, StaticSequence
from seqpasses.transfer.loops.carry import versions
from seqpasses.transfer.loops.induction import induction, proven_in, same, stable
from seqpasses.transfer.loops.trials import walked_copy, with_outputs
from seqpasses.walk.budget import cost_of
from seqpasses.walk.context import Context, Scope
from seqpasses.walk.driver import onward
from seqpasses.walk.outcomes import (
    AbstractValue,
    BodyForm,
    Build,
    Listed,
    Made,
    Next,
    Proposal,
    Rebuild,
    Record,
    Restructure,
    Said,
    Trial,
)

__all__ = ["carry_elements"]

T = TypeVar("T")
_POSITIONED = {"SequenceAt": 1, "SequenceErase": 1, "SequenceInsert": 2}


def _known_positions(ctx: Context, start: ir.Value) -> tuple[bool, bool]:
    """Whether every op on ``start`` (a list the body carries) and the lists the body makes of
    it (:func:`~.carry.versions`) reads or edits it at a position known before run time; and
    whether a sequence op other than an Identity reads it (else carrying its elements gains
    nothing)."""
    read = False
    for version in versions(ctx, start):
        for use in version.uses():
            reader = use.node
            if not is_default(reader):
                return False, read
            read = read or (reader.op_type in SEQUENCE_OPS and reader.op_type != "Identity")
            slot = _POSITIONED.get(reader.op_type)
            if use.idx == 0 and slot is not None and len(reader.inputs) > slot:
                position = reader.inputs[slot]
                if position is not None and ctx.const_int(position)[0] is None:
                    return False, read
    return True, read


def _lists(ctx: Context, scope: Scope, node: ir.Node, body: ir.Graph) -> dict[int, StaticSequence]:
    """The lists the loop carries that start as known elements of known, stable types and
    shapes, read and edited in the body only at known positions, by carried index."""
    found: dict[int, StaticSequence] = {}
    for j in range(len(node.inputs) - 2):
        initial = ctx.facts.static(node.inputs[2 + j])
        if initial is None or not 0 < len(initial) <= ctx.options.max_split:
            continue
        if not isinstance(body.inputs[2 + j].type, ir.SequenceType | None):
            continue
        typed = [scope.shapes.known(e) for e in initial.elements]
        if not all(
            isinstance(type_, ir.TensorType) and stable(ctx, shape) for type_, shape in typed
        ):
            continue
        known, read = _known_positions(ctx, body.inputs[2 + j])
        # (a list the body only passes on that is a graph output would be written back: one
        # sequence op more, none fewer)
        if known and (read or not node.outputs[j].is_graph_output()):
            found[j] = initial
    return found


def _expanded(values: Sequence[T], lists: Mapping[int, Sequence[T]]) -> list[T]:
    """``values`` (carried, by index) with each list's slot ``j`` replaced by its elements."""
    out: list[T] = []
    for j, value in enumerate(values):
        out.extend(lists.get(j, [value]))
    return out


def carry_elements(ctx: Context, node: ir.Node, scope: Scope, body: ir.Graph) -> Proposal | None:
    """Carry each list of one length the loop carries as its elements (see the module
    docstring): a trial on a copy of the body; else the loop goes on to the next patterns
    (:class:`Next`). None: no list is of one length."""
    lists = _lists(ctx, scope, node, body)
    if not lists:
        return None

    def otherwise(reason: Reason) -> Proposal:
        return Next(node=node, said=Said(refused=[(node, "elements", str(reason))]))

    over = ctx.budget.afford(*cost_of(body), "carrying a list's elements")
    if over is not None:
        return Trial.failed(Reason("unknown-sequence", str(over)), otherwise)
    copy = body.clone(allow_outer_scope_values=True)
    values: dict[ir.Value, AbstractValue] = {}
    each: dict[int, tuple[ir.Value, ...]] = {}  # each list's new body inputs
    for j, initial in lists.items():
        old = copy.inputs[2 + j]
        listed = StaticSequence(
            [
                ir.Value(name=f"{old.name or 'list'}_{i}", type=type_, shape=shape)
                for i, (type_, shape) in enumerate(map(scope.shapes.known, initial.elements))
            ],
            initial.dtype,
        )
        values[old] = listed
        each[j] = listed.elements
    olds = [copy.inputs[2 + j] for j in lists]
    carried = _expanded(list(copy.inputs[2:]), each)
    copy_inputs = [copy.inputs[0], copy.inputs[1], *carried]

    def walked(made: Made) -> Proposal | Reason:
        outs: dict[int, list[ir.Value]] = {}
        for j, initial in lists.items():
            final = ctx.facts.static(copy.outputs[1 + j])
            if final is None or len(final) != len(initial):
                text = "the body does not return the list as as many known elements"
                return Reason("unknown-sequence", text)
            outs[j] = list(final.elements)
        copy_outputs = [copy.outputs[0], *_expanded(list(copy.outputs[1:]), outs)]
        return with_outputs(
            copy, copy_outputs, lambda _: _kept(ctx, node, scope, (body, copy), lists, olds)
        )

    return walked_copy(node, body, copy, copy_inputs, values, walked, otherwise)


def _kept(
    ctx: Context,
    node: ir.Node,
    scope: Scope,
    graphs: tuple[ir.Graph, ir.Graph],
    lists: dict[int, StaticSequence],
    olds: list[ir.Value],
) -> Proposal | Reason:
    """The walked copy (``graphs``: the body and its copy, its lists now elements) as the
    loop's body, when induction proves every element keeps its type and shape; else why not
    (the trial is undone)."""
    body, copy = graphs
    if any(old.uses() for old in olds):  # (``olds``: the copy's lists, now elements)
        return Reason("unknown-sequence", "a sequence op on the list stayed in the body")
    initials = _expanded(node.inputs[2:], {j: s.elements for j, s in lists.items()})
    known, proven = induction(ctx, scope, node, copy, initials)
    starts = {j: [scope.shapes.known(e) for e in s.elements] for j, s in lists.items()}
    expected = _expanded([None] * (len(node.inputs) - 2), starts)
    pairs = zip(proven, expected, strict=True)
    if any(start is not None and not same(found, start) for found, start in pairs):
        text = "an element's type or shape is not the same at every iteration"
        return Reason("unknown-shape", text)
    held: dict[ir.Value, Listed] = {}
    moved: dict[int, int] = {}
    index = 0
    for k, old in enumerate(node.outputs):
        if k in lists:
            held[old] = Listed(range(index, index + len(starts[k])), starts[k], lists[k].dtype)
            index += len(starts[k])
        else:
            moved[k] = index
            index += 1
    loop_inputs = [*node.inputs[:2], *initials]
    plan = Rebuild(node, loop_inputs, {"body": (copy, BodyForm())}, index, moved)
    which = ", ".join(f"{j} ({len(s)} elements)" for j, s in lists.items())
    declare = proven_in(known, copy, untyped_only=True)
    return Restructure(
        plan=plan,
        held=held,
        declare=declare,
        build=Build(discard=[body]),
        records=[Record("loop-carries-elements", f"carried list(s) {which} as their elements")],
        then=onward,  # (what it appends may now be proven: a scan output)
    )

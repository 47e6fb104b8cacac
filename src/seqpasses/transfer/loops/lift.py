"""Reads of a list inside the loop that appends to it become values the loop already has.

In a loop that appends one element per iteration to a list that starts static: ``len(l)`` ->
``n0 + i``, ``l[p]`` of an initial element -> that element, ``l[-1]`` -> the element appended
last, carried as a new loop value (the initial list's last element to begin with). The list is
then append-only and can become a scan output (a decoding loop). :func:`plan` matches without
touching the graph; :func:`lift_reads` applies.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import onnx_ir as ir

from seqpasses.core.graph import is_default, subgraph_path
from seqpasses.core.sequence import StaticSequence
from seqpasses.transfer.loops.appends import append_pattern
from seqpasses.transfer.loops.induction import declared_ones
from seqpasses.walk.context import Context, Scope
from seqpasses.walk.driver import onward
from seqpasses.walk.outcomes import (
    BodyForm,
    Build,
    Declared,
    Next,
    Proposal,
    Rebuild,
    Record,
    Restructure,
    Use,
)

__all__ = ["lift_reads", "plan"]

LiftPlan = tuple[ir.Node, list[tuple[ir.Node, str]]]


def plan(ctx: Context, body: ir.Graph, j: int, initial: StaticSequence) -> LiftPlan | None:
    """The append of carried list ``j`` and how each other read of it is lifted (``length``,
    ``last`` or ``initial``), or None."""
    carried_in = body.inputs[2 + j]
    readers = [u.node for u in carried_in.uses()]
    inserts = [
        r for r in readers if r.op_type == "SequenceInsert" and r.outputs[0] is body.outputs[1 + j]
    ]
    if len(inserts) != 1:
        return None
    found = append_pattern(ctx, body, j, ignore=set(readers) - set(inserts))
    if found is None or found.front:
        return None
    reads: list[tuple[ir.Node, str]] = []
    for reader in readers:
        if reader is found.insert:
            continue
        if reader.graph is not body or not is_default(reader):
            return None
        if reader.op_type == "SequenceLength":
            reads.append((reader, "length"))
            continue
        if reader.op_type != "SequenceAt" or len(reader.inputs) < 2 or reader.inputs[1] is None:
            return None
        if reader.inputs[0] is not carried_in:
            return None
        position, _ = ctx.const_int(reader.inputs[1])
        if position == -1 and len(initial) >= 1:
            reads.append((reader, "last"))
        elif position is not None and 0 <= position < len(initial):
            reads.append((reader, "initial"))
        else:
            return None
    return found.insert, reads


def _lifted_value(
    ctx: Context, body_scope: Scope, reader: ir.Node, kind: str, initial: StaticSequence
) -> ir.Value:
    """What a ``length`` or ``initial`` read is, in terms the body already has."""
    body = body_scope.graph
    if kind == "initial":
        assert reader.inputs[1] is not None
        position, _ = ctx.const_int(reader.inputs[1])
        assert position is not None
        return initial.elements[position]
    emit = ctx.emitter(body_scope, reader)
    count = body.inputs[0]
    int64, scalar = ir.TensorType(ir.DataType.INT64), ir.Shape([])
    if declared_ones(count) == (1,):  # len(l) is a scalar, the counter [1]
        count = emit.squeeze(count, 0)
    if not len(initial):
        return count  # (the caller declares it an int64 scalar, as len(l) is)
    n0 = emit.constant(np.array(len(initial), dtype=np.int64))
    return emit.op("Add", [count, n0], type=int64, shape=scalar)


def lift_reads(
    ctx: Context,
    node: ir.Node,
    scope: Scope,
    body: ir.Graph,
) -> Proposal:
    """Lift what can be lifted; the loop goes on to the next patterns (:class:`Next`) as the
    Loop that replaces ``node`` (``node`` itself when no value was added)."""
    body_scope = scope.inner(body, subgraph_path(scope.path, node, "body"))
    carried = len(node.inputs) - 2
    lasts: list[tuple[int, list[ir.Node]]] = []  # carried index, its l[-1] reads
    uses: list[Use] = []
    gone: list[ir.Node] = []
    replaced: dict[ir.Value, ir.Value] = {}
    declare: dict[ir.Value, Declared] = {}
    for j in range(carried):
        initial = ctx.facts.static(node.inputs[2 + j])
        found = plan(ctx, body, j, initial) if initial is not None else None
        if found is None or initial is None:
            continue
        last_reads = [reader for reader, kind in found[1] if kind == "last"]
        for reader, kind in found[1]:
            if kind != "last":
                value = _lifted_value(ctx, body_scope, reader, kind, initial)
                if kind == "length":
                    declare[value] = (ir.TensorType(ir.DataType.INT64), ir.Shape([]))
                uses.append((reader.outputs[0], value, body_scope))
                replaced[reader.outputs[0]] = value
                gone.append(reader)
        if last_reads:
            lasts.append((j, last_reads))
    if not gone and not lasts:
        return Next(node=node)
    record = Record("loop-lift-reads", "reads of the list it appends to")
    if not lasts:
        return Next(
            declare=declare,
            uses=uses,
            build=Build(take_out=gone),
            records=[record],
            node=node,
            changed=True,
        )
    rebuilt, lifted_uses = _carrying_lasts(ctx, node, body, lasts, replaced, body_scope)
    uses += lifted_uses
    gone += [reader for _, last_reads in lasts for reader in last_reads]

    return Restructure(
        plan=rebuilt,
        declare=declare,
        uses=uses,
        build=Build(take_out=gone),
        records=[record],
        then=onward,
    )


def _carrying_lasts(
    ctx: Context,
    node: ir.Node,
    body: ir.Graph,
    lasts: list[tuple[int, list[ir.Node]]],
    lifted: Mapping[ir.Value, ir.Value],
    body_scope: Scope,
) -> tuple[Rebuild, list[Use]]:
    """The Loop that carries, for each list of ``lasts`` (its index, its ``l[-1]`` reads), the
    element appended last (the initial list's last one to begin with), and the uses of the
    reads that move to it (``lifted``: what the other reads became)."""
    uses: list[Use] = []
    replaced = dict(lifted)
    carried = len(node.inputs) - 2
    new_inputs = list(node.inputs)
    body_inputs = list(body.inputs)
    lasts_out: list[ir.Value] = []
    for j, last_reads in lasts:
        initial = ctx.facts.static(node.inputs[2 + j])
        readers = {use.node for use in body.inputs[2 + j].uses()}
        appended = append_pattern(ctx, body, j, ignore=readers - {body.outputs[1 + j].producer()})
        assert initial is not None and appended is not None
        tensor = appended[1]
        element = initial.elements[-1]
        last_in = ir.Value(
            name=f"{body.inputs[2 + j].name or 'list'}_last",
            type=element.type or tensor.type or ir.TensorType(initial.dtype or ir.DataType.FLOAT),
        )
        body_inputs.append(last_in)
        for reader in last_reads:
            uses.append((reader.outputs[0], last_in, body_scope))
            replaced[reader.outputs[0]] = last_in
        # (l.append(l[-1]) appends what it just lifted: the body's new input, which the
        # new form returns through an Identity)
        lasts_out.append(replaced.get(tensor) or ctx.edits.current(tensor))
        new_inputs.append(initial.elements[-1])
    body_outputs = list(body.outputs)
    body_outputs[1 + carried : 1 + carried] = lasts_out
    form = BodyForm(inputs=body_inputs, outputs=body_outputs)
    added = len(lasts)
    moved = {k: k if k < carried else k + added for k in range(len(node.outputs))}
    count = len(node.outputs) + added
    return Rebuild(node, new_inputs, {"body": (body, form)}, count, moved, facts=True), uses

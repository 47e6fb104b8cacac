"""``SequenceMap`` over lists held as one tensor ``[n, *E]``: a ``Loop`` over ``n``.

When a sequence input of a ``SequenceMap`` is not static (its length or positions are known
only at run time) but can be held as one tensor ``S``, the map is the ``Loop`` that runs its body
``n`` times: iteration ``i`` reads ``Gather(S, i)`` for each sequence input (tensor inputs are
read as they are) and yields the body's outputs as scan outputs, ``[n, *O]`` each: the outputs
are lists held as one tensor in turn. The body is copied and walked (its own sequence ops fold
as anywhere else); the rewrite is kept only when no sequence op stays in the copy and every
output has a shape that is the same every iteration (numbers, or the inputs' dim names), which
a Loop that may run zero times must state in numbers (a zero-iteration scan output takes its
shape from the body's declaration).
"""

from __future__ import annotations

import onnx_ir as ir

from seqpasses.core.dims import same_dim
from seqpasses.core.graph import graph_nodes, is_default, subgraph_path
from seqpasses.core.ops import SEQUENCE_OPS
from seqpasses.core.sequence import Reason, StackedSequence
from seqpasses.options import Group
from seqpasses.transfer import rows
from seqpasses.transfer.common import stable
from seqpasses.transfer.stacked import stacked_of
from seqpasses.walk.budget import cost_of
from seqpasses.walk.context import Context, Scope
from seqpasses.walk.outcomes import (
    AbstractValue,
    BodyForm,
    Build,
    Declared,
    Fold,
    Leave,
    Made,
    Outcome,
    Proposal,
    Record,
    Trial,
)

__all__ = ["RULES", "map_stacked"]


def _fail(reason: Reason) -> Proposal:
    """Leave the map with ``reason``; what was built to try goes."""
    return Trial.failed(reason, lambda why: Leave(reason=why))


def map_stacked(
    ctx: Context, node: ir.Node, scope: Scope, body: ir.Graph, sequences: list[int]
) -> Proposal:
    """Rewrite ``node`` (its inputs ``sequences`` are the sequence ones) as a Loop over the
    lists held as one tensor: a trial on a copy of the body; when it cannot be done, the node
    is left with the reason (nothing changed then)."""
    if not ctx.options.enabled(Group.STACKED):
        return Leave(
            reason=Reason("run-time-value", "lists of run-time length are not held as one tensor")
        )
    held: dict[int, StackedSequence] = {}
    for j in sequences:
        st = stacked_of(ctx, node.inputs[j], scope, node)
        if isinstance(st, Reason):
            return _fail(Reason(st.kind, f"input {j}: {st}"))
        held[j] = st
    first = held[sequences[0]]
    if any(not same_dim(st.length, first.length) for st in held.values()):
        text = "sequence inputs of lengths not provably equal (the map fails when they differ)"
        return _fail(Reason("unknown-shape", text))
    over = ctx.budget.afford(*cost_of(body), "a Loop over the list")
    if over is not None:
        return _fail(over)
    copy, form, loop = _as_loop(ctx, node, scope, body, held)
    unloadable = len(ctx.edits.unloadable)

    def walked(made: Made) -> Proposal | Reason:
        return _kept(ctx, node, scope, (copy, loop), first, unloadable)

    build = Build(
        clones=[(copy, body)],
        bodies=[(copy, form)],
        add=[(loop, node)],
        walk=[(copy, loop, "body")],
    )
    attempt = Outcome(build=build, then=walked, charge=cost_of(body))
    return Trial(attempt=attempt, otherwise=lambda why: Leave(reason=why), drop=[copy])


def _as_loop(
    ctx: Context,
    node: ir.Node,
    scope: Scope,
    body: ir.Graph,
    held: dict[int, StackedSequence],
) -> tuple[ir.Graph, BodyForm, ir.Node]:
    """A copy of the map's body, the form that makes it the body of a Loop over the lists
    ``held`` as one tensor (by input index), and that Loop (built whole, in no graph)."""
    first = next(iter(held.values()))
    copy = body.clone(allow_outer_scope_values=True)
    int64, boolean = ir.TensorType(ir.DataType.INT64), ir.TensorType(ir.DataType.BOOL)
    count = ir.Value(name=f"{node.name or 'map'}_i", type=int64, shape=ir.Shape([]))
    go = ir.Value(name=f"{node.name or 'map'}_cond", type=boolean, shape=ir.Shape([]))
    # the copy's inputs (one per element) become the iteration count and condition; each
    # list's element is read at the start as row i of its tensor
    start = next(iter(copy), None)
    reads = ctx.body_emitter(copy, start, scope.opset)
    moved: dict[ir.Value, ir.Value] = {}
    for j, old in enumerate(copy.inputs):
        value = node.inputs[j]
        assert value is not None
        if j in held:
            tensor = held[j].tensor
            value = reads.op(
                "Gather", [tensor, count], type=tensor.type, shape=held[j].element, axis=0
            )
        moved[old] = value
    keep = ctx.body_emitter(copy, None, scope.opset).identity(go)
    copy_outputs = [keep, *(moved.get(out, out) for out in copy.outputs)]
    form = BodyForm(inputs=[count, go], outputs=copy_outputs, moved=moved)
    emit = ctx.emitter(scope, node)
    trips = rows.length_of(emit, first)
    always = emit.true()  # (an absent last input would vanish when saved)
    loop = ir.Node(
        "",
        "Loop",
        [trips, always],
        [ir.Attr("body", ir.AttributeType.GRAPH, copy)],
        num_outputs=len(node.outputs),
        name=ctx.edits.next_name(node.name or "SequenceMap", "Loop"),
    )
    return copy, form, loop


def _kept(
    ctx: Context,
    node: ir.Node,
    scope: Scope,
    built: tuple[ir.Graph, ir.Node],
    first: StackedSequence,
    unloadable: int,
) -> Proposal | Reason:
    """The Loop (``built``: its body, walked, and itself) as the map, when no sequence op
    stayed in its body and every output has a shape that holds every iteration; else why
    not (the trial is undone). ``unloadable``: the write-backs ONNX Runtime cannot load
    before the walk of the body."""
    copy, loop = built
    inner = scope.inner(copy, subgraph_path(scope.path, loop, "body"))
    why = _why_not(ctx, inner, copy, len(node.outputs), first)
    if why is None and len(ctx.edits.unloadable) > unloadable:
        text = "the body would write a list back by a SplitToSequence ONNX Runtime lacks"
        why = Reason("unknown-sequence", text)
    if why is not None:
        return why
    declare: dict[ir.Value, Declared] = {}
    values: dict[ir.Value, AbstractValue] = {}
    for k, old in enumerate(node.outputs):
        out = loop.outputs[k]
        made_type, element = inner.shapes.known(copy.outputs[1 + k])
        assert element is not None
        # declared: a zero-iteration scan output's shape
        declare[copy.outputs[1 + k]] = (made_type, element)
        declare[out] = (made_type, ir.Shape([first.length, *element]))
        dtype = made_type.dtype if made_type is not None else None
        values[old] = StackedSequence(
            out, first.length, element, dtype, first.least, first.checked, first.guard
        )  # (its trip count is read off a checked tensor: so is its length)
    n = len(node.outputs)
    record = Record("sequence-map-loop", f"a Loop over n with {n} scan output(s)")
    return Fold(declare=declare, values=values, records=[record])


def _why_not(
    ctx: Context, inner: Scope, copy: ir.Graph, count: int, first: StackedSequence
) -> Reason | None:
    for kept in graph_nodes(copy):
        if kept.op_type in SEQUENCE_OPS and is_default(kept):
            why = ctx.facts.reasons.get(kept)
            text = f"a {kept.op_type} stays in the body" + (f" ({why})" if why else "")
            return Reason("copies", text)
    for k in range(count):
        out = copy.outputs[1 + k]
        type_, shape = inner.shapes.known(out)
        if shape is None or not stable(ctx, shape) or not isinstance(type_, ir.TensorType):
            text = f"output {k} of the body has no shape that holds every iteration"
            return Reason("unknown-shape", text)
        if first.least == 0 and not all(isinstance(d, int) for d in shape):
            text = (
                f"output {k} of the body has symbolic dims and the list may be empty "
                "(a zero-iteration scan output takes its shape from numbers only)"
            )
            return Reason("unknown-shape", text)
    return None


RULES: dict[str, tuple[str, str]] = {
    "sequence-map-loop": (
        Group.STACKED,
        "SequenceMap over lists held as [n, *E] -> a Loop over n whose scan outputs are the "
        "mapped lists",
    ),
}

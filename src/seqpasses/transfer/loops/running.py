"""A list a Loop appends to, read after it only whole, is carried as its running concatenation.

tf2onnx's ragged ``map_fn`` (a per-row ``boolean_mask``, ragged rows) appends an element whose
size along one axis differs from iteration to iteration, so no scan output fits; but when every
read of the final list is ``ConcatFromSequence(new_axis=0, axis=a)`` (one ``a`` for all) or
``SequenceLength``, the list itself is never needed:

- the loop carries ``acc = Concat(acc, x, axis=a)`` (``Concat(x, acc)`` for an insert at the
  front) in place of the list, starting from the initial elements concatenated, or from an
  empty tensor with 0 at axis ``a`` and the element's other dims (proven the same every
  iteration) when the list starts empty;
- ``SequenceLength`` reads a carried count;
- ConcatFromSequence requires the elements to agree outside axis ``a``: where they do not, the
  original fails at the read and the rewrite fails at a Concat, as before. An empty list fails
  it too: when the list starts empty and the loop may run no iteration, a check that fails for
  a count of 0 stays beside each read.

The match (:func:`plan`) works out a :class:`RunningPlan` or a reason without touching the
graph; :func:`apply` rewrites.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import onnx_ir as ir

from seqpasses.core.graph import label
from seqpasses.core.sequence import StaticSequence
from seqpasses.transfer.common import stable
from seqpasses.transfer.loops.appends import append_pattern, appended_list
from seqpasses.transfer.loops.carry import empty_of
from seqpasses.transfer.loops.induction import appended, iterations
from seqpasses.transfer.loops.scan import scope_of
from seqpasses.walk.context import Context, Scope
from seqpasses.walk.outcomes import (
    BodyForm,
    Declared,
    Fold,
    Learned,
    Made,
    Next,
    Outcome,
    Proposal,
    Rebuild,
    Record,
    Restructure,
    Said,
    Use,
)

__all__ = ["RunningPlan", "free_shape", "plan", "running_concats"]

_READERS = frozenset({"ConcatFromSequence", "SequenceLength"})


@dataclass(frozen=True)
class RunningPlan:
    """What carrying one list as its running concatenation needs, worked out once."""

    initial: StaticSequence
    insert: ir.Node
    tensor: ir.Value  # the appended element
    front: bool  # inserted at the front
    axis: int | None  # the concatenation axis (None: only the length is read)
    element: ir.Shape  # the element's shape (axis ``axis`` differs between iterations)
    dtype: ir.DataType
    count: bool  # a count is carried (a length is read, or a read needs the emptiness check)
    check: bool  # the list may be empty where it is concatenated: reads keep a check


def plan(ctx: Context, node: ir.Node, scope: Scope, body: ir.Graph, j: int) -> RunningPlan | str:
    """How carried list ``j`` becomes a carried running concatenation, or why it cannot."""
    listed = appended_list(ctx, node, body, j)
    if isinstance(listed, str):
        return listed
    initial, (insert, tensor, front) = listed
    final = node.outputs[j]
    type_, shape = appended(ctx, scope, node, body, tensor)
    if not isinstance(type_, ir.TensorType) or shape is None:
        return "the appended element's rank or type is not known"
    dtype = type_.dtype
    rank = len(shape)
    if initial.dtype is not None and initial.dtype != dtype:
        return "the appended element's type is not the list's"
    for e in initial.elements:
        e_type, e_shape = scope.shapes.known(e)
        if not isinstance(e_type, ir.TensorType) or e_type.dtype != dtype:
            return "an element the list starts with is not of the appended element's type"
        if e_shape is None or len(e_shape) != rank:
            return "an element the list starts with is not provably of the appended rank"
    axes: set[int] = set()
    lengths = False
    for use in final.uses():
        reader = use.node
        if reader.op_type not in _READERS or reader.graph is None:
            return f"the final list is read by {label(reader)}, which needs the list itself"
        if reader.op_type == "SequenceLength":
            lengths = True
            continue
        if reader.attributes.get_int("new_axis", 0):
            return f"{label(reader)} stacks along a new axis"
        a = reader.attributes.get_int("axis", 0)
        if not -rank <= a < rank:
            return f"{label(reader)}: axis {a} out of range for rank {rank}"
        axes.add(a + rank if a < 0 else a)
    if len(axes) > 1:
        return "the final list is concatenated along more than one axis"
    axis = next(iter(axes), None)
    for e in initial.elements:
        e_shape = scope.shapes.shape(e)
        assert e_shape is not None  # (checked above)
        if axis is not None and any(
            k != axis and isinstance(a, int) and isinstance(b, int) and a != b
            for k, (a, b) in enumerate(zip(e_shape, shape, strict=True))
        ):
            # (the concatenation fails in every run that appends; a Concat of dims this
            # plainly unlike would not even load)
            return "the elements it starts with and the appended ones differ outside the axis"
    if axis is not None and not initial.elements:
        others = ir.Shape([d for k, d in enumerate(shape) if k != axis])
        if not stable(ctx, others):
            return (
                "it starts empty and the appended element's dims other than the concatenation "
                "axis are not provably the same every iteration"
            )
        if dtype == ir.DataType.STRING:
            return "it starts empty and no empty tensor of strings can be made"
    runs = iterations(ctx, scope, node, body)
    check = axis is not None and not initial.elements and not (isinstance(runs, int) and runs >= 1)
    # (a list nothing reads after the loop: its slot carries a count nothing reads)
    count = lengths or check or axis is None
    return RunningPlan(initial, insert, tensor, front, axis, shape, dtype, count, check)


def _start(ctx: Context, scope: Scope, node: ir.Node, p: RunningPlan) -> ir.Value | None:
    """The loop's initial running concatenation: the initial elements joined, or none of the
    element's rows (0 at the axis, the element's other dims)."""
    assert p.axis is not None
    emit = ctx.emitter(scope, node)
    if len(p.initial.elements) == 1:
        return p.initial.elements[0]
    if p.initial.elements:
        return emit.concat(list(p.initial.elements), p.axis)
    others = [d for k, d in enumerate(p.element) if k != p.axis]
    rows = empty_of(ctx, scope, node, (ir.Shape(others), p.dtype))
    if rows is None or p.axis == 0:
        return rows
    rank = len(p.element)
    perm = [*range(1, p.axis + 1), 0, *range(p.axis + 1, rank)]
    none = ir.Shape([0 if k == p.axis else d for k, d in enumerate(p.element)])
    return emit.op("Transpose", [rows], type=emit.type_of(rows), shape=none, perm=perm)


def _apply(
    ctx: Context,
    node: ir.Node,
    scope: Scope,
    body: ir.Graph,
    j: int,
    p: RunningPlan,
    refused: list[tuple[ir.Node, str, str]],
    after: Callable[[ir.Node], Proposal],
) -> Proposal | None:
    """Carry list ``j`` as a tensor, then ``after(the Loop that replaces node)`` (None:
    nothing changes, no empty tensor of the element's shape can be made)."""
    start: ir.Value | None = None
    if p.axis is not None:
        start = _start(ctx, scope, node, p)
        if start is None:
            return None
    free = free_shape(ctx, scope, p)
    rebuilt = _rebuilt(ctx, node, (scope, body), j, p, (start, free))
    readers = [use.node for use in node.outputs[j].uses()]
    carried = len(node.inputs) - 2
    extra = rebuilt.num_outputs - len(node.outputs)  # (a count carried beside the list)

    def made_new(made: Made) -> Proposal:
        new = made.new
        assert new is not None
        acc = new.outputs[j] if start is not None else None
        count = (new.outputs[carried] if extra else new.outputs[j]) if p.count else None
        declare: dict[ir.Value, Declared] = {}
        if acc is not None:  # (proven: an enclosing loop's induction reads them)
            declare[acc] = (ir.TensorType(p.dtype), free)
        if count is not None:
            declare[count] = (ir.TensorType(ir.DataType.INT64), ir.Shape([]))
        return Outcome(
            declare=declare,
            learned=Learned(proven=[v for v in (acc, count) if v is not None]),
            then=lambda _: _read(ctx, scope, p, readers, acc, count, lambda: after(new)),
        )

    detail = f"carried list {j}" + (
        f" as its concatenation along axis {p.axis}" if p.axis is not None else ""
    )
    return Restructure(
        plan=rebuilt,
        said=Said(refused=refused),
        records=[Record("loop-running-concat", detail)],
        then=made_new,
    )


def _rebuilt(
    ctx: Context,
    node: ir.Node,
    where: tuple[Scope, ir.Graph],
    j: int,
    p: RunningPlan,
    concatenation: tuple[ir.Value | None, ir.Shape],
) -> Rebuild:
    """The Loop (``where``: its scope and body) that carries list ``j`` as its running
    concatenation (``concatenation``: where it starts, None when only the count is read,
    and its shape)."""
    scope, body = where
    start, free = concatenation
    carried = len(node.inputs) - 2
    int64, scalar = ir.TensorType(ir.DataType.INT64), ir.Shape([])
    emit = ctx.emitter(scope, node)
    inner = ctx.body_emitter(body, p.insert, scope.opset)

    # -- the body: the list's slot carries the concatenation (or the count, when only the
    # length is read); a count, when needed beside it, is carried last
    old_in = body.inputs[2 + j]
    loop_inputs = list(node.inputs)
    body_inputs = list(body.inputs)
    body_outputs: list[ir.Value] = list(body.outputs)
    count_in: ir.Value | None = None
    count_out: ir.Value | None = None
    if p.count:
        count_in = ir.Value(name=f"{old_in.name or 'list'}_count", type=int64, shape=scalar)
        count_out = inner.op("Add", [count_in, inner.int64(1)], type=int64, shape=scalar)
    if start is not None:
        acc_type = ir.TensorType(p.dtype)
        acc_in = ir.Value(name=f"{old_in.name or 'list'}_concat", type=acc_type, shape=free)
        parts = [p.tensor, acc_in] if p.front else [acc_in, p.tensor]
        acc_out = inner.op("Concat", parts, type=acc_type, shape=free, axis=p.axis)
        body_inputs[2 + j] = acc_in
        body_outputs[1 + j] = acc_out
        loop_inputs[2 + j] = start
        if count_in is not None and count_out is not None:
            body_inputs.append(count_in)
            body_outputs.insert(1 + carried, count_out)
            loop_inputs.append(emit.int64(len(p.initial)))
    else:
        assert count_in is not None and count_out is not None
        body_inputs[2 + j] = count_in
        body_outputs[1 + j] = count_out
        loop_inputs[2 + j] = emit.int64(len(p.initial))
    # a carried value the body returns as it came in goes through an Identity: OpenVINO's
    # Loop conversion miscounts the body's inputs when one is also an output
    tail = ctx.body_emitter(body, None, scope.opset)
    last = 1 + carried + (start is not None and p.count)
    body_outputs = [
        tail.identity(value)
        if 1 <= k < last and value.is_graph_input() and value.graph is body
        else value
        for k, value in enumerate(body_outputs)
    ]
    form = BodyForm(inputs=body_inputs, outputs=body_outputs, drop=[p.insert])
    extra = int(start is not None and count_in is not None)
    moved = {k: k if k < carried else k + extra for k in range(len(node.outputs)) if k != j}
    size = len(node.outputs) + extra
    return Rebuild(node, loop_inputs, {"body": (body, form)}, size, moved)


def _read(
    ctx: Context,
    scope: Scope,
    p: RunningPlan,
    readers: list[ir.Node],
    acc: ir.Value | None,
    count: ir.Value | None,
    after: Callable[[], Proposal],
) -> Proposal:
    """What read the final list reads the carried concatenation (or count) instead."""
    int64 = ir.TensorType(ir.DataType.INT64)
    uses: list[Use] = []
    for reader in readers:
        where = scope_of(ctx, scope, reader)
        if reader.op_type == "SequenceLength":
            assert count is not None
            uses.append((reader.outputs[0], count, where))
            continue
        assert acc is not None
        if p.check and count is not None:
            # ConcatFromSequence of an empty list fails: so does row 0 of a Range of the count
            at = ctx.emitter(where, reader)
            zero, one = at.int64(0), at.int64(1)
            some = ir.Shape([ir.SymbolicDim(None)])
            rows = at.op("Range", [zero, count, one], type=int64, shape=some)
            at.check(at.op("Gather", [rows, zero], type=int64, shape=ir.Shape([]), axis=0))
        uses.append((reader.outputs[0], acc, where))
    return Outcome(uses=uses, then=lambda _: after())


def free_shape(ctx: Context, scope: Scope, p: RunningPlan) -> ir.Shape:
    """The running concatenation's shape: the axis unknown; every other dim the one all the
    initial elements have (a Concat with them succeeds only for elements that agree), or with
    none, the element's where it is the same every iteration; else unknown."""
    dims: list[int | ir.SymbolicDim] = []
    starts = [scope.shapes.shape(e) for e in p.initial.elements]
    for k, d in enumerate(p.element):
        found: int | ir.SymbolicDim | None = None
        if k != p.axis and starts:
            first = starts[0][k] if starts[0] is not None else None
            if all(s is not None and s[k] == first for s in starts) and stable(
                ctx, ir.Shape([first])
            ):
                found = first
        elif k != p.axis and stable(ctx, ir.Shape([d])):
            found = d
        dims.append(found if isinstance(found, int | ir.SymbolicDim) else ir.SymbolicDim(None))
    return ir.Shape(dims)


def running_concats(
    ctx: Context,
    node: ir.Node,
    scope: Scope,
    body: ir.Graph,
    start: int = 0,
) -> Proposal:
    """Carry every list the loop appends to and reads only whole as its running
    concatenation (several lists: one by one, from carried value ``start``); for a list that
    cannot, say why. None carried so: the loop goes on to the next patterns (:class:`Next`);
    one carried: it is done."""
    refused: list[tuple[ir.Node, str, str]] = []
    for j in range(start, len(node.inputs) - 2):
        if not isinstance(body.inputs[2 + j].type, ir.SequenceType | None):
            continue
        found = plan(ctx, node, scope, body, j)
        if isinstance(found, str):
            # (a list the body does not just append to: the scan output said why already)
            appends = append_pattern(ctx, body, j) is not None
            if appends and ctx.facts.static(node.inputs[2 + j]) is not None:
                refused.append((node, "running", found))
            continue

        def following(new: ir.Node, j: int = j) -> Proposal:
            # the same carried slots: j + 1 names the next list
            inner = new.attributes["body"].as_graph()
            return running_concats(ctx, new, scope, inner, j + 1)

        applied = _apply(ctx, node, scope, body, j, found, refused, following)
        if applied is None:
            refused.append((node, "running", "no empty tensor of its shape"))
            continue
        return applied
    said = Said(refused=refused)
    return Fold(said=said) if start else Next(node=node, said=said)

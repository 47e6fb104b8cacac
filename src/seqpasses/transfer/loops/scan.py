"""A list a Loop appends to becomes a scan output ``Y`` of shape ``[K, ...]``.

When every appended element provably has the same shape each iteration and every read of the
final list is one of these, the carried sequence is dropped (``K`` = iterations run, known
only at run time if need be):

1. ``ConcatFromSequence(new_axis=1, axis=0)`` -> ``Y`` (other axes: ``Transpose(Y)``);
2. ``ConcatFromSequence(new_axis=0, axis=a)`` -> ``Reshape`` merging ``K`` into axis ``a``
   (after a ``Transpose`` for ``a > 0``; a target right for dims of 0: ``core.merge.merge_axes``);
3. ``SequenceLength`` -> ``Gather(Shape(Y), 0)`` (+ the initial length);
4. ``SequenceAt(const p)`` -> an initial element, or ``Gather(Y, p - initial length)``.

Initial elements, if any, are concatenated in front. The match (:func:`plan`) works out a
:class:`ScanPlan` or a reason without touching the graph; :func:`apply` rewrites.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import onnx_ir as ir

from seqpasses.core.dims import contradicts, fill_shape
from seqpasses.core.emit import Emitter
from seqpasses.core.graph import label, subgraph_path
from seqpasses.core.merge import merge_axes
from seqpasses.core.sequence import StaticSequence
from seqpasses.transfer.loops.appends import READERS, appended_list, reader_ok
from seqpasses.transfer.loops.induction import (
    appended_shape,
    carried_shapes,
    induction,
    iterations,
    same,
)
from seqpasses.walk.context import Context, Scope
from seqpasses.walk.outcomes import (
    BodyForm,
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

__all__ = ["ScanPlan", "plan", "scan_outputs", "scope_of"]


@dataclass(frozen=True)
class ScanPlan:
    """What turning one carried list into a scan output needs, worked out once."""

    initial: StaticSequence
    insert: ir.Node
    tensor: ir.Value  # the appended element
    element_type: ir.TypeProtocol | None  # its type (inferred when the body declares none)
    front: bool  # inserted at the front (the list is the scan output reversed)
    shape: ir.Shape  # the element's shape, proven by induction
    runs: int | ir.SymbolicDim | None  # iterations run, when provable
    # The list starts with elements and the loop may run zero times: a scan output after zero
    # iterations has no reliable shape (ONNX Runtime makes it [0] unless the body declares
    # numbers only), so it is reshaped like the initial elements.
    reshape: bool


def plan(ctx: Context, node: ir.Node, scope: Scope, body: ir.Graph, j: int) -> ScanPlan | str:
    """How carried value ``j`` becomes a scan output, or why it cannot."""
    listed = appended_list(ctx, node, body, j)
    if isinstance(listed, str):
        return listed
    initial, found = listed
    final = node.outputs[j]
    if found.front and len(initial):
        return "the body inserts at the front of a list that does not start empty"
    proven = appended_shape(ctx, scope, node, body, found.tensor)
    shape = proven[1] if proven is not None else None
    if proven is None or shape is None:
        return "the appended element's shape is not provably the same every iteration"
    element_type = proven[0]
    dtype = found.tensor.dtype or getattr(element_type, "dtype", None)
    if dtype == ir.DataType.STRING:
        # (ONNX Runtime 1.32 keeps only the first iteration's strings in a scan output of
        # strings, the rest empty: the list stays, or another form takes it)
        return "its elements are strings, which ONNX Runtime's scan outputs lose"
    runs = iterations(ctx, scope, node, body)
    runs_some = isinstance(runs, int) and runs >= 1
    reshape = bool(len(initial)) and not runs_some
    if reshape and not all(
        same(scope.shapes.known(e), (scope.shapes.type(e), shape)) for e in initial.elements
    ):
        return (
            "the loop may run zero times and the elements the list starts with are not "
            "provably of the appended element's shape"
        )
    if reshape and not _positive(shape) and scope.opset < 14:
        return (
            "the loop may run zero times and the element's dims may be 0: before opset 14 no "
            "Reshape target gives its empty scan output the element's shape for every size"
        )
    for use in final.uses():
        reader = use.node
        if reader.op_type not in READERS or reader.graph is None:
            return f"the final list is read by {label(reader)}, which has no scan-output form"
        opset = ctx.facts.opset_of(reader)
        why = reader_ok(ctx, reader, shape, len(initial), runs_some or not initial, opset)
        if why:
            return f"{label(reader)}: {why}"
    return ScanPlan(
        initial, found.insert, found.tensor, element_type, found.front, shape, runs, reshape
    )


def _apply(
    ctx: Context,
    node: ir.Node,
    scope: Scope,
    body: ir.Graph,
    j: int,
    plan: ScanPlan,
    refused: list[tuple[ir.Node, str, str]],
    after: Callable[[ir.Node], Proposal],
) -> Proposal:
    """Turn carried sequence ``j`` into a scan output (``refused``: why the lists before it
    were not); then ``after(the Loop that replaces node)``."""
    insert, tensor, shape = plan.insert, plan.tensor, plan.shape
    readers = [use.node for use in node.outputs[j].uses()]

    # -- the body: drop the carried sequence, emit the appended tensor as a scan output
    outputs = [v for k, v in enumerate(body.outputs) if k != 1 + j] + [tensor]
    form = BodyForm(
        inputs=[v for k, v in enumerate(body.inputs) if k != 2 + j],
        outputs=outputs,
        drop=[insert],
    )

    # -- the loop node: one carried value fewer, one scan output more
    loop_inputs = [v for k, v in enumerate(node.inputs) if k != 2 + j]
    if len(loop_inputs) == 2 and loop_inputs[1] is None:
        # an absent condition as the last input would vanish when saved, and Loop needs the
        # slot: a constant true means the same
        loop_inputs = [loop_inputs[0], ctx.emitter(scope, node).true()]
    kept = [k for k in range(len(node.outputs)) if k != j]
    moved = {k: index for index, k in enumerate(kept)}
    rebuilt = Rebuild(node, loop_inputs, {"body": (body, form)}, len(node.outputs), moved)

    def declared(made: Made) -> Proposal:
        # declared, so that a runtime can shape the output of zero iterations ([0, 3], not
        # [0])
        new = made.new
        assert new is not None
        out = body.outputs[-1]
        given = (
            shape
            if contradicts(out.shape, shape)
            else fill_shape(out.shape, shape, numbers_win=True)
        )
        stacked = new.outputs[-1]
        runs = ir.SymbolicDim(None) if plan.runs is None else plan.runs
        return Outcome(
            declare={out: (out.type, given), stacked: (out.type, ir.Shape([runs, *shape]))},
            learned=Learned(proven=[stacked]),
            then=lambda _: _read(ctx, (node, new), scope, body, plan, readers, after),
        )

    return Restructure(
        plan=rebuilt,
        # (the appended element's type, inferred when the body declares none)
        declare={tensor: (tensor.type or plan.element_type, tensor.shape)},
        records=[Record("loop-append-to-scan-output", f"carried value {j}")],
        said=Said(refused=refused),
        then=declared,
    )


def _read(
    ctx: Context,
    nodes: tuple[ir.Node, ir.Node],
    scope: Scope,
    body: ir.Graph,
    plan: ScanPlan,
    readers: list[ir.Node],
    after: Callable[[ir.Node], Proposal],
) -> Proposal:
    """What read the final list reads the scan output (the last output of ``nodes``' second,
    the Loop that replaced the first: what is built goes before the first, after it)."""
    node, new = nodes
    initial, shape = plan.initial, plan.shape
    stacked = new.outputs[-1]
    proven: list[ir.Value] = []
    if plan.reshape:
        # zero iterations must still give [0, *element shape]: the initial elements have it
        emit = ctx.emitter(scope, node)
        int64 = ir.TensorType(ir.DataType.INT64)
        element_shape = emit.op("Shape", [initial.elements[-1]], type=int64)
        if _positive(shape):  # the -1 is always inferred
            target = emit.concat([emit.int64s([-1]), element_shape], 0)
            fixed = emit.op(
                "Reshape", [stacked, target], type=emit.type_of(stacked), shape=stacked.shape
            )
        else:  # dims that may be 0: every dim literal (opset 14+, see plan)
            whole = emit.op("Shape", [stacked], type=int64)
            first = [whole, emit.int64s([0])]
            count = emit.op("Gather", first, type=int64, shape=ir.Shape([1]), axis=0)
            target = emit.concat([count, element_shape], 0)
            fixed = emit.op(
                "Reshape",
                [stacked, target],
                type=stacked.type,
                shape=stacked.shape,
                allowzero=1,
            )
        proven.append(fixed)
        stacked = fixed
    if plan.front:  # inserted at the front each time: the list is the scan output reversed
        emit = ctx.emitter(scope, node)
        bounds = [
            emit.int64s([-1]),
            emit.int64s([-(2**63)]),
            emit.int64s([0]),
            emit.int64s([-1]),
        ]
        reversed_ = emit.op(
            "Slice", [stacked, *bounds], type=emit.type_of(stacked), shape=stacked.shape
        )
        proven.append(reversed_)
        stacked = reversed_
    uses: list[Use] = []
    checked: set[ir.Value] = set()
    for reader in readers:
        where = scope_of(ctx, scope, reader)
        result = _rewrite_reader(ctx, where, reader, stacked, len(shape), initial, checked)
        uses.append((reader.outputs[0], result, where))
    if len(new.inputs) > 2:  # other values are carried: their shapes, proven anew
        declare = carried_shapes(new, induction(ctx, scope, new, body)[1])
    else:
        declare = {}
    learned = Learned(proven=proven)
    return Outcome(learned=learned, uses=uses, declare=declare, then=lambda _: after(new))


def scope_of(ctx: Context, scope: Scope, reader: ir.Node) -> Scope:
    """The scope a reader of the final list lives in: the loop's, or a subgraph of it (an If
    branch after the loop reads the list too)."""
    graph = reader.graph
    if graph is scope.graph or graph is None:
        return scope
    owner = ctx.facts.owner(graph)
    path = subgraph_path(scope.path, *owner) if owner is not None else scope.path
    return scope.inner(graph, path) if isinstance(graph, ir.Graph) else scope


def _rewrite_reader(
    ctx: Context,
    scope: Scope,
    reader: ir.Node,
    stacked: ir.Value,
    rank: int,
    initial: StaticSequence,
    checked: set[ir.Value],
) -> ir.Value:
    """What ``reader`` of the final list reads of the scan output ``stacked`` instead;
    ``checked``: the scan outputs given a check already (once per list)."""
    emit = ctx.emitter(scope, reader)
    n0 = len(initial)
    int64 = ir.TensorType(ir.DataType.INT64)
    if reader.op_type == "SequenceLength":
        shape = emit.op("Shape", [stacked])
        first = emit.constant(np.array(0, dtype=np.int64))
        if not n0:
            return emit.op("Gather", [shape, first], type=int64, shape=ir.Shape([]), axis=0)
        result = emit.op("Gather", [shape, first], axis=0)
        n = emit.constant(np.array(n0, dtype=np.int64))
        return emit.op("Add", [result, n], type=int64, shape=ir.Shape([]))
    if reader.op_type == "SequenceAt":
        assert reader.inputs[1] is not None
        position, _ = ctx.const_int(reader.inputs[1])
        assert position is not None
        if 0 <= position < n0:
            return initial.elements[position]
        index = emit.constant(
            np.array(position - n0 if position >= 0 else position, dtype=np.int64)
        )
        row = ir.Shape(list(stacked.shape)[1:]) if stacked.shape is not None else None
        return emit.check(
            emit.op("Gather", [stacked, index], type=emit.type_of(stacked), shape=row, axis=0)
        )
    runs = stacked.shape[0] if stacked.shape is not None else None
    if not n0 and not (isinstance(runs, int) and runs >= 1):
        # no element before the loop and maybe no iteration: the list may be empty, and
        # ConcatFromSequence of an empty list fails; so does reading row 0 of no rows: a
        # check kept beside the value (it stays whatever reads it)
        checks = ctx.edits.check_nodes
        if stacked not in checked and not any(use.node in checks for use in stacked.uses()):
            checked.add(stacked)
            emit.check(
                emit.op("Gather", [stacked, emit.int64s([0])], type=emit.type_of(stacked), axis=0)
            )
    return _concat_reader(emit, reader, stacked, rank, initial)


def _concat_reader(
    emit: Emitter, reader: ir.Node, stacked: ir.Value, rank: int, initial: StaticSequence
) -> ir.Value:
    new_axis = reader.attributes.get_int("new_axis", 0)
    axis = reader.attributes.get_int("axis", 0)
    out_rank = rank + 1 if new_axis else rank
    axis = axis + out_rank if axis < 0 else axis
    dims = list(stacked.shape)[1:] if stacked.shape is not None else []
    moved = stacked
    if axis > 0:
        perm = [*range(1, axis + 1), 0, *range(axis + 1, rank + 1)]
        dims_moved = (
            ir.Shape([stacked.shape[p] for p in perm]) if stacked.shape is not None else None
        )
        moved = emit.op(
            "Transpose", [stacked], type=emit.type_of(stacked), shape=dims_moved, perm=perm
        )
    if new_axis:
        result = moved
        front = [emit.unsqueeze(e, axis) for e in initial.elements]
    else:
        assert stacked.shape is not None  # (given when the scan output was made)
        runs = stacked.shape[0]
        runs_some = (isinstance(runs, int) and runs >= 1) or not initial
        merged = merge_axes(emit, moved, [*dims[:axis], runs, *dims[axis:]], axis, runs_some)
        assert merged is not None  # (plan checked there is a form)
        result = merged
        front = list(initial.elements)
    if front:
        result = emit.concat([*front, result], axis)
    return result


def _positive(shape: ir.Shape) -> bool:
    """Whether every dim of ``shape`` is a known positive number."""
    return all(isinstance(d, int) and d > 0 for d in shape)


def scan_outputs(
    ctx: Context,
    node: ir.Node,
    scope: Scope,
    body: ir.Graph,
    start: int = 0,
    more: bool = False,
) -> Proposal:
    """Turn every list the loop appends to into a scan output (several lists: one by one,
    from carried value ``start``; ``more``: one was turned already); for a list that starts
    static and cannot, say why in the Loop's reasons. The loop goes on (:class:`Next`): none
    turned, to the next patterns; one turned, rebuilt, to them all again."""
    refused: list[tuple[ir.Node, str, str]] = []
    j = start
    while j < len(node.inputs) - 2:
        found = plan(ctx, node, scope, body, j)
        if isinstance(found, str):
            if ctx.facts.static(node.inputs[2 + j]) is not None:
                refused.append((node, "scan", found))
            j += 1
            continue

        def following(new: ir.Node, j: int = j) -> Proposal:
            # carried value j is gone: j now names the next one
            inner = new.attributes["body"].as_graph()
            return scan_outputs(ctx, new, scope, inner, j, more=True)

        return _apply(ctx, node, scope, body, j, found, refused, following)
    said = Said(refused=refused)
    # (one turned: the rebuilt loop goes to every pattern again, for the lists left)
    return Next(node=node, said=said, changed=more)

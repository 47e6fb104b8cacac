"""A Loop that carries a list and reads or edits it at run-time positions carries one tensor.

When no scan output and no unrolling fits (the body reads ``l[i]``, pops, inserts at the
front of a list that starts with elements, or appends only under a condition), the list is
carried as one tensor ``S`` of shape ``[n, *E]`` whose first dim may change between iterations
(ONNX allows it): the body's sequence ops on it become tensor ops (:mod:`..stacked`), an If in
it yields tensors, and what reads the final list reads ``S``.

The conversion is tried on a copy of the body, walked with the list as one tensor; it is kept
only when every sequence op on the list went away and the body returns a list of the same
element shape, else the copy is dropped and nothing changed. Element shapes come from the
list the loop starts with, or from what the body inserts; declared shapes inside the copy are
cleared first (exporters write guesses there) and re-proven by induction.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import onnx_ir as ir

from seqpasses.core.dims import cap_of, same_shape
from seqpasses.core.graph import (
    graph_nodes,
    is_default,
    is_hold,
)
from seqpasses.core.ops import SEQUENCE_OPS
from seqpasses.core.sequence import Reason, StackedSequence, StaticSequence
from seqpasses.transfer.common import written_back_unloadable
from seqpasses.transfer.loops.induction import induction, rejected, stable
from seqpasses.transfer.rows import empty_rows
from seqpasses.transfer.stacked import stacked_of
from seqpasses.walk.budget import cost_of
from seqpasses.walk.context import Context, Scope
from seqpasses.walk.outcomes import BodyForm, Rebuild
from seqpasses.walk.trial import Checkpoint

__all__ = ["carry_stacked", "empty_of"]

Element = tuple[ir.Shape, ir.DataType]
Carried = tuple[ir.Value, Element, int]  # the initial tensor, its element, its fewest rows


def _versions(ctx: Context, start: ir.Value) -> set[ir.Value]:
    """``start`` (a list a body carries) and the lists the body makes of it: through inserts,
    erasures, Identity, Optional, and out of If branches that return them."""
    seen = {start}
    work = [start]
    while work:
        value = work.pop()
        made = [
            use.node.outputs[0]
            for use in value.uses()
            if is_default(use.node)
            and (
                (use.node.op_type in ("SequenceInsert", "SequenceErase") and use.idx == 0)
                or use.node.op_type in ("Identity", "Optional", "OptionalGetElement")
            )
        ]
        owner = ctx.facts.owner(value.graph) if value.is_graph_output() else None
        if owner is not None and owner[0].op_type == "If" and value.graph is not None:
            made += [owner[0].outputs[k] for k, o in enumerate(value.graph.outputs) if o is value]
        for out in made:
            if out not in seen:
                seen.add(out)
                work.append(out)
    return seen


def _inserted_element(
    ctx: Context, scope: Scope, node: ir.Node, body: ir.Graph, j: int, dtype: ir.DataType | None
) -> Element | None:
    """The shape every tensor the body inserts into carried list ``j`` provably has (one for
    all), of the list's own element type ``dtype`` (when known)."""
    known, _ = induction(ctx, scope, node, body)
    found: Element | None = None
    versions = _versions(ctx, body.inputs[2 + j])
    for inner in graph_nodes(body):
        if inner.op_type != "SequenceInsert" or not is_default(inner) or len(inner.inputs) < 2:
            continue
        if inner.inputs[0] not in versions:
            continue  # (an insert into another list)
        tensor = inner.inputs[1]
        if tensor is None:
            return None
        if tensor in known:
            type_, shape = known[tensor]
        elif tensor.graph is not None and tensor.graph is not body and not _inside(tensor, body):
            type_, shape = tensor.type, scope.shapes.shape(tensor)
        else:
            return None
        if not stable(ctx, shape) or not isinstance(type_, ir.TensorType) or shape is None:
            return None
        if found is not None and (not same_shape(found[0], shape) or found[1] != type_.dtype):
            return None
        if dtype is not None and type_.dtype != dtype:
            return None
        found = (shape, type_.dtype)
    return found


def _inside(value: ir.Value, body: ir.Graph) -> bool:
    return any(value in inner.outputs for inner in graph_nodes(body))


def empty_of(ctx: Context, scope: Scope, node: ir.Node, element: Element) -> ir.Value | None:
    """No rows of ``element``'s shape, before ``node``: a ConstantOfShape of its dims, numbers
    or read off the main graph's inputs that name them (None when neither can be done)."""
    shape, dtype = element
    emit = ctx.edits.emitter(scope, node)
    rows = empty_rows(emit, shape, dtype, None)
    if rows is not None or not scope.path.startswith("main") or dtype == ir.DataType.STRING:
        return rows  # (ConstantOfShape makes no strings)
    parts: list[ir.Value] = [emit.int64s([0])]
    for dim in shape:
        if isinstance(dim, int):
            parts.append(emit.int64s([dim]))
            continue
        cap = cap_of(dim)  # (min(name, cap): the named size, capped)
        name = cap[0] if cap is not None else getattr(dim, "value", None) or ""
        found = ctx.facts.dim_sources.get(name)
        if found is None:
            return None
        dims = emit.op("Shape", [found[0]])
        if cap is not None:  # (every dim capped: the one gathered is min(name, cap))
            dims = emit.op("Min", [dims, emit.int64s([cap[1]])])
        dims.type, dims.shape = (
            ir.TensorType(ir.DataType.INT64),
            ir.Shape([len(found[0].shape or ())]),
        )
        size = emit.op("Gather", [dims, emit.int64s([found[1]])], axis=0)
        size.type, size.shape = ir.TensorType(ir.DataType.INT64), ir.Shape([1])
        parts.append(size)
    target = emit.concat(parts, 0)
    zero = ir.tensor(np.zeros((1,), dtype=dtype.numpy()))
    rows = emit.op("ConstantOfShape", [target], value=zero)
    rows.type, rows.shape = ir.TensorType(dtype), ir.Shape([0, *shape])
    return rows


def _element(ctx: Context, scope: Scope, node: ir.Node, body: ir.Graph, j: int) -> Carried | str:
    """The list carried as value ``j`` as one tensor (the loop's initial value), its element
    shape and dtype, and the fewest rows it has; why not when these cannot be proven or built."""
    initial = node.inputs[2 + j]
    known = ctx.facts.values.get(initial) if initial is not None else None
    if isinstance(known, StaticSequence) and not known.elements:
        inserted = _inserted_element(ctx, scope, node, body, j, known.dtype)
        if inserted is None:
            return "it starts empty and what the body adds has no provable shape"
        rows = empty_of(ctx, scope, node, inserted)
        return (
            (rows, inserted, 0) if rows is not None else "no empty tensor of its shape can be made"
        )
    st = stacked_of(ctx, initial, scope, node)
    if isinstance(st, Reason):
        return str(st)
    if st.dtype is None or not stable(ctx, st.element):
        return "its element shape is not the same wherever it is met"
    return st.tensor, (st.element, st.dtype), st.least


def _uses_ok(node: ir.Node, lists: Mapping[int, object]) -> bool:
    """Whether everything that reads the final lists is an ONNX op or a graph output (an op
    of another domain keeps its inputs as they are, so it would keep the old Loop; what
    inlined copies return is held as a graph output would be)."""
    return all(
        is_default(use.node) or is_hold(use.node) for j in lists for use in node.outputs[j].uses()
    )


def _clear_guesses(ctx: Context, scope: Scope, node: ir.Node, copy: ir.Graph) -> None:
    """Declared shapes inside the copy are an exporter's guesses: cleared, then the body's own
    values get what induction proves."""
    for inner in graph_nodes(copy):
        for out in inner.outputs:
            out.shape = None
    known, _ = induction(ctx, scope, node, copy)
    for value, (type_, shape) in known.items():
        if value.producer() is not None and value.graph is copy:
            value.type = value.type or type_
            value.shape = shape


def carry_stacked(ctx: Context, node: ir.Node, scope: Scope, body: ir.Graph) -> bool:
    """Carry each list the loop carries as one tensor (see the module docstring)."""
    carried = len(node.inputs) - 2
    mark = ctx.edits.checkpoint()  # (what planning builds goes too when the copy is dropped)
    lists: dict[int, Carried] = {}
    for j in range(carried):
        initial = node.inputs[2 + j]
        if initial is None or not isinstance(body.inputs[2 + j].type, ir.SequenceType | None):
            continue
        held = isinstance(ctx.facts.values.get(initial), StaticSequence | StackedSequence)
        typed = (initial.type, body.inputs[2 + j].type)
        if not held and not any(isinstance(t, ir.SequenceType) for t in typed):
            continue
        found = _element(ctx, scope, node, body, j)
        if isinstance(found, str):
            _why(ctx, node, found)
        elif written_back_unloadable(node.outputs[j], found[1][1], found[1][0]):
            text = (
                f"a list of {found[1][1]} read as a list after the loop could only be written "
                "back by a SplitToSequence ONNX Runtime has no kernel for"
            )
            _why(ctx, node, text)
        else:
            lists[j] = found
    if not lists or not _uses_ok(node, lists):
        if lists:
            _why(ctx, node, "the final list is read by an op of another domain")
        ctx.edits.rollback(mark)
        return False
    if any(node.outputs[j].is_graph_output() for j in lists) and not any(
        n.op_type in SEQUENCE_OPS and is_default(n) for n in graph_nodes(body)
    ):
        # the body edits no list, and a list out is a graph output: it would only be written
        # back by a SplitToSequence, one sequence op more
        _why(ctx, node, "nothing to gain: the body edits no list and the list is a graph output")
        ctx.edits.rollback(mark)
        return False
    over = ctx.budget.spend(*cost_of(body), "carrying the list as one tensor")
    if over is not None:
        _why(ctx, node, str(over))
        ctx.edits.rollback(mark)
        return False
    copy = body.clone(allow_outer_scope_values=True)
    ctx.edits.record_clone(copy, body)
    _clear_guesses(ctx, scope, node, copy)
    olds: dict[int, ir.Value] = {}
    copy_inputs = list(copy.inputs)
    for j, (_, (shape, dtype), least) in lists.items():
        old = copy.inputs[2 + j]
        rows = ir.Value(
            name=f"{old.name or 'list'}_rows",
            type=ir.TensorType(dtype),
            shape=ir.Shape([ir.SymbolicDim(None), *shape]),
        )
        copy_inputs[2 + j] = rows
        olds[j] = old
        ctx.facts.values[old] = StackedSequence(rows, ir.SymbolicDim(None), shape, dtype, least)
    ctx.edits.shape_body(copy, BodyForm(inputs=copy_inputs))
    unloadable = len(ctx.edits.unloadable)
    ctx.walk.rewalk(copy, scope, node, "body")
    results: dict[int, StackedSequence] = {}
    outputs = list(copy.outputs)
    for j, (_, (shape, dtype), _) in lists.items():
        st = ctx.facts.stacked(copy.outputs[1 + j])
        if st is not None and same_shape(st.element, shape) and st.dtype == dtype:
            results[j] = st
            outputs[1 + j] = st.tensor
    ctx.edits.shape_body(copy, BodyForm(outputs=outputs))
    ctx.edits.sweep(copy)
    if len(ctx.edits.unloadable) > unloadable:  # a list in the body written back so
        _why(ctx, node, "the body would write a list back by a SplitToSequence ONNX Runtime lacks")
        _drop_copy(ctx, copy, olds, mark)
        return False
    if len(results) != len(lists) or any(old.uses() for old in olds.values()):
        # a sequence op on a list stayed (or the body returns it unlike): drop the copy
        stayed = [use.node for old in olds.values() for use in old.uses()]
        cause = next((n for n in stayed if n in ctx.facts.reasons), None)
        _why(
            ctx,
            node,
            f"{cause.op_type}: {ctx.facts.reasons[cause]}"
            if cause is not None
            else "the body does not return the list as one tensor of its element shape",
        )
        _drop_copy(ctx, copy, olds, mark)
        return False
    seeds = {
        j: (ir.TensorType(dtype), ir.Shape([ir.SymbolicDim(None), *shape]))
        for j, (_, (shape, dtype), _) in lists.items()
    }
    errors = rejected(ctx, scope, node, copy, seeds)
    if errors and not rejected(ctx, scope, node, body, {}):
        # an element shape now declared meets a read that cannot take it (the original fails
        # there at run time, or never gets there): the checker would refuse the whole model
        _why(ctx, node, f"onnx's inference would reject the body as one tensor ({errors[0]})")
        _drop_copy(ctx, copy, olds, mark)
        return False
    _apply(ctx, node, scope, copy, lists, results)
    ctx.edits.discard(body)  # the replaced body must stop using outer values
    return True


def _drop_copy(
    ctx: Context, copy: ir.Graph, olds: Mapping[int, ir.Value], mark: Checkpoint
) -> None:
    """Give up the copy: its inputs back as they were, what the walk of it built rolled
    back, its nodes dropped."""
    inputs = list(copy.inputs)
    for j, old in olds.items():
        inputs[2 + j] = old
    ctx.edits.shape_body(copy, BodyForm(inputs=inputs))
    ctx.edits.rollback(mark)
    ctx.edits.discard(copy)


def _why(ctx: Context, node: ir.Node, text: str) -> None:
    ctx.facts.loop_refused(node, "stacked", text)


def _apply(
    ctx: Context,
    node: ir.Node,
    scope: Scope,
    copy: ir.Graph,
    lists: dict[int, Carried],
    results: dict[int, StackedSequence],
) -> None:
    inputs = list(node.inputs)
    for j, (rows, _, _) in lists.items():
        inputs[2 + j] = rows
    moved = {k: k for k in range(len(node.outputs)) if k not in lists}
    plan = Rebuild(node, inputs, {"body": (copy, BodyForm())}, len(node.outputs), moved)
    new = ctx.edits.apply(plan, scope)
    for k, old in enumerate(node.outputs):
        if k in lists:
            fresh = new.outputs[k]
            (shape, dtype), least = lists[k][1], lists[k][2]
            if results[k].least < least:  # the body may shrink it: zero trips keep least
                least = 0
            fresh.type = ir.TensorType(dtype)
            fresh.shape = ir.Shape([ir.SymbolicDim(None), *shape])
            final = StackedSequence(fresh, ir.SymbolicDim(None), shape, dtype, least)
            ctx.facts.values[old] = final
    which = ", ".join(str(j) for j in lists)
    ctx.edits.applied("loop-carries-stacked", node, f"carried list(s) {which} as [n, *E] tensors")

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
    clear_declared_shapes,
    graph_nodes,
    is_default,
    is_hold,
)
from seqpasses.core.ops import SEQUENCE_OPS
from seqpasses.core.sequence import Reason, StackedSequence, StaticSequence
from seqpasses.transfer.common import written_back_unloadable
from seqpasses.transfer.loops.induction import induction, proven_in, rejected, stable
from seqpasses.transfer.loops.trials import walked_copy, with_outputs
from seqpasses.transfer.rows import empty_rows
from seqpasses.transfer.stacked import stacked_of
from seqpasses.walk.budget import cost_of
from seqpasses.walk.context import Context, Scope
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
    Stacked,
    Trial,
)

__all__ = ["carry_stacked", "empty_of", "versions"]

Element = tuple[ir.Shape, ir.DataType]
Carried = tuple[ir.Value, Element, int]  # the initial tensor, its element, its fewest rows


def versions(ctx: Context, start: ir.Value) -> set[ir.Value]:
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


def _erases(ctx: Context, start: ir.Value) -> bool:
    """Whether the body erases an element of ``start`` (a list it carries) or of a list it
    makes of it."""
    return any(
        use.node.op_type == "SequenceErase" and use.idx == 0
        for value in versions(ctx, start)
        for use in value.uses()
    )


def _inserted_element(
    ctx: Context, scope: Scope, node: ir.Node, body: ir.Graph, j: int, dtype: ir.DataType | None
) -> Element | None:
    """The shape every tensor the body inserts into carried list ``j`` provably has (one for
    all), of the list's own element type ``dtype`` (when known)."""
    known, _ = induction(ctx, scope, node, body)
    found: Element | None = None
    made_of = versions(ctx, body.inputs[2 + j])
    for inner in graph_nodes(body):
        if inner.op_type != "SequenceInsert" or not is_default(inner) or len(inner.inputs) < 2:
            continue
        if inner.inputs[0] not in made_of:
            continue  # (an insert into another list)
        tensor = inner.inputs[1]
        if tensor is None:
            return None
        if tensor in known:
            type_, shape = known[tensor]
        elif tensor.graph is not None and tensor.graph is not body and not _inside(tensor, body):
            type_, shape = scope.shapes.known(tensor)
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
    emit = ctx.emitter(scope, node)
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
        int64, rank = ir.TensorType(ir.DataType.INT64), ir.Shape([len(found[0].shape or ())])
        dims = emit.op("Shape", [found[0]], type=int64, shape=rank)
        if cap is not None:  # (every dim capped: the one gathered is min(name, cap))
            dims = emit.op("Min", [dims, emit.int64s([cap[1]])], type=int64, shape=rank)
        at = [dims, emit.int64s([found[1]])]
        parts.append(emit.op("Gather", at, type=int64, shape=ir.Shape([1]), axis=0))
    target = emit.concat(parts, 0)
    zero = ir.tensor(np.zeros((1,), dtype=dtype.numpy()))
    none = ir.Shape([0, *shape])
    return emit.op("ConstantOfShape", [target], type=ir.TensorType(dtype), shape=none, value=zero)


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


def _lists(
    ctx: Context, node: ir.Node, scope: Scope, body: ir.Graph
) -> tuple[dict[int, Carried], list[tuple[ir.Node, str, str]]]:
    """The lists the loop carries that can be carried as one tensor each, by carried index,
    and why the others cannot."""
    lists: dict[int, Carried] = {}
    refused: list[tuple[ir.Node, str, str]] = []
    for j in range(len(node.inputs) - 2):
        initial = node.inputs[2 + j]
        if initial is None or not isinstance(body.inputs[2 + j].type, ir.SequenceType | None):
            continue
        held = isinstance(ctx.facts.values.get(initial), StaticSequence | StackedSequence)
        typed = (initial.type, body.inputs[2 + j].type)
        if not held and not any(isinstance(t, ir.SequenceType) for t in typed):
            continue
        found = _element(ctx, scope, node, body, j)
        if isinstance(found, str):
            refused.append((node, "stacked", found))
        elif written_back_unloadable(node.outputs[j], found[1][1], found[1][0]):
            text = (
                f"a list of {found[1][1]} read as a list after the loop could only be written "
                "back by a SplitToSequence ONNX Runtime has no kernel for"
            )
            refused.append((node, "stacked", text))
        else:
            lists[j] = found
    return lists, refused


def carry_stacked(ctx: Context, node: ir.Node, scope: Scope, body: ir.Graph) -> Proposal:
    """Carry each list the loop carries as one tensor (see the module docstring): a trial on a
    copy of the body; else (and for each list that cannot be) why, and the loop goes on to
    the next patterns (:class:`Next`)."""
    lists, refused = _lists(ctx, node, scope, body)

    def why(text: str) -> tuple[ir.Node, str, str]:
        return (node, "stacked", text)

    def otherwise(reason: Reason) -> Proposal:
        return Next(node=node, said=Said(refused=[*refused, why(str(reason))]))

    def refuse(text: str) -> Proposal:  # (what planning built goes too)
        return Trial.failed(Reason("unknown-sequence", text), otherwise)

    if not lists:  # (each list said why already)
        nothing = Reason("unknown-sequence", "")
        return Trial.failed(nothing, lambda _: Next(node=node, said=Said(refused=refused)))
    if not _uses_ok(node, lists):
        return refuse("the final list is read by an op of another domain")
    if any(node.outputs[j].is_graph_output() for j in lists) and not any(
        n.op_type in SEQUENCE_OPS and is_default(n) for n in graph_nodes(body)
    ):
        # the body edits no list, and a list out is a graph output: it would only be written
        # back by a SplitToSequence, one sequence op more
        return refuse("nothing to gain: the body edits no list and the list is a graph output")
    over = ctx.budget.afford(*cost_of(body), "carrying the list as one tensor")
    if over is not None:
        return refuse(str(over))
    copy = body.clone(allow_outer_scope_values=True)
    clear_declared_shapes(copy)  # (a clone of the transfer's own, in no graph yet)
    # (what induction proves once the exporter's guesses, cleared above, are gone)
    declare = proven_in(induction(ctx, scope, node, copy)[0], copy)
    olds: dict[int, ir.Value] = {}
    values: dict[ir.Value, AbstractValue] = {}
    copy_inputs = list(copy.inputs)
    assumed: dict[int, int] = {}  # the fewest rows each list has at every iteration
    for j, (_, (shape, dtype), least) in lists.items():
        old = copy.inputs[2 + j]
        rows = ir.Value(
            name=f"{old.name or 'list'}_rows",
            type=ir.TensorType(dtype),
            shape=ir.Shape([ir.SymbolicDim(None), *shape]),
        )
        copy_inputs[2 + j] = rows
        olds[j] = old
        # (the rows it starts with hold at every iteration only where the body never erases
        # one; what the body returns is checked to hold as many below)
        assumed[j] = 0 if _erases(ctx, body.inputs[2 + j]) else least
        values[old] = StackedSequence(rows, ir.SymbolicDim(None), shape, dtype, assumed[j])
    unloadable = len(ctx.edits.unloadable)

    def walked(made: Made) -> Proposal | Reason:
        results: dict[int, StackedSequence] = {}
        copy_outputs = list(copy.outputs)
        for j, (_, (shape, dtype), _) in lists.items():
            st = ctx.facts.stacked(copy.outputs[1 + j])
            if st is not None and st.least < assumed[j]:
                return Reason("unknown-sequence", "the body may return the list shorter")
            if st is not None and same_shape(st.element, shape) and st.dtype == dtype:
                results[j] = st
                copy_outputs[1 + j] = st.tensor
        return with_outputs(
            copy,
            copy_outputs,
            lambda _: _kept(
                ctx, node, scope, (body, copy), lists, results, olds, (unloadable, refused)
            ),
        )

    return walked_copy(node, body, copy, copy_inputs, values, walked, otherwise, declare)


def _kept(
    ctx: Context,
    node: ir.Node,
    scope: Scope,
    graphs: tuple[ir.Graph, ir.Graph],
    lists: dict[int, Carried],
    results: dict[int, StackedSequence],
    olds: Mapping[int, ir.Value],
    before: tuple[int, list[tuple[ir.Node, str, str]]],
) -> Proposal | Reason:
    """The walked copy as the loop's body (``graphs``: the body and its copy), when every
    list in it is one tensor; else why not (the trial is undone). ``before``: how many
    write-backs ONNX Runtime cannot load there were before the walk of the copy, and why
    other lists were not carried so."""
    body, copy = graphs
    unloadable, refused = before
    if len(ctx.edits.unloadable) > unloadable:  # a list in the body written back so
        text = "the body would write a list back by a SplitToSequence ONNX Runtime lacks"
        return Reason("unknown-sequence", text)
    if len(results) != len(lists) or any(old.uses() for old in olds.values()):
        # a sequence op on a list stayed (or the body returns it unlike): drop the copy
        stayed = [use.node for old in olds.values() for use in old.uses()]
        cause = next((n for n in stayed if n in ctx.facts.reasons), None)
        text = (
            f"{cause.op_type}: {ctx.facts.reasons[cause]}"
            if cause is not None
            else "the body does not return the list as one tensor of its element shape"
        )
        return Reason("unknown-sequence", text)
    seeds = {
        j: (ir.TensorType(dtype), ir.Shape([ir.SymbolicDim(None), *shape]))
        for j, (_, (shape, dtype), _) in lists.items()
    }
    errors = rejected(ctx, scope, node, copy, seeds)
    if errors and not rejected(ctx, scope, node, body, {}):
        # an element shape now declared meets a read that cannot take it (the original fails
        # there at run time, or never gets there): the checker would refuse the whole model
        text = f"onnx's inference would reject the body as one tensor ({errors[0]})"
        return Reason("unknown-sequence", text)
    loop_inputs = list(node.inputs)
    for j, (rows, _, _) in lists.items():
        loop_inputs[2 + j] = rows
    moved = {k: k for k in range(len(node.outputs)) if k not in lists}
    plan = Rebuild(node, loop_inputs, {"body": (copy, BodyForm())}, len(node.outputs), moved)
    held: dict[ir.Value, Listed | Stacked] = {}
    for k, old in enumerate(node.outputs):
        if k in lists:
            (shape, dtype), least = lists[k][1], lists[k][2]
            if results[k].least < least:  # the body may shrink it: zero trips keep least
                least = 0
            held[old] = Stacked(k, ir.SymbolicDim(None), shape, dtype, least)
    which = ", ".join(str(j) for j in lists)
    detail = f"carried list(s) {which} as [n, *E] tensors"
    return Restructure(
        plan=plan,
        held=held,
        # the replaced body must stop using outer values
        build=Build(discard=[body]),
        said=Said(refused=refused),
        records=[Record("loop-carries-stacked", detail)],
    )

"""What holds for every iteration of a Loop: shapes by induction, iteration counts.

TorchScript declares guesses for the shapes inside loop bodies (often of the first iteration
only), so they are not trusted: each carried tensor is assumed to keep its initial shape, the
body is inferred afresh under that assumption, and every assumption its own outputs do not
reproduce is widened (the dims that differ left open, the rank kept where it holds) or
dropped, until the assumptions hold (:func:`induction`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import onnx_ir as ir

from seqpasses.core.dims import contradicts, fill_shape, same_dim, same_shape
from seqpasses.core.shapes import TypeAndShape
from seqpasses.transfer.common import stable
from seqpasses.walk.context import Context, Scope
from seqpasses.walk.outcomes import Declared

__all__ = [
    "appended",
    "appended_shape",
    "carried_guesses",
    "carried_shapes",
    "declared_ones",
    "induction",
    "iterations",
    "proven_in",
    "rejected",
    "same",
    "scan_shapes",
    "stable",
    "stays_true",
]


def same(a: TypeAndShape | None, b: TypeAndShape) -> bool:
    """Provably the same type and shape."""
    return a is not None and a[0] == b[0] and same_shape(a[1], b[1])


def _body_shapes(
    ctx: Context,
    scope: Scope,
    body: ir.Graph,
    carried: list[TypeAndShape | None],
    errors: list[str] | None = None,
) -> dict[ir.Value, TypeAndShape]:
    """Types and shapes of the body's values, inferred afresh from the given carried inputs
    (declared shapes inside the body are not trusted: exporters write guesses there)."""
    known: dict[ir.Value, TypeAndShape] = {
        body.inputs[0]: (ir.TensorType(ir.DataType.INT64), ir.Shape([])),
        body.inputs[1]: (ir.TensorType(ir.DataType.BOOL), ir.Shape([])),
    }
    for value, given in zip(body.inputs[2:], carried, strict=True):
        known[value] = given if given is not None else (value.type, None)
    for node in body:
        inputs: list[TypeAndShape | None] = []
        for v in node.inputs:
            if v is None:
                inputs.append(None)
            elif v in known:
                inputs.append(known[v])
            elif v.graph is body and v.producer() is not None:
                inputs.append((None, None))
            else:  # an initializer, or from an enclosing scope: the same every iteration
                inputs.append(scope.shapes.known(v))  # (its type too, when it is missing)
        inferred = scope.shapes.infer(node, inputs, errors, known)
        for out, (type_, shape) in zip(node.outputs, inferred, strict=True):
            # what seqpasses proved itself (an inner loop's scan output) is kept
            proven = out in ctx.facts.proven and shape is None
            # (a declared type holds where a declared shape may not: an inner loop's list)
            known[out] = (out.type, out.shape) if proven else (type_ or out.type, shape)
    return known


def induction(
    ctx: Context,
    scope: Scope,
    node: ir.Node,
    body: ir.Graph,
    initials: Sequence[ir.Value | None] | None = None,
) -> tuple[dict[ir.Value, TypeAndShape], list[TypeAndShape | None]]:
    """The body's types and shapes, and the carried values proven to keep their initial shape
    (``initials``: the carried values' initial values, when not ``node``'s: a body being
    remade with other carried values)."""
    carried: list[TypeAndShape | None] = []
    for initial in node.inputs[2:] if initials is None else initials:
        if initial is None:
            carried.append(None)
            continue
        type_, shape = scope.shapes.known(initial)
        usable = isinstance(type_, ir.TensorType) and shape is not None
        carried.append((type_, _steady(ctx, shape)) if usable and shape is not None else None)
    while True:
        known = _body_shapes(ctx, scope, body, carried)
        wider = [
            _widened(given, known.get(body.outputs[1 + j])) if given is not None else None
            for j, given in enumerate(carried)
        ]
        if all(w is g for w, g in zip(wider, carried, strict=True)):
            return known, carried
        carried = wider


def _steady(ctx: Context, shape: ir.Shape) -> ir.Shape:
    """``shape`` as an assumption that can hold at every iteration: a dim that is not the
    same wherever it is met (a name only onnx's inference gave) is open."""
    return ir.Shape([d if stable(ctx, ir.Shape([d])) else ir.SymbolicDim(None) for d in shape])


def _widened(given: TypeAndShape, found: TypeAndShape | None) -> TypeAndShape | None:
    """What a carried tensor assumed ``given`` can be assumed after the body gave ``found``:
    ``given`` itself where it holds (each dim the same, or assumed open); else its dims
    where both agree, open where they differ (a value that grows keeps its rank); None where
    the type, the rank or the shape is not known."""
    if found is None or found[0] != given[0] or given[1] is None or found[1] is None:
        return None
    if len(given[1]) != len(found[1]):
        return None
    pairs = list(zip(given[1], found[1], strict=True))
    if all(same_dim(g, f) or _open(g) for g, f in pairs):
        return given
    return given[0], ir.Shape([g if same_dim(g, f) else ir.SymbolicDim(None) for g, f in pairs])


def _open(dim: object) -> bool:
    return isinstance(dim, ir.SymbolicDim) and dim.value is None


def proven_in(
    known: Mapping[ir.Value, TypeAndShape], graph: ir.Graph, untyped_only: bool = False
) -> dict[ir.Value, Declared]:
    """What the values ``graph``'s nodes make are declared, from what induction proves of
    them (``known``): all of them, or (``untyped_only``) those with no type declared."""
    return {
        value: (value.type or type_, shape)
        for value, (type_, shape) in known.items()
        if value.producer() is not None
        and value.graph is graph
        and not (untyped_only and value.type is not None)
    }


def rejected(
    ctx: Context,
    scope: Scope,
    node: ir.Node,
    body: ir.Graph,
    seeds: Mapping[int, TypeAndShape | None],
) -> list[str]:
    """What onnx's inference rejects in ``body`` (incompatible dims: the checker would refuse
    the model), from the carried values induction proves and ``seeds`` (carried value index
    -> a type and shape known to hold every iteration)."""
    _, carried = induction(ctx, scope, node, body)
    given = [seeds.get(j, found) for j, found in enumerate(carried)]
    errors: list[str] = []
    _body_shapes(ctx, scope, body, given, errors)
    return errors


def appended(
    ctx: Context, scope: Scope, node: ir.Node, body: ir.Graph, tensor: ir.Value
) -> TypeAndShape:
    """The type and shape induction gives ``tensor`` (an outer value: its own); its rank holds
    every iteration, its dims only where :func:`stable`."""
    if tensor.graph is not body:
        return scope.shapes.known(tensor)
    known, _ = induction(ctx, scope, node, body)
    type_, shape = known.get(tensor, (None, None))
    return tensor.type or type_, shape


def appended_shape(
    ctx: Context, scope: Scope, node: ir.Node, body: ir.Graph, tensor: ir.Value
) -> TypeAndShape | None:
    """The type and shape ``tensor`` has in every iteration, proven by induction, or None."""
    found = appended(ctx, scope, node, body, tensor)
    return found if stable(ctx, found[1]) else None


def carried_shapes(
    node: ir.Node, carried: list[TypeAndShape | None], body: ir.Graph | None = None
) -> dict[ir.Value, Declared]:
    """What the final values of carried tensors that keep their shape (``carried``, from
    :func:`induction`) are declared (``h`` of an RNN loop), in place of a missing or made-up
    declared one; with ``body``, what the body's carried inputs and outputs are declared
    too (the same shape: it holds at every iteration)."""
    found: dict[ir.Value, Declared] = {}
    for j, proven in enumerate(carried):
        if proven is None or proven[1] is None:
            continue
        values = [node.outputs[j]] if j < len(node.outputs) else []
        if body is not None and 2 + j < len(body.inputs) and 1 + j < len(body.outputs):
            values += [body.inputs[2 + j], body.outputs[1 + j]]
        for value in values:
            if contradicts(value.shape, proven[1]):
                continue
            shape = fill_shape(value.shape, proven[1], numbers_win=True)
            found[value] = (value.type or proven[0], shape)
    return found


def stays_true(ctx: Context, value: ir.Value, cond_in: ir.Value) -> bool:
    """Whether the body's condition output is provably true (the loop has no break)."""
    while True:
        if value is cond_in or ctx.is_true(value):
            return True
        producer = value.producer()
        if producer is None or producer.op_type != "Identity" or producer.inputs[0] is None:
            return False
        value = producer.inputs[0]


def iterations(
    ctx: Context, scope: Scope, node: ir.Node, body: ir.Graph
) -> int | ir.SymbolicDim | None:
    """How many iterations the loop runs, as a dim, when that is provably its trip count (the
    condition stays true): a number, or a dim of a graph input (``x.size(1)``)."""
    cond = node.inputs[1] if len(node.inputs) > 1 else None
    if cond is not None and not ctx.is_true(cond):
        return None
    if not stays_true(ctx, body.outputs[0], body.inputs[1]):
        return None
    trip = node.inputs[0] if node.inputs else None
    if trip is None:
        return None
    count, _ = ctx.const_int(trip)
    if count is not None:
        return max(count, 0)
    return _shape_dim(ctx, scope, trip)


def _shape_dim(ctx: Context, scope: Scope, value: ir.Value) -> int | ir.SymbolicDim | None:
    """The dim a scalar holds when it is ``Gather(Shape(v), k)`` (through int64 Casts and
    Identities) and that dim is a number or a name the graph's inputs give."""
    producer = value.producer()
    while producer is not None and (
        producer.op_type == "Identity"
        or (producer.op_type == "Cast" and producer.attributes.get_int("to") == ir.DataType.INT64)
    ):
        if producer.inputs[0] is None:
            return None
        producer = producer.inputs[0].producer()
    if producer is None or producer.op_type != "Gather" or producer.attributes.get_int("axis"):
        return None
    data, index = producer.inputs[0], producer.inputs[1]
    shape_node = data.producer() if data is not None else None
    if (
        index is None
        or shape_node is None
        or shape_node.op_type != "Shape"
        or shape_node.inputs[0] is None
        or shape_node.attributes.get_int("start")
        or "end" in shape_node.attributes
    ):
        return None
    k, _ = ctx.const_int(index)
    shape = scope.shapes.shape(shape_node.inputs[0])
    if k is None or shape is None or not -len(shape) <= k < len(shape):
        return None
    dim = shape[k]
    return dim if stable(ctx, ir.Shape([dim])) else None


def declared_ones(value: ir.Value) -> tuple[int, ...] | None:
    """The shape a body input declares, when it is all ones (``[]`` or ``[1]``): what the
    value bound in its place must keep (a Slice reading a ``[1]`` counter needs a 1-D start)."""
    shape = value.shape
    if shape is None or not all(d == 1 for d in shape):
        return None
    return tuple(1 for _ in shape)


def scan_shapes(
    ctx: Context, scope: Scope, node: ir.Node, body: ir.Graph
) -> dict[ir.Value, Declared]:
    """What a Loop's carried tensors and its scan outputs are declared: what induction proves
    (with what a declaration adds where the proof leaves a dim open), so that what reads them
    (a split of the stacked values, say) can be lowered."""
    known, proven = induction(ctx, scope, node, body)
    found = carried_shapes(node, proven)
    carried = len(node.inputs) - 2
    runs = iterations(ctx, scope, node, body)
    for index, value in enumerate(body.outputs[1 + carried :]):
        out = node.outputs[carried + index] if carried + index < len(node.outputs) else None
        if out is None:
            continue
        if value.graph is body:
            type_, shape = known.get(value, (None, None))
        else:  # an outer value, the same every iteration
            type_, shape = scope.shapes.known(value)
        if shape is None:
            continue
        stacked = ir.Shape([ir.SymbolicDim(None) if runs is None else runs, *_steady(ctx, shape)])
        if contradicts(out.shape, stacked):
            continue  # (a declaration at odds with the proof: left to the declaration repair)
        if out.shape is not None and len(out.shape) == len(stacked):
            # (a number declared where the proof leaves a dim open: the model's, or onnx's)
            stacked = ir.Shape(
                [d if isinstance(d, int) else p for p, d in zip(stacked, out.shape, strict=True)]
            )
        found[out] = (out.type or value.type or type_, stacked)
    return found


def carried_guesses(
    ctx: Context, scope: Scope, node: ir.Node, body: ir.Graph
) -> dict[ir.Value, Declared]:
    """What the body's carried inputs are declared in place of an exporter's guesses: a
    list's element shape is forgotten (the first iteration's, or rank 0 where the exporter's
    inference could not tell); a tensor's is the shape induction proves from the loop's
    initial value, or none. Trusted, a guess would reach what a rewrite declares, such as an
    If's new outputs, which ONNX Runtime enforces where it only tolerated the guess."""
    found: dict[ir.Value, Declared] = {}
    proven: list[TypeAndShape | None] | None = None
    for j, value in enumerate(body.inputs[2:]):
        if isinstance(value.type, ir.SequenceType):
            if value.shape is not None:
                found[value] = (value.type, None)
            continue
        if proven is None:
            proven = induction(ctx, scope, node, body)[1]
        given = proven[j] if j < len(proven) else None
        shape = given[1] if given is not None else None
        if shape is None and value.shape is None:
            continue  # (nothing declared, nothing proven)
        if shape is None or value.shape is None or not same_shape(shape, value.shape):
            type_ = value.type or (given[0] if given is not None else None)
            found[value] = (type_, shape)
    return found

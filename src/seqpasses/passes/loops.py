"""Loops that append to a list become loops with a scan output.

``l = []; for ...: l.append(x)`` exports to a ``Loop`` carrying a sequence that starts static
(usually ``SequenceEmpty``) and grows by one ``SequenceInsert`` at the back per iteration. When
every appended element provably has the same shape each iteration (its dims are numbers or
symbols of the graph's inputs) and every use of the final list after the loop is one of the
reads below, the carried sequence is dropped and the appended tensor becomes a scan output
``Y`` of shape ``[K, ...]`` (``K`` = iterations run, known only at run time if need be):

1. ``ConcatFromSequence(new_axis=1, axis=0)`` -> ``Y`` (other axes: ``Transpose(Y)``);
2. ``ConcatFromSequence(new_axis=0, axis=a)`` -> ``Reshape`` merging ``K`` into axis ``a``
   (after a ``Transpose`` for ``a > 0``; the dims after ``a`` must be numbers);
3. ``SequenceLength`` -> ``Gather(Shape(Y), 0)`` (+ the initial length);
4. ``SequenceAt(const p)`` -> an initial element, or ``Gather(Y, p - initial length)``.

Initial elements, if any, are concatenated in front. With zero iterations and no initial
element the original ``ConcatFromSequence`` fails at run time; the rewritten model returns an
empty tensor instead (README, "Loops").
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import onnx_ir as ir

from seqpasses.dims import contradicts, fill_shape
from seqpasses.emit import Emitter
from seqpasses.passes.control import drop_subgraphs, inline_graph
from seqpasses.passes.fold import TRANSFER, UNROLLS, Folder, Scope, label
from seqpasses.report import SEQUENCE_OPS
from seqpasses.sequence import StaticSequence
from seqpasses.shapes import TypeAndShape

__all__: list[str] = []

_READERS = frozenset({"ConcatFromSequence", "SequenceLength", "SequenceAt"})


def _stable(f: Folder, shape: ir.Shape | None) -> bool:
    """Whether ``shape`` is the same wherever it is met: numbers and the inputs' dim names."""
    if shape is None:
        return False
    return all(
        isinstance(d, int)
        or (isinstance(d, ir.SymbolicDim) and d.value is not None and d.value in f.input_dims)
        for d in shape
    )


def _body_shapes(
    f: Folder, scope: Scope, body: ir.Graph, carried: list[TypeAndShape | None]
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
            elif v.graph is body:
                inputs.append((None, None))
            else:  # from an enclosing scope: its shape holds for every iteration
                shape = scope.shapes.shape(v)  # (infers the type too, when it is missing)
                inputs.append((v.type, shape))
        inferred = scope.shapes.infer(node, inputs)
        for out, (type_, shape) in zip(node.outputs, inferred, strict=True):
            # what seqpasses proved itself (an inner loop's scan output) is kept
            proven = out in f.proven and shape is None
            known[out] = (out.type, out.shape) if proven else (type_, shape)
    return known


def _appended_shape(
    f: Folder, scope: Scope, node: ir.Node, body: ir.Graph, tensor: ir.Value
) -> ir.Shape | None:
    """The shape ``tensor`` has in every iteration, proven by induction (:func:`_induction`),
    or None."""
    if tensor.graph is not body:
        shape = scope.shapes.shape(tensor)
        return shape if _stable(f, shape) else None
    known, _ = _induction(f, scope, node, body)
    type_, shape = known.get(tensor, (None, None))
    if tensor.type is None:
        tensor.type = type_
    return shape if _stable(f, shape) else None


def _induction(
    f: Folder, scope: Scope, node: ir.Node, body: ir.Graph
) -> tuple[dict[ir.Value, TypeAndShape], list[TypeAndShape | None]]:
    """The body's types and shapes, and the carried values proven to keep their initial shape.

    Each loop-carried tensor is assumed to keep its initial shape; the body is inferred under
    that assumption, and an assumption its own output does not reproduce is dropped (that
    value's shape is then unknown) until the assumptions hold.
    """
    carried: list[TypeAndShape | None] = []
    for initial in node.inputs[2:]:
        if initial is None:
            carried.append(None)
            continue
        shape = scope.shapes.shape(initial)
        usable = isinstance(initial.type, ir.TensorType) and _stable(f, shape)
        carried.append((initial.type, shape) if usable else None)
    while True:
        known = _body_shapes(f, scope, body, carried)
        broken = [
            j
            for j, given in enumerate(carried)
            if given is not None and not _same(known.get(body.outputs[1 + j]), given)
        ]
        if not broken:
            return known, carried
        for j in broken:
            carried[j] = None


def _give_carried_shapes(node: ir.Node, carried: list[TypeAndShape | None]) -> None:
    """Final values of carried tensors that keep their shape (``carried``, from
    :func:`_induction`) get it (``h`` of an RNN loop), in place of a missing or made-up
    declared one."""
    for out, proven in zip(node.outputs, carried, strict=False):
        if proven is None or proven[1] is None or contradicts(out.shape, proven[1]):
            continue
        out.type = out.type or proven[0]
        out.shape = fill_shape(out.shape, proven[1], numbers_win=True)


def _same(a: TypeAndShape | None, b: TypeAndShape) -> bool:
    if a is None or a[1] is None or b[1] is None or a[0] != b[0]:
        return False
    return [_dim_key(d) for d in a[1]] == [_dim_key(d) for d in b[1]]


def _dim_key(dim: object) -> object:
    return dim if isinstance(dim, int) else getattr(dim, "value", None) or object()


def _append_pattern(
    f: Folder, body: ir.Graph, j: int, ignore: set[ir.Node] | frozenset[ir.Node] = frozenset()
) -> tuple[ir.Node, ir.Value, bool] | None:
    """The SequenceInsert that grows carried value ``j`` by one element per iteration, the
    tensor it inserts, and whether it inserts at the front (constant position 0:
    ``l.insert(0, x)``) rather than at the back."""
    carried_in = body.inputs[2 + j]
    carried_out = body.outputs[1 + j]
    insert = carried_out.producer()
    if insert is None or insert.op_type != "SequenceInsert" or insert.domain not in ("", "ai.onnx"):
        return None
    if insert.inputs[0] is not carried_in:
        return None
    position = insert.inputs[2] if len(insert.inputs) > 2 else None
    front = position is not None
    if front and f.const_int(position)[0] != 0:  # type: ignore[arg-type]
        return None
    if (
        len([u for u in carried_in.uses() if u.node not in ignore]) != 1
        or carried_out.uses()
        or sum(o is carried_out for o in body.outputs) != 1
    ):
        return None
    tensor = insert.inputs[1]
    if tensor is None:
        return None
    return insert, tensor, front


def _why_not_append(body: ir.Graph, j: int) -> str:
    """Why carried sequence ``j`` is not grown by one append at the back per iteration."""
    carried_in, carried_out = body.inputs[2 + j], body.outputs[1 + j]
    insert = carried_out.producer()
    if carried_out is carried_in:
        return "the body passes the list through unchanged"
    if insert is not None and insert.op_type == "SequenceInsert":
        if len(insert.inputs) > 2 and insert.inputs[2] is not None:
            return "the body inserts at a position other than the back or a constant 0"
        readers = [u.node for u in carried_in.uses() if u.node is not insert]
        if insert.inputs[0] is carried_in and readers:
            return f"the body also reads the list ({label(readers[0])})"
    if insert is not None and insert.op_type == "If":
        return f"the list grows inside {label(insert)} (a conditional append)"
    if insert is None or insert.graph is not body:
        return "the list is changed inside a nested graph (an If branch or an inner loop)"
    return f"the body changes the list with {label(insert)}, not one append at the back"


def _reader_ok(f: Folder, reader: ir.Node, shape: ir.Shape, initial: int) -> str:
    rank = len(shape)
    if reader.op_type == "SequenceLength":
        return ""
    if reader.op_type == "SequenceAt":
        position = (
            f.const_int(reader.inputs[1])
            if len(reader.inputs) > 1 and reader.inputs[1]
            else (None, "no position")
        )
        if position[0] is None:
            return position[1]
        if position[0] < 0 and initial:
            return "negative SequenceAt position with initial elements"
        return ""
    new_axis = reader.attributes.get_int("new_axis", 0)
    if new_axis not in (0, 1):
        return f"new_axis {new_axis} is not 0 or 1"
    axis = reader.attributes.get_int("axis", 0)
    out_rank = rank + 1 if new_axis else rank
    if not -out_rank <= axis < out_rank:
        return f"axis {axis} out of range"
    axis = axis + out_rank if axis < 0 else axis
    if not new_axis and not _dims_ok_for_reshape(shape, axis):
        return "dims after the concat axis are not numbers"
    return ""


def _loop(f: Folder, node: ir.Node, scope: Scope) -> bool:
    """Unroll a short constant-trip-count loop that reads a sequence, else append -> scan."""
    if f.analyze_only:
        return False
    body_attr = node.attributes.get("body")
    if body_attr is None or body_attr.type != ir.AttributeType.GRAPH:
        return False
    body = body_attr.as_graph()
    carried = len(node.inputs) - 2
    appends = {
        found[0] for j in range(carried) if (found := _append_pattern(f, body, j)) is not None
    }
    reads = [n for n in _body_nodes(body) if n.op_type in SEQUENCE_OPS and n not in appends]
    append_only = not reads and any(f.static(v) is not None for v in node.inputs[2:])
    # append-only: scan outputs keep the graph small
    if (
        append_only
        and "loop-scan" not in f.options.disabled
        and _scan_outputs(f, node, scope, body)
    ):
        return True
    if reads or any(f.static(v) is not None for v in node.inputs[2:]):
        why = _unroll_blocker(f, node, body, scope.opset)
        if not why:
            why = _unroll(f, node, scope, body)
            if not why:
                return True
            # the walk of the body deferred reads at the loop counter to the unrolling
            f.no_unroll.add(node)
            f.rewalk(body, scope, node, "body")
        f.loop_reasons.setdefault(node, []).append(f"not unrolled: {why}")
        for read in reads:
            if read in f.reasons:
                f.reasons[read] = f"{f.reasons[read]}; {label(node)} not unrolled: {why}"
    if reads and "loop-scan" not in f.options.disabled:
        lifted = _lift_reads(f, node, scope, body)
        if lifted is not None:
            f.applied("loop-lift-reads", node, "reads of the list it appends to")
            node = lifted
        if _scan_outputs(f, node, scope, body) or lifted is not None:
            return True
    _infer_scan_shapes(f, node, scope, body)
    return False


def _lift_reads(f: Folder, node: ir.Node, scope: Scope, body: ir.Graph) -> ir.Node | None:
    """In a loop that appends one element per iteration to a list that starts static, the
    body's reads of that list become values it already has: ``len(l)`` -> ``n0 + i``,
    ``l[p]`` of an initial element -> that element, ``l[-1]`` -> the last element appended,
    carried as a new loop value. The list is then append-only and can become a scan output.
    Returns the Loop that replaces ``node`` (``node`` itself when no value was added), or None
    when there is nothing it can lift."""
    body_scope = Scope(
        body, f"{scope.path}/{node.name or node.op_type}.body", scope.opset, scope.shapes
    )
    carried = len(node.inputs) - 2
    lasts: list[tuple[int, list[ir.Node]]] = []  # carried index, its l[-1] reads
    lifted = False
    for j in range(carried):
        initial = f.static(node.inputs[2 + j])
        plan = _lift_plan(f, body, j, initial) if initial is not None else None
        if plan is None or initial is None:
            continue
        _, readers = plan
        last_reads: list[ir.Node] = []
        for reader, kind in readers:
            if kind == "last":
                last_reads.append(reader)
                continue
            if kind == "length":
                emit = f.emitter(body_scope, reader)
                count = body.inputs[0]
                if _declared_dims(count) == (1,):  # len(l) is a scalar, the counter [1]
                    count = emit.squeeze(count, 0)
                value = (
                    emit.op("Add", [count, emit.constant(np.array(len(initial), dtype=np.int64))])
                    if len(initial)
                    else count
                )
                value.type, value.shape = ir.TensorType(ir.DataType.INT64), ir.Shape([])
            else:
                position, _ = f.const_int(reader.inputs[1])  # type: ignore[arg-type]
                assert position is not None
                value = initial.elements[position]
            f.replace(reader.outputs[0], value, body_scope)
            _detach(body, reader)
            lifted = True
        if last_reads:
            lasts.append((j, last_reads))
    if not lasts:
        return node if lifted else None
    # l[-1]: the element appended last, carried (the initial list's last one to begin with)
    new_inputs = list(node.inputs)
    for j, last_reads in lasts:
        initial = f.static(node.inputs[2 + j])
        found = _append_pattern(f, body, j, ignore=set(last_reads))
        assert initial is not None and found is not None
        tensor = found[1]
        element = initial.elements[-1]
        last_in = ir.Value(
            name=f"{body.inputs[2 + j].name or 'list'}_last",
            type=element.type or tensor.type or ir.TensorType(initial.dtype or ir.DataType.FLOAT),
        )
        body.inputs.append(last_in)
        for reader in last_reads:
            f.replace(reader.outputs[0], last_in, body_scope)
            _detach(body, reader)
        if tensor.graph is not body or tensor.is_graph_input():
            ident = ir.node("Identity", [tensor])
            body.insert_before(found[0], ident)
            ident.outputs[0].type = tensor.type
            tensor = ident.outputs[0]
        body.outputs.insert(len(new_inputs) - 1, tensor)
        new_inputs.append(initial.elements[-1])
    added = len(lasts)
    new = ir.Node(
        "",
        "Loop",
        new_inputs,
        [ir.Attr("body", ir.AttributeType.GRAPH, body)],
        num_outputs=len(node.outputs) + added,
        name=node.name,
    )
    scope.graph.insert_before(node, new)
    f.created.add(new)
    kept = list(new.outputs[:carried]) + list(new.outputs[carried + added :])
    for old, fresh in zip(node.outputs, kept, strict=True):
        fresh.type, fresh.shape = old.type, old.shape
        if old in f.state:
            f.state[fresh] = f.state[old]
        f.replace(old, fresh, scope)
    node.attributes.pop("body")
    return new


def _lift_plan(
    f: Folder, body: ir.Graph, j: int, initial: StaticSequence
) -> tuple[ir.Node, list[tuple[ir.Node, str]]] | None:
    """The append of carried list ``j`` and how each other read of it is lifted, or None."""
    carried_in = body.inputs[2 + j]
    readers = [u.node for u in carried_in.uses()]
    inserts = [
        r for r in readers if r.op_type == "SequenceInsert" and r.outputs[0] is body.outputs[1 + j]
    ]
    if len(inserts) != 1:
        return None
    found = _append_pattern(f, body, j, ignore=set(readers) - set(inserts))
    if found is None or found[2]:
        return None
    plan: list[tuple[ir.Node, str]] = []
    for reader in readers:
        if reader is found[0]:
            continue
        if reader.graph is not body or reader.domain not in ("", "ai.onnx"):
            return None
        if reader.op_type == "SequenceLength":
            plan.append((reader, "length"))
            continue
        if reader.op_type != "SequenceAt" or len(reader.inputs) < 2 or reader.inputs[1] is None:
            return None
        if reader.inputs[0] is not carried_in:
            return None
        position, _ = f.const_int(reader.inputs[1])
        if position == -1 and len(initial) >= 1:
            plan.append((reader, "last"))
        elif position is not None and 0 <= position < len(initial):
            plan.append((reader, "initial"))
        else:
            return None
    return found[0], plan


def _detach(graph: ir.Graph, node: ir.Node) -> None:
    for k in range(len(node.inputs)):
        node.replace_input_with(k, None)
    graph.remove(node, safe=True)


def _infer_scan_shapes(f: Folder, node: ir.Node, scope: Scope, body: ir.Graph) -> None:
    """Give a Loop's scan outputs with no declared shape the one induction proves, so that
    what reads them (a split of the stacked values, say) can be lowered."""
    known, proven = _induction(f, scope, node, body)
    _give_carried_shapes(node, proven)
    carried = len(node.inputs) - 2
    runs = _iterations(f, scope, node, body)
    for index, value in enumerate(body.outputs[1 + carried :]):
        out = node.outputs[carried + index] if carried + index < len(node.outputs) else None
        if out is None or out.shape is not None:
            continue
        if value.graph is body:
            type_, shape = known.get(value, (None, None))
        else:  # an outer value, the same every iteration
            type_, shape = value.type, scope.shapes.shape(value)
        if not _stable(f, shape):
            continue
        assert shape is not None
        out.type = out.type or value.type or type_
        out.shape = ir.Shape([ir.SymbolicDim(None) if runs is None else runs, *shape])


def _scan_outputs(f: Folder, node: ir.Node, scope: Scope, body: ir.Graph) -> bool:
    """Turn every list the loop appends to into a scan output (several lists: one by one)."""
    converted = False
    j = 0
    while j < len(node.inputs) - 2:
        new = _try_scan_output(f, node, scope, body, j)
        if new is None:
            j += 1
            continue
        converted = f.applied("loop-append-to-scan-output", node, f"carried value {j}")
        node = new  # carried value j is gone: j now names the next one
    return converted


def _body_nodes(graph: ir.Graph) -> list[ir.Node]:
    return list(ir.traversal.RecursiveGraphIterator(graph))


def _unroll_blocker(f: Folder, node: ir.Node, body: ir.Graph, opset: int) -> str:
    """Why ``node`` cannot be unrolled (empty when it can)."""
    if "loop-unroll" in f.options.disabled:
        return "loop-unroll is switched off"
    trip = node.inputs[0] if node.inputs else None
    if trip is None:
        return "no trip count (a while loop)"
    count, why = f.const_int(trip)
    if count is None:
        return f"trip count {why.removeprefix('position ')}"
    if count <= 0:
        return f"trip count {count}: no iteration to unroll"
    if count > f.options.max_unroll:
        return f"trip count {count} is above --max-unroll {f.options.max_unroll}"
    cond = node.inputs[1] if len(node.inputs) > 1 else None
    if cond is not None and not _is_true(f, cond):
        return "the loop condition is known only at run time"
    if len(body.outputs) > len(node.inputs) - 1 and _reads_unlike_elements(f, body):
        return (
            "the body reads elements of different shapes and stacks what it makes into a "
            "scan output (the loop fails at run time)"
        )
    if len(body.inputs) != len(node.inputs) or len(body.outputs) < len(node.inputs) - 1:
        return "the body's inputs and outputs do not match the Loop's"
    if not _stays_true(f, body.outputs[0], body.inputs[1]):
        return "the body's condition output is not provably true (a loop with a break)"
    if opset < 14:
        carried = len(node.inputs) - 2
        for k, out in enumerate(node.outputs[:carried]):
            if not out.is_graph_output() or isinstance(out.type, ir.TensorType):
                continue
            result = body.outputs[1 + k]
            passed = result is body.inputs[2 + k] or result.graph is not body
            if passed and f.static(node.inputs[2 + k]) is None:
                # the output would be an outer sequence renamed: Identity, which opset < 14
                # does not have for sequences
                return "a sequence graph output would need Identity, which opset < 14 lacks"
    return ""


def _reads_unlike_elements(f: Folder, body: ir.Graph) -> bool:
    """Whether the body reads, at a run-time position, a static sequence whose elements are
    not all of one shape."""
    for node in _body_nodes(body):
        if node.op_type != "SequenceAt" or not node.inputs or node.inputs[0] is None:
            continue
        seq = f.static(node.inputs[0])
        if seq is None or len(seq) < 2:
            continue
        shapes = [e.shape for e in seq.elements]
        if (
            any(s is None for s in shapes)
            or len({tuple(_dim_key(d) for d in s) for s in shapes if s is not None}) > 1
        ):
            return True
    return False


def _is_true(f: Folder, value: ir.Value) -> bool:
    if value.is_graph_input() and not f.options.freeze_inputs:
        return False
    array = f.constant(value)
    return array is not None and array.size == 1 and bool(array.reshape(-1)[0])


def _stays_true(f: Folder, value: ir.Value, cond_in: ir.Value) -> bool:
    while True:
        if value is cond_in or _is_true(f, value):
            return True
        producer = value.producer()
        if producer is None or producer.op_type != "Identity" or producer.inputs[0] is None:
            return False
        value = producer.inputs[0]


def _unroll(f: Folder, node: ir.Node, scope: Scope, body: ir.Graph) -> str:
    """Inline the body once per iteration and fold the copies; undo it all and say why when
    a sequence op would stay in the copies (unrolling would only multiply it)."""
    count, _ = f.const_int(node.inputs[0])  # type: ignore[arg-type]
    assert count is not None
    mark = f.checkpoint()
    emit = f.emitter(scope, node)
    cond = node.inputs[1] if len(node.inputs) > 1 else None
    true = cond if cond is not None else emit.constant(np.array(True))
    carried = list(node.inputs[2:])
    n_carried = len(carried)
    scans: list[list[ir.Value]] = [[] for _ in body.outputs[1 + n_carried :]]
    counter_dims = _declared_dims(body.inputs[0])  # TorchScript declares it [1] at times
    if len(body.inputs) > 1 and _declared_dims(body.inputs[1]) not in ((), None):
        true = emit.constant(np.ones(_declared_dims(body.inputs[1]) or (), dtype=np.bool_))
    for i in range(count):
        number = np.full(counter_dims or (), i, dtype=np.int64)
        bound = {body.inputs[0]: emit.constant(number), body.inputs[1]: true}
        bound.update({body.inputs[2 + j]: v for j, v in enumerate(carried) if v is not None})
        _, outputs = inline_graph(f, scope, node, body, bound)
        carried = list(outputs[1 : 1 + n_carried])
        for k, value in enumerate(outputs[1 + n_carried :]):
            scans[k].append(value)
    roots = [v for v in carried if v is not None] + [v for values in scans for v in values]
    left = f.left_since(mark, roots)
    if left:
        cause = next((n for n in left if n in f.reasons), left[0])
        why = f.reasons.get(cause) or "needed as a sequence"
        f.rollback(mark)
        return (
            f"unrolling would leave {len(left)} sequence op(s) in the copies "
            f"({cause.op_type}: {why})"
        )
    finals: list[ir.Value] = [v for v in carried if v is not None]
    for values in scans:
        for value in values:
            scope.shapes.shape(value)  # type and shape for the Unsqueeze
        parts = [emit.unsqueeze(v, 0) for v in values]
        finals.append(parts[0] if len(parts) == 1 else emit.concat(parts, 0))
    for old, new in zip(node.outputs, finals, strict=True):
        f.state.pop(old, None)
        f.replace(old, new, scope)
    drop_subgraphs(node)
    f.applied("loop-unroll", node, f"{count} iterations")
    return ""


def _declared_dims(value: ir.Value) -> tuple[int, ...] | None:
    """The shape a body input declares, when it is all ones (``[]`` or ``[1]``): what the
    value bound in its place must keep (a Slice reading a ``[1]`` counter needs a 1-D start)."""
    shape = value.shape
    if shape is None or not all(d == 1 for d in shape):
        return None
    return tuple(1 for _ in shape)


def _iterations(
    f: Folder, scope: Scope, node: ir.Node, body: ir.Graph
) -> int | ir.SymbolicDim | None:
    """How many iterations the loop runs, as a dim, when that is provably its trip count (the
    condition stays true): a number, or a dim of a graph input (``x.size(1)``)."""
    cond = node.inputs[1] if len(node.inputs) > 1 else None
    if cond is not None and not _is_true(f, cond):
        return None
    if not _stays_true(f, body.outputs[0], body.inputs[1]):
        return None
    trip = node.inputs[0] if node.inputs else None
    if trip is None:
        return None
    count, _ = f.const_int(trip)
    if count is not None:
        return max(count, 0)
    return _shape_dim(f, scope, trip)


def _shape_dim(f: Folder, scope: Scope, value: ir.Value) -> int | ir.SymbolicDim | None:
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
    k, _ = f.const_int(index)
    shape = scope.shapes.shape(shape_node.inputs[0])
    if k is None or shape is None or not -len(shape) <= k < len(shape):
        return None
    dim = shape[k]
    return dim if _stable(f, ir.Shape([dim])) else None


@dataclass(frozen=True)
class _ScanPlan:
    """What turning one carried list into a scan output needs, worked out once."""

    initial: StaticSequence
    insert: ir.Node
    tensor: ir.Value  # the appended element
    front: bool  # inserted at the front (the list is the scan output reversed)
    shape: ir.Shape  # the element's shape, proven by induction
    runs: int | ir.SymbolicDim | None  # iterations run, when provable
    # The list starts with elements and the loop may run zero times: a scan output after zero
    # iterations has no reliable shape (ONNX Runtime makes it [0] unless the body declares
    # numbers only), so it is reshaped like the initial elements.
    reshape: bool


def _scan_plan(f: Folder, node: ir.Node, scope: Scope, body: ir.Graph, j: int) -> _ScanPlan | str:
    """How carried value ``j`` becomes a scan output, or why it cannot."""
    initial = f.static(node.inputs[2 + j])
    final = node.outputs[j]
    if initial is None:
        return "the list it starts from is not statically known"
    if final.is_graph_output():
        return "the final list is a graph output"
    found = _append_pattern(f, body, j)
    if found is None:
        return _why_not_append(body, j)
    if found[2] and len(initial):
        return "the body inserts at the front of a list that does not start empty"
    shape = _appended_shape(f, scope, node, body, found[1])
    if shape is None:
        return "the appended element's shape is not provably the same every iteration"
    runs = _iterations(f, scope, node, body)
    reshape = bool(len(initial)) and not (isinstance(runs, int) and runs >= 1)
    if reshape and not all(
        _same((e.type, scope.shapes.shape(e)), (e.type, shape)) for e in initial.elements
    ):
        return (
            "the loop may run zero times and the elements the list starts with are not "
            "provably of the appended element's shape"
        )
    for use in final.uses():
        reader = use.node
        if reader.op_type not in _READERS or reader.graph is None:
            return f"the final list is read by {label(reader)}, which has no scan-output form"
        why = _reader_ok(f, reader, shape, len(initial))
        if why:
            return f"{label(reader)}: {why}"
    return _ScanPlan(initial, found[0], found[1], found[2], shape, runs, reshape)


def _try_scan_output(
    f: Folder, node: ir.Node, scope: Scope, body: ir.Graph, j: int
) -> ir.Node | None:
    """Turn carried sequence ``j`` into a scan output and return the new Loop; when it cannot,
    say why in the Loop's reason (what reads the final list then reports it)."""
    plan = _scan_plan(f, node, scope, body, j)
    if isinstance(plan, str):
        if f.static(node.inputs[2 + j]) is not None:
            f.loop_reasons.setdefault(node, []).append(f"not a scan output: {plan}")
        return None
    initial, insert, tensor, shape = plan.initial, plan.insert, plan.tensor, plan.shape
    rank = len(shape)
    readers = [use.node for use in node.outputs[j].uses()]

    # -- the body: drop the carried sequence, emit the appended tensor as a scan output
    if tensor.graph is not body or tensor.is_graph_input() or tensor.is_graph_output():
        ident = ir.node("Identity", [tensor])
        body.insert_before(insert, ident)
        ident.outputs[0].type, ident.outputs[0].shape = tensor.type, tensor.shape
        tensor = ident.outputs[0]
    out_index = 1 + j
    body.outputs.pop(out_index)
    body.outputs.append(tensor)
    # declared, so that a runtime can shape the output of zero iterations ([0, 3], not [0])
    tensor.type = tensor.type or plan.tensor.type
    tensor.shape = (
        shape
        if contradicts(tensor.shape, shape)
        else fill_shape(tensor.shape, shape, numbers_win=True)
    )
    for k in range(len(insert.inputs)):
        insert.replace_input_with(k, None)
    body.remove(insert, safe=True)
    body.inputs.pop(2 + j)

    # -- the loop node: one carried value fewer, one scan output more
    inputs = [v for k, v in enumerate(node.inputs) if k != 2 + j]
    if len(inputs) == 2 and inputs[1] is None:
        # an absent condition as the last input would vanish when saved, and Loop needs the
        # slot: a constant true means the same
        inputs[1] = f.emitter(scope, node).constant(np.array(True))
    new = ir.Node(
        "",
        "Loop",
        inputs,
        [ir.Attr("body", ir.AttributeType.GRAPH, body)],
        num_outputs=len(node.outputs),
        name=node.name,
    )
    scope.graph.insert_before(node, new)
    f.created.add(new)
    kept = [o for k, o in enumerate(node.outputs) if k != j]
    for old, fresh in zip(kept, new.outputs[:-1], strict=True):
        fresh.type, fresh.shape = old.type, old.shape
        f.replace(old, fresh, scope)
    stacked = new.outputs[-1]
    stacked.type = tensor.type
    stacked.shape = ir.Shape([ir.SymbolicDim(None) if plan.runs is None else plan.runs, *shape])
    f.proven.add(stacked)
    if plan.reshape:
        # zero iterations must still give [0, *element shape]: the initial elements have it
        emit = f.emitter(scope, node)
        element_shape = emit.op("Shape", [initial.elements[-1]])
        element_shape.type = ir.TensorType(ir.DataType.INT64)
        target = emit.concat([emit.int64s([-1]), element_shape], 0)
        fixed = emit.op("Reshape", [stacked, target])
        fixed.type, fixed.shape = stacked.type, stacked.shape
        f.proven.add(fixed)
        stacked = fixed
    if plan.front:  # inserted at the front each time: the list is the scan output reversed
        emit = f.emitter(scope, node)
        reversed_ = emit.op(
            "Slice",
            [
                stacked,
                emit.int64s([-1]),
                emit.int64s([-(2**63)]),
                emit.int64s([0]),
                emit.int64s([-1]),
            ],
        )
        reversed_.type, reversed_.shape = stacked.type, stacked.shape
        f.proven.add(reversed_)
        stacked = reversed_
    for reader in readers:
        _rewrite_reader(f, _scope_of(scope, reader), reader, stacked, rank, initial)
    node.attributes.pop("body")
    _give_carried_shapes(new, _induction(f, scope, new, body)[1])
    return new


def _scope_of(scope: Scope, reader: ir.Node) -> Scope:
    """The scope a reader of the final list lives in: the loop's, or a subgraph of it (an If
    branch after the loop reads the list too)."""
    graph = reader.graph
    if graph is scope.graph or graph is None:
        return scope
    return Scope(graph, f"{scope.path}/{graph.name or 'subgraph'}", scope.opset, scope.shapes)


def _rewrite_reader(
    f: Folder, scope: Scope, reader: ir.Node, stacked: ir.Value, rank: int, initial: StaticSequence
) -> None:
    emit = f.emitter(scope, reader)
    n0 = len(initial)
    out = reader.outputs[0]
    if reader.op_type == "SequenceLength":
        shape = emit.op("Shape", [stacked])
        result = emit.op("Gather", [shape, emit.constant(np.array(0, dtype=np.int64))], axis=0)
        if n0:
            result = emit.op("Add", [result, emit.constant(np.array(n0, dtype=np.int64))])
        result.type, result.shape = ir.TensorType(ir.DataType.INT64), ir.Shape([])
    elif reader.op_type == "SequenceAt":
        position, _ = f.const_int(reader.inputs[1])  # type: ignore[arg-type]
        assert position is not None
        if 0 <= position < n0:
            f.replace(out, initial.elements[position], scope)
            return
        index = emit.constant(
            np.array(position - n0 if position >= 0 else position, dtype=np.int64)
        )
        result = emit.op("Gather", [stacked, index], axis=0)
        result.type = stacked.type
        result.shape = ir.Shape(list(stacked.shape)[1:]) if stacked.shape is not None else None
    else:
        result = _concat_reader(emit, reader, stacked, rank, initial)
    f.replace(out, result, scope)


def _concat_reader(
    emit: object, reader: ir.Node, stacked: ir.Value, rank: int, initial: StaticSequence
) -> ir.Value:

    assert isinstance(emit, Emitter)
    new_axis = reader.attributes.get_int("new_axis", 0)
    axis = reader.attributes.get_int("axis", 0)
    out_rank = rank + 1 if new_axis else rank
    axis = axis + out_rank if axis < 0 else axis
    dims = list(stacked.shape)[1:] if stacked.shape is not None else []
    moved = stacked
    if axis > 0:
        perm = [*range(1, axis + 1), 0, *range(axis + 1, rank + 1)]
        moved = emit.op("Transpose", [stacked], perm=perm)
        moved.type = stacked.type
        if stacked.shape is not None:
            moved.shape = ir.Shape([stacked.shape[p] for p in perm])
    if new_axis:
        result = moved
        front = [emit.unsqueeze(e, axis) for e in initial.elements]
    else:
        target = [0] * axis + [-1] + [d if isinstance(d, int) else -1 for d in dims[axis + 1 :]]
        result = emit.op("Reshape", [moved, emit.int64s(target)])
        result.type = stacked.type
        front = list(initial.elements)
    if front:
        result = emit.concat([*front, result], axis)
    return result


def _dims_ok_for_reshape(shape: ir.Shape, axis: int) -> bool:
    return all(isinstance(d, int) for d in list(shape)[axis + 1 :])


def _will_unroll(f: Folder, node: ir.Node) -> bool:
    body_attr = node.attributes.get("body")
    if (
        f.analyze_only
        or node in f.no_unroll
        or body_attr is None
        or body_attr.type != ir.AttributeType.GRAPH
    ):
        return False
    opset = f.opsets.get(id(node.graph), 0) if node.graph is not None else 0
    return not _unroll_blocker(f, node, body_attr.as_graph(), opset)


TRANSFER["Loop"] = _loop
UNROLLS.append(_will_unroll)

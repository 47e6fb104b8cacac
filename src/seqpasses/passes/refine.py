"""Shapes constants decide where onnx's inference leaves them unknown, and the types of the
values inside bodies (what onnx's inference says there, never a list's element shape it
does not prove)."""

from __future__ import annotations

from typing import Any

import onnx
import onnx_ir as ir

from seqpasses.core.constants import constant_array
from seqpasses.core.dims import claimed_shape, contradicts, fill_shape, unknown
from seqpasses.core.graph import subgraphs
from seqpasses.core.shape_rules import (
    BROADCASTING,
    SHAPED_BY_VECTOR,
    BodyFacts,
    broadcast,
    range_shape,
)
from seqpasses.core.shapes import ShapeOracle
from seqpasses.core.spatial import WINDOWED, concat_dims, windowed_shape

__all__ = ["carried_claims", "fill_bodies", "refine_shapes", "shapeless"]


def refine_shapes(
    graph: ir.Graph,
    opset: int,
    tainted: set[ir.Value] | None = None,
    changed: set[ir.Value] | None = None,
) -> None:
    """Dims onnx's inference leaves unknown that constants decide, in ``graph``'s own nodes
    (in order, each from its inputs as filled so far): a ``Slice`` whose ends or axes are
    known only in part (:meth:`~seqpasses.core.shapes.ShapeOracle.infer`), a ``Pad`` of
    constant pads (a symbol plus a number: ``N+64``). Never a dim known already, nor a value
    of ``tainted`` or computed from one."""
    from seqpasses.core.dims import add_dims
    from seqpasses.core.partial import partial_vector

    oracle = ShapeOracle(opset, writes=True)  # (a pass: what it finds is declared at once)
    known: dict[ir.Value, tuple[Any, ir.Shape | None]] = {}
    tainted = tainted if tainted is not None else set()
    changed = set(changed) if changed is not None else set()
    for node in graph:
        if node.domain not in ("", "ai.onnx"):
            continue
        if node.op_type in _COMPUTED and len(node.outputs) >= 1:
            _computed(node, tainted, changed, oracle)
        if node.op_type not in ("Slice", "Pad"):
            again = any(v in changed for v in node.inputs) or _declared_blank(node)
            if again and not any(
                v in tainted for v in node.inputs
            ):  # (what reads a refined value, or a graph output declared with made-up dim
                # names: onnx's inference of the node, again)
                inputs = [(v.type, v.shape) if v is not None else None for v in node.inputs]
                for out, (_, shape) in zip(node.outputs, oracle.infer(node, inputs), strict=True):
                    if shape is None or contradicts(out.shape, shape) or out.type is None:
                        continue
                    filled = fill_shape(out.shape, shape, numbers_win=True)
                    if filled != out.shape:
                        out.shape = filled
                        changed.add(out)
            continue
        if len(node.outputs) != 1 or not node.inputs or node.inputs[0] is None:
            continue
        data, out = node.inputs[0], node.outputs[0]
        if data in tainted or out in tainted or data.shape is None or out.type is None:
            continue
        values = [v for v in node.inputs if v is not None]
        known.update((v, (v.type, v.shape)) for v in values)
        new: ir.Shape | None = None
        if node.op_type == "Slice" and out.shape is not None:
            inputs = [(v.type, v.shape) if v is not None else None for v in node.inputs]
            new = oracle.slice_dims(node, inputs, out.shape, known)
        elif node.op_type == "Pad" and len(node.inputs) in (2, 3) and node.inputs[1] is not None:
            pads = partial_vector(
                node.inputs[1], constant_array, lambda v: known.get(v, (0, v.shape))[1]
            )
            rank = len(data.shape)
            if pads is not None and len(pads) == 2 * rank:
                dims: list[int | ir.SymbolicDim] = []
                for k, d in enumerate(data.shape):
                    begin, end = pads[k], pads[k + rank]
                    if isinstance(begin, bool) or isinstance(end, bool):
                        begin = end = None
                    if begin is None or end is None:
                        dims.append(ir.SymbolicDim(None))
                    else:
                        dims.append(add_dims([d, begin, end]))
                new = ir.Shape(dims)
        if new is None or contradicts(out.shape, new):
            continue
        filled = fill_shape(out.shape, new, numbers_win=True)
        if filled != out.shape:
            out.shape = filled
            changed.add(out)


def _declared_blank(node: ir.Node) -> bool:
    """Whether an output of ``node`` is a graph output declared with a dim that says nothing
    (an exporter's ``Relu_dim_0``, ``unk__3``, or none): onnx's inference keeps what a graph
    output declares, so the node's own inference is asked what it is."""
    return any(
        out.is_graph_output() and out.shape is not None and any(unknown(d) for d in out.shape)
        for out in node.outputs
    )


_COMPUTED = WINDOWED | BROADCASTING | SHAPED_BY_VECTOR | {"Concat", "Range"}
"""Ops whose dims seqpasses computes by its own arithmetic on names, where onnx's inference
leaves them unknown (:mod:`seqpasses.core.spatial`, numpy's broadcasting)."""


def _computed(
    node: ir.Node, tainted: set[ir.Value], changed: set[ir.Value], oracle: ShapeOracle
) -> None:
    """Fill the unknown dims of ``node``'s first output from its inputs' shapes as filled so
    far (a convolution's window, a concatenation's sum, a broadcast); never a dim known
    already, nor a value of ``tainted`` or computed from one."""
    out = node.outputs[0]
    if out in tainted or out.type is None or any(v in tainted for v in node.inputs):
        return
    shapes = [v.shape if v is not None else None for v in node.inputs]
    if node.op_type in WINDOWED:
        new = windowed_shape(node, shapes)
    elif node.op_type == "Concat":
        new = concat_dims(node, shapes)
    elif node.op_type in SHAPED_BY_VECTOR:  # (a Reshape to 4*N: its vector read in part)
        inputs = [(v.type, v.shape) if v is not None else None for v in node.inputs]
        new = oracle.vector_shape(node, inputs, None)
    elif node.op_type == "Range":  # (arange(n): [n])
        inputs = [(v.type, v.shape) if v is not None else None for v in node.inputs]
        new = range_shape(None, [oracle.vector(node, k, inputs, None) for k in range(3)])
    else:
        new = broadcast(shapes[:3] if node.op_type == "Where" else shapes)
    if new is None or contradicts(out.shape, new):
        return
    filled = fill_shape(out.shape, new)
    if filled != out.shape:
        out.shape = filled
        changed.add(out)


_SURE_OF_A_SEQUENCE = frozenset({"SequenceLength", "SequenceInsert", "SequenceErase"})
"""Ops whose output's claims do not hang on the element shape of the sequence they read (a
length is an int64 scalar; a list in, a list out: its own claim is dropped as any list's)."""


def fill_bodies(
    graph: ir.Graph, inferred: onnx.GraphProto, proven: BodyFacts, opset: int, refine: bool
) -> None:
    """Type the values inside every subgraph of ``graph`` (at any depth) that onnx's
    inference types (``inferred``: the same graph, inferred with the outer scope's types),
    where the model says nothing of them. Never copied: a list's element shape (onnx keeps a
    declared one a later insert contradicts: tf2onnx declares its lists' elements rank 0), nor
    the shape of anything computed from a list's elements."""
    for node, proto_node in zip(graph, inferred.node, strict=False):
        if node.op_type != proto_node.op_type:
            return  # (the graphs do not correspond: nothing is claimed)
        attributes = {attr.name: attr for attr in proto_node.attribute}
        for name, attr in node.attributes.items():
            proto_attr = attributes.get(name)
            if proto_attr is None or attr.type != ir.AttributeType.GRAPH:
                continue
            if proto_attr.type == onnx.AttributeProto.GRAPH:
                _fill_body(attr.as_graph(), proto_attr.g, proven, opset, refine)


def _proven_signature(value: ir.Value, fact: tuple[Any, ir.Shape | None] | None) -> None:
    """A body's input or output (the model's own declaration, kept) gets the dims the walk
    proves it has at every iteration, where it declares none."""
    if fact is None or fact[1] is None or not isinstance(value.type, ir.TensorType):
        return
    if not contradicts(value.shape, fact[1]):
        value.shape = fill_shape(value.shape, fact[1])


def shapeless(type_proto: onnx.TypeProto) -> onnx.TypeProto:
    """``type_proto`` without its shape (a sequence's: without its elements')."""
    copy = onnx.TypeProto()
    copy.CopyFrom(type_proto)
    inner = copy
    while inner.WhichOneof("value") in ("sequence_type", "optional_type"):
        inner = getattr(inner, inner.WhichOneof("value")).elem_type
    if inner.HasField("tensor_type"):
        inner.tensor_type.ClearField("shape")
    return copy


def carried_claims(graph: ir.Graph) -> set[str]:
    """The values whose claim by onnx's inference hangs on a ``Loop``'s outputs (``graph``'s
    own nodes, or a node holding a Loop at any depth: an If's output is what its branches'
    loops give): onnx gives a carried value the shape of its initial one where the body
    declares none, which a value that grows each iteration refutes, and a scan output the
    shape its body declares, which only a run of no iterations is held to. What seqpasses
    proves of them (induction) is declared instead; a ``SequenceLength`` of such a list is a
    scalar whatever its elements."""
    found = {out.name for node in graph if _holds_loop(node) for out in node.outputs if out.name}
    for node in graph:
        if node.op_type == "SequenceLength":
            continue
        if any(v is not None and v.name in found for v in node.inputs):
            found |= {out.name for out in node.outputs if out.name}
    return found


def _holds_loop(node: ir.Node) -> bool:
    """A Loop, or a node with a Loop in its subgraphs at any depth."""
    if node.op_type == "Loop" and node.domain in ("", "ai.onnx"):
        return True
    return any(_holds_loop(inner) for _, graph in subgraphs(node) for inner in graph)


def _fill_body(
    body: ir.Graph, inferred: onnx.GraphProto, proven: BodyFacts, opset: int, refine: bool
) -> None:
    hanging = carried_claims(body)  # (onnx's claim of what a loop gives: its type only)
    types = {
        info.name: shapeless(info.type) if info.name in hanging else info.type
        for info in (*inferred.value_info, *inferred.output)
    }
    tainted: set[ir.Value] = set()
    signature = {*body.inputs, *body.outputs}  # (the model's own: onnx's checker wants them)
    for value in [*body.inputs, *(out for node in body for out in node.outputs)]:
        if isinstance(value.type, ir.SequenceType):
            if value not in signature:
                value.shape = None  # (what is declared of a list's elements is no proof)
            tainted.add(value)
    for value in body.inputs:  # (a carried tensor induction proves keeps its shape)
        _proven_signature(value, proven.get(value))
    for node in body:
        reads_list = any(v in tainted for v in node.inputs if v is not None)
        for value in node.outputs:
            claimed = claimed_shape(types.get(value.name or ""))
            if value in signature:
                _proven_signature(value, proven.get(value))
                if value.shape is None and not reads_list and claimed is not None:
                    value.shape = claimed  # (what onnx infers of it from what it reads)
            fact = proven.get(value) if value not in signature else None
            if fact is not None and fact[1] is not None and not contradicts(claimed, fact[1]):
                type_, shape = fact  # (the walk proves it: a tensor computed from it is sure)
                if type_ is not None and (value.type is None or isinstance(type_, ir.SequenceType)):
                    value.type = type_
                if value.type is None:
                    continue
                if isinstance(value.type, ir.SequenceType):
                    tainted.add(value)  # (its readers: only what the walk proves of them)
                value.shape = fill_shape(claimed, shape, numbers_win=True)
                continue
            if isinstance(value.type, ir.SequenceType) or (
                reads_list and node.op_type not in _SURE_OF_A_SEQUENCE
            ):
                tainted.add(value)
            claim = types.get(value.name or "")
            if claim is None or claim.WhichOneof("value") is None or value.type is not None:
                continue
            type_ = ir.serde.deserialize_type_proto_for_type(claim)
            if isinstance(type_, ir.SequenceType):
                tainted.add(value)
                value.type = type_  # (its dtype: onnx_ir keeps no element shape on a type)
                continue
            value.type = type_
            if value not in tainted:
                value.shape = claimed_shape(claim)
    if refine:
        refine_shapes(body, opset, tainted)
    fill_bodies(body, inferred, proven, opset, refine)

"""Filling in the types and shapes of a model's values: onnx's inference first (so at least
what ONNX knows), then seqpasses' own walk in analysis mode, which tracks each static sequence
as its list of elements. Its answers only fill in what ONNX left unknown: a dim ONNX knows
is never changed, a sequence value stays a sequence, and symbolic sums keep their names
(``N+M``, ``3*N``)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import onnx
import onnx_ir as ir

from seqpasses.core.constants import integer_array
from seqpasses.core.dims import claimed_shape, concat_shape, contradicts, fill_shape, merge_shapes
from seqpasses.core.graph import graphs, onnx_opset
from seqpasses.core.onnx_inference import infer
from seqpasses.core.sequence import StackedSequence, StaticSequence, Unknown
from seqpasses.core.shape_rules import BodyFacts
from seqpasses.core.skeleton import skeleton
from seqpasses.options import FoldOptions
from seqpasses.passes.analysis import Analysis, analyze
from seqpasses.passes.refine import carried_claims, fill_bodies, refine_shapes, shapeless

__all__ = ["BodyFacts", "fill_shapes_in_place", "inferred", "sequence_facts"]


def sequence_facts(
    state: dict[ir.Value, StaticSequence | StackedSequence | Unknown],
) -> dict[ir.Value, tuple[ir.TypeProtocol | None, ir.Shape | None]]:
    """The type and element shape seqpasses knows for each sequence value it holds: a static
    list's elements' common shape, a list held as one tensor's element shape."""
    facts: dict[ir.Value, tuple[ir.TypeProtocol | None, ir.Shape | None]] = {}
    for value, known in state.items():
        if isinstance(known, StackedSequence) and isinstance(value.type, ir.SequenceType | None):
            type_ = value.type
            if type_ is None and known.dtype is not None:
                type_ = ir.SequenceType(ir.TensorType(known.dtype))
            facts[value] = (type_, known.element)
        elif isinstance(known, StaticSequence) and isinstance(value.type, ir.SequenceType | None):
            dtype = known.dtype or (value.type.dtype if value.type is not None else None)
            type_ = ir.SequenceType(ir.TensorType(dtype)) if dtype is not None else value.type
            facts[value] = (type_, merge_shapes([e.shape for e in known.elements]))
    return facts


def _claims(proto: onnx.ModelProto) -> dict[str, onnx.TypeProto]:
    graph = proto.graph
    return {vi.name: vi.type for vi in (*graph.value_info, *graph.output)}


def _fill_from(model: ir.Model, claims: dict[str, onnx.TypeProto]) -> None:
    """Fill the main graph's values' unknown types and dims from ONNX's claims."""
    for node in model.graph:
        for value in node.outputs:
            type_proto = claims.get(value.name or "")
            if type_proto is None or type_proto.WhichOneof("value") is None:
                continue
            if value.type is None:
                value.type = ir.serde.deserialize_type_proto_for_type(type_proto)
            value.shape = fill_shape(value.shape, claimed_shape(type_proto))


def inferred(proto: onnx.ModelProto) -> onnx.ModelProto:
    """What onnx's inference (data propagation on) says of ``proto``, in linear pieces
    (:mod:`seqpasses.core.onnx_inference`); ``proto`` itself when it cannot say."""
    try:
        return infer(proto, data_prop=True)
    except Exception:
        return proto


def _inferred_skeleton(model: ir.Model) -> onnx.ModelProto:
    """onnx's inference of ``model``, without serializing its weights' data
    (:mod:`seqpasses.core.skeleton`: weights are typed graph inputs there)."""
    return inferred(skeleton(model).proto)


NamedFacts = dict[str, tuple[Any, ir.Shape | None]]
"""What is known of the main graph's values, by name: their type and shape."""


def _walk_facts(model: ir.Model) -> tuple[Analysis, ir.Model, NamedFacts, set[str], BodyFacts]:
    """Steps 1 and 2 on a copy of ``model``: the walk's analysis (of the copy, which it
    returns), what it knows beyond (or against) ONNX's claims by value name (main graph),
    the names where the two contradict, and what it proves inside bodies (by ``model``'s
    values: :func:`_body_facts`)."""
    inferred = _inferred_skeleton(model)
    claims = _claims(inferred)
    copy = ir.serde.deserialize_model(inferred)
    split = _split_facts(copy)
    before = {out: out.shape for node in copy.graph for out in node.outputs}
    pairs = _pairs(model, copy)
    analysis = analyze(copy, FoldOptions())
    inner = _body_facts(pairs, analysis, set(split))
    facts: NamedFacts = dict(split)
    for value, (type_, shape) in sequence_facts(analysis.sequences).items():
        if value.name and value.graph is copy.graph:
            facts[value.name] = (type_, shape)
    read = _read_facts(copy, analysis, set(split))
    facts.update((k, v) for k, v in read.items() if k not in facts)
    for value, shape in before.items():  # what the dry rewrites gave the values they replace
        if value in analysis.proven:  # (a loop's list: induction's, below)
            continue
        if value.name and value.name not in facts and value.shape != shape:
            facts[value.name] = (value.type, value.shape)
    against: set[str] = set()
    for name, (type_, shape) in list(facts.items()):
        claimed = claimed_shape(claims.get(name))
        if contradicts(claimed, shape):
            against.add(name)
        else:
            facts[name] = (type_, fill_shape(claimed, shape, numbers_win=True))
    for value in analysis.proven:  # (not merged with onnx's claim: a loop's is a guess)
        if value.graph is copy.graph and value.name:
            facts[value.name] = (value.type, value.shape)
        elif value in pairs[0] and pairs[0][value] not in inner:  # (a body's tensors)
            inner[pairs[0][value]] = (value.type, value.shape)
    return analysis, copy, facts, against, inner


def _read_facts(copy: ir.Model, analysis: Analysis, unbound: set[str]) -> NamedFacts:
    """The shapes of what reads a list the walk holds whole (main graph): a
    ``ConcatFromSequence`` of known elements, a ``SequenceAt`` at a constant position; not of
    the lists in ``unbound`` (:func:`_split_facts`: where the spec and ONNX Runtime differ)."""
    return {
        (out.name or ""): fact
        for out, fact in _reads_of_lists(copy.graph, analysis, unbound).items()
        if out.name
    }


Read = tuple[ir.Node, ir.Value | None, ir.Value | None, ir.Value]
"""A node reading a list (ConcatFromSequence, SequenceAt): the node, the list, the position
(SequenceAt's), the output; taken before a dry walk rewrites the node away."""


def _reads(nodes: Iterable[ir.Node]) -> list[Read]:
    return [
        (node, node.inputs[0], node.inputs[1] if len(node.inputs) > 1 else None, node.outputs[0])
        for node in nodes
        if node.op_type in ("ConcatFromSequence", "SequenceAt") and node.outputs and node.inputs
    ]


def _reads_of_lists(
    graph: ir.Graph | list[Read], analysis: Analysis, unbound: set[str]
) -> dict[ir.Value, tuple[Any, ir.Shape]]:
    """:func:`_read_facts` in ``graph`` (or of the reads given), by value: a ``SequenceAt`` of
    a list held as one tensor at any position is its element shape, and of a list of known
    elements that all have one rank, at a position known only at run time, their common
    shape (a read that succeeds gives one of them)."""
    found: dict[ir.Value, tuple[Any, ir.Shape]] = {}
    for node, read, position, out in graph if isinstance(graph, list) else _reads(graph):
        if read is None or read.name in unbound:
            continue
        held = analysis.sequences.get(read)
        if (
            isinstance(held, StackedSequence)
            and node.op_type == "SequenceAt"
            and held.element is not None
            and held.dtype is not None
        ):
            found[out] = (ir.TensorType(held.dtype), held.element)
            continue
        if not isinstance(held, StaticSequence) or not held.elements or not out.name:
            continue
        shape: ir.Shape | None = None
        if node.op_type == "SequenceAt":
            array = integer_array(position) if position is not None else None
            if array is not None and array.size == 1:
                index = int(array.reshape(()))
                if -len(held.elements) <= index < len(held.elements):
                    shape = held.elements[index].shape
            elif array is None:
                shape = merge_shapes([e.shape for e in held.elements])
        else:
            shape = _concatenated(held, node)
        if shape is not None:
            dtype = held.dtype
            found[out] = (None if dtype is None else ir.TensorType(dtype), shape)
    return found


def _pairs(model: ir.Model, copy: ir.Model) -> tuple[dict[ir.Value, ir.Value], list[Read]]:
    """Each value made inside a body of ``copy`` (a copy of ``model``, before any walk), with
    the value of ``model`` it is; and the reads of lists in those bodies."""
    pairs: dict[ir.Value, ir.Value] = {}
    reads: list[Read] = []
    for (_, mine), (_, theirs) in zip(graphs(model), graphs(copy), strict=False):
        if mine is model.graph:
            continue
        if len(mine.inputs) == len(theirs.inputs):
            pairs.update(zip(theirs.inputs, mine.inputs, strict=True))
        for node, other in zip(mine, theirs, strict=False):
            if node.op_type != other.op_type or len(node.outputs) != len(other.outputs):
                break
            pairs.update(zip(other.outputs, node.outputs, strict=True))
            reads.extend(_reads([other]))
    return pairs, reads


def _body_facts(
    paired: tuple[dict[ir.Value, ir.Value], list[Read]], analysis: Analysis, unbound: set[str]
) -> dict[ir.Value, tuple[Any, ir.Shape | None]]:
    """What the walk proves of the values inside the bodies of ``copy`` (lists: their element
    shape; reads of them), given by the values of the model they stand for (``pairs``: made
    before the walk, whose dry rewrites change the copy). Not a list of ``unbound`` nor what
    reads one (the spec and ONNX Runtime differ there)."""
    pairs, reads = paired
    found: dict[ir.Value, tuple[Any, ir.Shape | None]] = {}
    for value, fact in sequence_facts(analysis.sequences).items():
        if value in pairs and (value.name or "") not in unbound and fact[1] is not None:
            found[pairs[value]] = fact
    for value, fact in _reads_of_lists(reads, analysis, unbound).items():
        if value in pairs:
            found[pairs[value]] = fact
    return found


def _concatenated(held: StaticSequence, node: ir.Node) -> ir.Shape | None:
    """ConcatFromSequence's output shape over the known elements ``held`` (None where a rank
    or the axis is unknown or out of range: the node fails, nothing is claimed)."""
    shapes = [e.shape for e in held.elements]
    if any(s is None for s in shapes):
        return None
    rank = len(shapes[0])  # type: ignore[arg-type]
    if any(len(s) != rank for s in shapes):  # type: ignore[arg-type]
        return None
    axis, new_axis = node.attributes.get_int("axis", 0), node.attributes.get_int("new_axis", 0)
    if new_axis not in (0, 1):
        return None
    width = rank + new_axis
    if not -width <= axis < width:
        return None
    axis %= width
    if new_axis:
        common = merge_shapes(shapes)
        if common is None or len(common) != rank:
            return None
        dims = list(common)
        return ir.Shape([*dims[:axis], len(shapes), *dims[axis:]])
    return concat_shape(held.elements, axis)


_OPAQUE = frozenset({"Loop", "If", "Scan", "SequenceMap"})


def _downstream(graph: ir.Graph, names: set[str]) -> tuple[set[str], set[str]]:
    """What is computed from ``names`` (in ``graph``, in order), and the part of it ONNX
    infers without looking at them (a Loop's or If's outputs come from its body's
    declarations) or from such values."""
    found: set[str] = set(names)
    opaque: set[str] = set()
    for node in graph:
        reads = {v.name for v in node.inputs if v is not None and v.name}
        if reads & found:
            outs = {out.name for out in node.outputs if out.name}
            found |= outs
            if node.op_type in _OPAQUE or reads & opaque:
                opaque |= outs
    return found - names, opaque


def _split_facts(copy: ir.Model) -> NamedFacts:
    """The element shape of each SplitToSequence into chunks of one (no split, or a constant
    scalar split of 1), as ONNX Runtime computes it: squeezed with ``keepdims=0``, kept of size
    1 otherwise; written on the copy (in every graph) before the walk reads it."""
    facts: NamedFacts = {}
    for _, graph in graphs(copy):
        for node in graph:
            out = node.outputs[0] if node.outputs else None
            if node.op_type != "SplitToSequence" or out is None or not out.name:
                continue
            data = node.inputs[0] if node.inputs else None
            if data is None or data.shape is None:
                continue
            rank, axis = len(data.shape), node.attributes.get_int("axis", 0)
            if not -rank <= axis < rank:
                continue
            axis += rank if axis < 0 else 0
            split = node.inputs[1] if len(node.inputs) > 1 else None
            if split is not None:
                array = integer_array(split)
                if array is None or array.ndim != 0 or int(array) != 1:
                    continue
            dims = list(data.shape)
            if node.attributes.get_int("keepdims", 1) == 0:
                del dims[axis]
            else:
                dims[axis] = 1
            out.shape = ir.Shape(dims)
            if graph is copy.graph:
                facts[out.name] = (out.type, out.shape)
    return facts


def _traced_outputs(graph: ir.Graph) -> None:
    """A graph output that concatenates the list a ``Loop`` with a run-time trip count gives
    keeps no number its exporter declared along the axis the concatenation grows: that
    number was traced from one sample run (a detector's boxes declared ``[3, 4]``, as many as
    passed the threshold in the exporter's run)."""
    for value in graph.outputs:
        node, shape = value.producer(), value.shape
        if node is None or node.op_type != "ConcatFromSequence" or shape is None:
            continue
        listed = node.inputs[0] if node.inputs else None
        loop = listed.producer() if listed is not None else None
        if loop is None or loop.op_type != "Loop":
            continue
        trip = loop.inputs[0] if loop.inputs else None
        if trip is not None and integer_array(trip) is not None:
            continue  # (a constant trip count: what the exporter declared may be so)
        rank = len(shape)
        axis = node.attributes.get_int("axis", 0)
        if not -rank <= axis < rank:
            continue
        axis %= rank
        if isinstance(shape[axis], int):
            dims = list(shape)
            dims[axis] = ir.SymbolicDim(None)
            value.shape = ir.Shape(dims)


def fill_shapes_in_place(
    model: ir.Model,
    *,
    checkable: bool = True,
    bodies: bool = False,
    body_facts: bool = True,
    refine: bool = True,
) -> tuple[Analysis, ir.Model]:
    """Fill the types and shapes of the main graph's values (see the module docstring), in
    ``model`` itself; return the walk's analysis and the copy it analysed.

    With ``checkable`` (a model seqpasses writes, which must pass onnx's full check) a value
    where seqpasses' facts contradict ONNX's inference, and what is computed from it, is
    declared with no shape: the checker's inference would reject the fact, and the run
    disproves ONNX's claim. Without it (``seqpasses shapes``, :func:`infer_shapes`), the facts
    are declared."""
    analysis, copy, facts, against, inner = _walk_facts(model)
    after, opaque = _downstream(model.graph, against)
    if checkable:
        for name in against:
            facts.pop(name)
    for node in model.graph:
        for value in node.outputs:
            fact = facts.get(value.name or "")
            if fact is None:
                if not checkable and value.name in after:  # ONNX's guess from a wrong input
                    value.shape = None
                continue
            type_, shape = fact
            if type_ is not None and (value.type is None or isinstance(type_, ir.SequenceType)):
                value.type = type_
            if shape is not None and value.type is not None:  # (no shape without a type)
                value.shape = (
                    shape
                    if contradicts(value.shape, shape)
                    else fill_shape(value.shape, shape, numbers_win=True)
                )
    if refine and (bodies or not checkable):  # (shapes' paths)
        _traced_outputs(model.graph)
    inferred = _inferred_skeleton(model)
    claims = _claims(inferred)
    for name in (after if checkable else opaque) - set(facts):
        claims.pop(name, None)
    for name in carried_claims(model.graph):  # (what is known of them: the facts, above)
        if name in claims:  # (the type holds; the shape onnx gives it is the initial one's)
            claims[name] = shapeless(claims[name])
    _fill_from(model, claims)
    unsure = after | against  # (what a contradiction with onnx's inference reaches)
    opset = onnx_opset(model.opset_imports) or 1
    if refine and (bodies or not checkable):  # (shapes' paths; optimize's output as it was)
        unsure_values = {v for n in model.graph for v in n.outputs if v.name in unsure}
        for node in model.graph:  # (onnx's claim of a loop's list: the inits' element shape)
            for value in node.outputs if node.op_type == "Loop" else ():
                if isinstance(value.type, ir.SequenceType) and (value.name or "") not in facts:
                    value.shape = None
        loops = {v for n in model.graph if n.op_type == "Loop" for v in n.outputs}
        known = {v for v in loops if facts.get(v.name or "", (None, None))[1] is not None}
        refine_shapes(model.graph, opset, unsure_values, known)
    if bodies:
        for node in model.graph if checkable else ():  # (a list's element shape only where
            for value in node.outputs:  # seqpasses proves it, in a model it writes)
                if isinstance(value.type, ir.SequenceType) and (value.name or "") not in facts:
                    value.shape = None
        fill_bodies(model.graph, inferred.graph, inner if body_facts else {}, opset, refine)
    return analysis, copy

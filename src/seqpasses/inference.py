"""Shape inference that knows sequences: element shapes, lengths, exact concat sizes.

:func:`infer_shapes` first runs ``onnx.shape_inference.infer_shapes(data_prop=True)`` (so it knows
at least what ONNX knows), then seqpasses' own walk in analysis mode, which tracks each static
sequence as its list of elements. Its answers only fill in what ONNX left unknown: a dim ONNX
knows is never changed, a sequence value stays a sequence, and symbolic sums keep their names
(``N+M``, ``3*N``).
"""

from __future__ import annotations

import os
from collections import ChainMap
from collections.abc import Iterable, Mapping, MutableMapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, overload

import onnx
import onnx_ir as ir

from seqpasses.core.constants import constant_array, integer_array
from seqpasses.core.dims import (
    contradicts,
    fill_shape,
    generated,
    merge_shapes,
    same_shape,
    shape_text,
)
from seqpasses.core.emit import concat_shape
from seqpasses.core.graph import graphs, onnx_opset
from seqpasses.core.onnx_inference import infer
from seqpasses.core.sequence import StackedSequence, StaticSequence, Unknown
from seqpasses.core.skeleton import skeleton
from seqpasses.io import with_external_data
from seqpasses.options import FoldOptions, Options
from seqpasses.passes.analysis import Analysis, analyze

__all__ = [
    "ShapeFacts",
    "ValueFact",
    "annotate",
    "fill_shapes_in_place",
    "infer_shapes",
    "infer_shapes_ir",
    "shape_facts",
]

DimFact = int | str | None


@dataclass(frozen=True)
class ValueFact:
    """What is known of one value: kind, dtype, shape, and for a sequence its length (a number,
    or the name of a dim such as ``n`` for ``x.unbind(0)`` of ``x: [n, 3]``) and, for a static
    one, each element's shape."""

    name: str
    graph: str
    kind: str  # "tensor", "sequence", "optional", or "unknown"
    dtype: str | None
    shape: tuple[DimFact, ...] | None  # for a sequence: the shape all elements share
    length: DimFact = None
    value: int | None = None  # an integer scalar known before run time (a SequenceLength)
    element_shapes: tuple[tuple[DimFact, ...] | None, ...] | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "graph": self.graph,
            "kind": self.kind,
            "dtype": self.dtype,
            "shape": None if self.shape is None else list(self.shape),
            "length": self.length,
            "value": self.value,
            "element_shapes": None
            if self.element_shapes is None
            else [None if s is None else list(s) for s in self.element_shapes],
        }


@dataclass
class ShapeFacts:
    """Facts per value, in graph order: graph inputs, then node outputs, main graph first."""

    values: list[ValueFact] = field(default_factory=list)
    outputs: list[str] = field(default_factory=list)

    def __getitem__(self, name: str) -> ValueFact:
        for fact in self.values:
            if fact.name == name:
                return fact
        raise KeyError(name)

    def __contains__(self, name: object) -> bool:
        return any(fact.name == name for fact in self.values)


def _dims(shape: ir.Shape | None) -> tuple[DimFact, ...] | None:
    if shape is None:
        return None
    return tuple(
        d if isinstance(d, int) else (d.value if isinstance(d, ir.SymbolicDim) else None)
        for d in shape
    )


def _kind(value: ir.Value) -> str:
    if isinstance(value.type, ir.TensorType):
        return "tensor"
    if isinstance(value.type, ir.SequenceType):
        return "sequence"
    if isinstance(value.type, ir.OptionalType):
        return "optional"
    return "unknown"


def _sequence_facts(
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


def _shape_of(type_proto: onnx.TypeProto | None) -> ir.Shape | None:
    """The shape ONNX claims, its made-up dim names (``unk__N``) read as unknown."""
    if type_proto is None or type_proto.WhichOneof("value") is None:
        return None
    shape = ir.serde.deserialize_type_proto_for_shape(type_proto)
    if shape is None or not any(generated(d) for d in shape):
        return shape
    return ir.Shape([ir.SymbolicDim(None) if generated(d) else d for d in shape])


def _fill_from(model: ir.Model, claims: dict[str, onnx.TypeProto]) -> None:
    """Fill the main graph's values' unknown types and dims from ONNX's claims."""
    for node in model.graph:
        for value in node.outputs:
            type_proto = claims.get(value.name or "")
            if type_proto is None or type_proto.WhichOneof("value") is None:
                continue
            if value.type is None:
                value.type = ir.serde.deserialize_type_proto_for_type(type_proto)
            value.shape = fill_shape(value.shape, _shape_of(type_proto))


def _infer(proto: onnx.ModelProto) -> onnx.ModelProto:
    """What onnx's inference (data propagation on) says of ``proto``, in linear pieces
    (:mod:`seqpasses.core.onnx_inference`); ``proto`` itself when it cannot say."""
    try:
        return infer(proto, data_prop=True)
    except Exception:
        return proto


def _inferred_skeleton(model: ir.Model) -> onnx.ModelProto:
    """onnx's inference of ``model``, without serializing its weights' data
    (:mod:`seqpasses.core.skeleton`: weights are typed graph inputs there)."""
    return _infer(skeleton(model).proto)


Facts = dict[str, tuple[Any, ir.Shape | None]]


BodyFacts = dict[ir.Value, tuple[Any, ir.Shape | None]]


def _walk_facts(model: ir.Model) -> tuple[Analysis, ir.Model, Facts, set[str], BodyFacts]:
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
    facts: Facts = dict(split)
    for value, (type_, shape) in _sequence_facts(analysis.sequences).items():
        if value.name and value.graph is copy.graph:
            facts[value.name] = (type_, shape)
    read = _read_facts(copy, analysis, set(split))
    facts.update((k, v) for k, v in read.items() if k not in facts)
    for value, shape in before.items():  # what the dry rewrites gave the values they replace
        if value.name and value.name not in facts and value.shape != shape:
            facts[value.name] = (value.type, value.shape)
    against: set[str] = set()
    for name, (type_, shape) in list(facts.items()):
        claimed = _shape_of(claims.get(name))
        if contradicts(claimed, shape):
            against.add(name)
        else:
            facts[name] = (type_, fill_shape(claimed, shape, numbers_win=True))
    return analysis, copy, facts, against, inner


def _read_facts(copy: ir.Model, analysis: Analysis, unbound: set[str]) -> Facts:
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
    for value, fact in _sequence_facts(analysis.sequences).items():
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


def _split_facts(copy: ir.Model) -> Facts:
    """The element shape of each SplitToSequence into chunks of one (no split, or a constant
    scalar split of 1), as ONNX Runtime computes it: squeezed with ``keepdims=0``, kept of size
    1 otherwise; written on the copy (in every graph) before the walk reads it."""
    facts: Facts = {}
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
    inferred = _inferred_skeleton(model)
    claims = _claims(inferred)
    for name in (after if checkable else opaque) - set(facts):
        claims.pop(name, None)
    _fill_from(model, claims)
    unsure = after | against  # (what a contradiction with onnx's inference reaches)
    opset = onnx_opset(model.opset_imports) or 1
    if refine and (bodies or not checkable):  # (shapes' paths; optimize's output as it was)
        unsure_values = {v for n in model.graph for v in n.outputs if v.name in unsure}
        held = {v.name: known for v, known in analysis.sequences.items() if v.graph is copy.graph}
        proofs: BodyFacts = {}
        lists = _loop_lists(model.graph, held, opset, record=proofs)
        inner.update((v, fact) for v, fact in proofs.items() if v not in inner)
        for node in model.graph:  # (onnx's claim of a loop's list: the inits' element shape)
            for value in node.outputs if node.op_type == "Loop" else ():
                if isinstance(value.type, ir.SequenceType) and (value.name or "") not in facts:
                    value.shape = None
        for value, element in lists.items():
            if value in unsure_values or (value.name or "") in facts:
                continue
            value.shape = element
            facts[value.name or ""] = (value.type, element)
        _refine(model.graph, opset, unsure_values, set(lists))
    if bodies:
        for node in model.graph:  # (a list's element shape only where seqpasses proves it)
            for value in node.outputs:
                if isinstance(value.type, ir.SequenceType) and (value.name or "") not in facts:
                    value.shape = None
        _fill_bodies(model.graph, inferred.graph, inner if body_facts else {}, opset, refine)
    return analysis, copy


_EMPTY = ir.Shape([])  # (a marker: the list has no element; compared by identity)
Elements = ir.Shape | None


def _merge(a: Elements, b: Elements) -> Elements:
    """The element shape of a list holding the elements of two (``_EMPTY``: none)."""
    if a is _EMPTY:
        return b
    if b is _EMPTY:
        return a
    return merge_shapes([a, b])


@dataclass
class _Known:
    """What a body knows of a list it hands an inner Loop: its elements' shape."""

    elements: Elements


def _element_type(
    listed: ir.Value | None, out: ir.Value, types: MutableMapping[ir.Value, Any]
) -> None:
    """The type of a tensor read off a list: its elements' (when ``out`` has none)."""
    type_ = types.get(listed, listed.type) if listed is not None else None
    tensor = type_.elem_type if isinstance(type_, ir.SequenceType) else None
    if out.type is None and isinstance(tensor, ir.TensorType):
        types[out] = tensor


def _held_elements(known: object) -> Elements:
    """The element shape of a list as held: by the walk (a list of known elements, a list
    held as one tensor) or by an enclosing body (:class:`_Known`); None when not known."""
    if isinstance(known, _Known):
        return known.elements
    if isinstance(known, StaticSequence):
        found: Elements = _EMPTY
        for element in known.elements:
            found = _merge(found, element.shape)
        return found
    if isinstance(known, StackedSequence):
        return known.element
    return None


def _outside_list(value: ir.Value, held: dict[str | None, Any]) -> Elements:
    """The element shape of a list from outside the loops followed: a graph input's declared
    one (the model's signature, as for a tensor input), or what the walk holds of it."""
    if value.is_graph_input() and isinstance(value.type, ir.SequenceType):
        return value.shape
    return _held_elements(held.get(value.name))


def _alike(a: Elements, b: Elements) -> bool:
    """The same shape, dim for dim (an unknown dim alike an unknown one)."""
    if a is None or b is None:
        return a is b
    return len(a) == len(b) and all(
        x == y
        if isinstance(x, int) or isinstance(y, int)
        else getattr(x, "value", None) == getattr(y, "value", None)
        for x, y in zip(a, b, strict=True)
    )


def _loop_lists(
    nodes: Iterable[ir.Node],
    held: dict[str | None, Any],
    opset: int,
    depth: int = 0,
    outer: Mapping[ir.Value, ir.Shape | None] | None = None,
    outer_types: Mapping[ir.Value, Any] | None = None,
    record: BodyFacts | None = None,
) -> dict[ir.Value, ir.Shape]:
    """The element shape of each list a ``Loop`` of ``graph`` carries out, by induction: the
    elements it starts with (``held``: what the walk holds of the values, by name), merged
    with every tensor its body inserts, inferred with the list assumed to hold such elements,
    until the assumption holds (a dim that differs becomes unknown; ranks that differ, or a
    start the walk does not hold, give nothing). Loops inside bodies are followed."""
    from seqpasses.core.shapes import ShapeOracle

    found: dict[ir.Value, ir.Shape] = {}
    oracle = ShapeOracle(opset)
    for node in nodes:
        if node.op_type != "Loop" or node.domain not in ("", "ai.onnx") or depth > 4:
            continue
        body_attr = node.attributes.get("body")
        if body_attr is None or body_attr.type != ir.AttributeType.GRAPH:
            continue
        body = body_attr.as_graph()
        for j, initial in enumerate(node.inputs[2:]):
            if initial is None or j + 2 >= len(body.inputs) or j >= len(node.outputs):
                continue
            if not isinstance(body.inputs[2 + j].type, ir.SequenceType):
                continue
            guess = _held_elements(held.get(initial.name))
            if guess is None:
                continue
            around = outer or {}
            carried = [  # (a carried tensor: its initial shape, while the body keeps it)
                None
                if v is None or isinstance(body.inputs[2 + k].type, ir.SequenceType)
                else around.get(v, v.shape)
                for k, v in enumerate(node.inputs[2 : len(body.inputs)])
            ]
            env = _Env(
                ChainMap(dict(around)), ChainMap(dict(outer_types or {})), held, oracle, depth
            )
            for _ in range(6):
                ends, kept = _body_elements(body, j, guess, carried, env)
                after = _merge(guess, ends) if ends is not None else None
                if after is None:
                    break
                held_up = [
                    c if c is not None and k is not None and same_shape(c, k) else None
                    for c, k in zip(carried, kept, strict=True)
                ]
                same = after is guess or (
                    after is not _EMPTY and guess is not _EMPTY and _alike(after, guess)
                )
                if same and held_up == carried:
                    if guess is not _EMPTY and guess is not None:
                        found[node.outputs[j]] = guess
                        if record is not None:  # (what the body computes, the list so)
                            _body_elements(body, j, guess, carried, env, record)
                    break
                guess, carried = after, held_up
    return found


@dataclass
class _Env:
    """What the induction's walk (:func:`_body_elements`) knows where it is: the tensors'
    shapes and types and the lists' element shapes, each scope a child of the one it is in;
    what the walk holds of the main graph's lists; the oracle; how deep in loops it is."""

    shapes: ChainMap[ir.Value, ir.Shape | None]
    types: ChainMap[ir.Value, Any]
    held: dict[str | None, Any]
    oracle: Any
    depth: int
    elements: ChainMap[ir.Value, Elements] = field(default_factory=ChainMap)

    def child(self) -> _Env:
        """A scope inside this one (a body's, a branch's)."""
        return _Env(
            self.shapes.new_child(),
            self.types.new_child(),
            self.held,
            self.oracle,
            self.depth,
            self.elements.new_child(),
        )

    def shape(self, v: ir.Value | None) -> ir.Shape | None:
        return None if v is None else self.shapes.get(v, v.shape)  # (outside: as filled)

    def type(self, v: ir.Value) -> Any:
        return self.types.get(v, v.type)

    def listed(self, v: ir.Value | None) -> Elements:
        if v is None:
            return None
        return self.elements[v] if v in self.elements else _outside_list(v, self.held)


def _body_elements(
    body: ir.Graph,
    j: int,
    guess: Elements,
    carried: list[ir.Shape | None],
    around: _Env,
    record: BodyFacts | None = None,
) -> tuple[Elements, list[ir.Shape | None]]:
    """The element shape of the list a Loop's ``body`` gives back as carried value ``j``, its
    list coming in with elements of shape ``guess`` and its carried tensors of the shapes
    ``carried``: None where it cannot be told; and the shapes of the carried values it gives
    back (the tensors'). ``record`` gets the shapes of the body's own tensors."""
    env = around.child()
    env.shapes[body.inputs[0]] = ir.Shape([])
    env.shapes[body.inputs[1]] = ir.Shape([])
    for k, value in enumerate(body.inputs[2:]):
        if isinstance(value.type, ir.SequenceType):
            env.elements[value] = guess if k == j else None
        else:  # (as assumed: the caller checks that the body keeps it)
            env.shapes[value] = carried[k] if k < len(carried) else None
    _step(body, env)
    if record is not None:  # (the body's own tensors, by what this run proves)
        for node in body:
            for out in node.outputs:
                found = env.shapes.maps[0].get(out)
                type_ = env.type(out)
                if found is not None and isinstance(type_, ir.TensorType) and out not in record:
                    record[out] = (type_, found)
    kept = [env.shape(v) for v in body.outputs[1 : 1 + len(carried)]]
    kept += [None] * (len(carried) - len(kept))
    if j + 1 >= len(body.outputs):
        return None, kept
    return env.elements.get(body.outputs[1 + j]), kept


def _step(nodes: Iterable[ir.Node], env: _Env) -> None:
    """Follow ``nodes`` (a body's, a branch's) for :func:`_body_elements`: each tensor's shape
    into ``env.shapes`` (what it cannot tell: None), each list's element shape into
    ``env.elements``."""
    shapes, types, elements = env.shapes, env.types, env.elements
    shape, listed = env.shape, env.listed
    for node in nodes:
        op, ins, outs = node.op_type, list(node.inputs), list(node.outputs)
        if node.domain not in ("", "ai.onnx"):
            op = ""
        if op == "SequenceEmpty":
            elements[outs[0]] = _EMPTY
        elif op == "SequenceConstruct":
            merged: Elements = _EMPTY
            for v in ins:
                merged = _merge(merged, shape(v))
            elements[outs[0]] = merged
        elif op == "SequenceInsert" and len(ins) >= 2:
            elements[outs[0]] = (
                _merge(listed(ins[0]), shape(ins[1])) if listed(ins[0]) is not None else None
            )
        elif op == "SequenceErase" or (op == "Identity" and ins and ins[0] in elements):
            elements[outs[0]] = listed(ins[0])
        elif op == "SequenceAt":
            got = listed(ins[0])
            shapes[outs[0]] = None if got is _EMPTY else got
            _element_type(ins[0], outs[0], types)
        elif op == "ConcatFromSequence":
            shapes[outs[0]] = _concatenation(listed(ins[0]), node)
            _element_type(ins[0], outs[0], types)
        elif op == "If":
            _branches(node, env)
        elif op == "Loop":
            _inner_loop(node, env)
        else:
            for out in outs:
                if isinstance(out.type, ir.SequenceType):
                    elements[out] = None
            if any(isinstance(v, ir.Value) and v in elements for v in ins) or op in (
                "",
                "Scan",
                "SequenceMap",
                "SequenceLength",
            ):
                for out in outs:
                    shapes.setdefault(out, None)
                if op == "SequenceLength":
                    shapes[outs[0]] = ir.Shape([])
                    types[outs[0]] = ir.TensorType(ir.DataType.INT64)
                continue
            inputs = [(env.type(v), shape(v)) if v is not None else None for v in ins]
            for out, (type_, inferred) in zip(outs, env.oracle.infer(node, inputs), strict=True):
                shapes[out] = inferred
                if out.type is None and type_ is not None:
                    types[out] = type_


def _concatenation(got: Elements, node: ir.Node) -> ir.Shape | None:
    """A ConcatFromSequence's shape over elements of shape ``got``: their rank (one more with
    ``new_axis``), the axis unknown."""
    if got is None or got is _EMPTY:
        return None
    new_axis = node.attributes.get_int("new_axis", 0)
    rank = len(got) + new_axis
    axis = node.attributes.get_int("axis", 0)
    if not -rank <= axis < rank:
        return None
    axis %= rank
    dims: list[int | ir.SymbolicDim] = list(got)
    if new_axis:
        dims.insert(axis, ir.SymbolicDim(None))
    else:
        dims[axis] = ir.SymbolicDim(None)
    return ir.Shape(dims)


def _inner_loop(node: ir.Node, env: _Env) -> None:
    """A Loop inside a body for :func:`_step`: its lists by :func:`_loop_lists`, with what
    this body knows of those it hands in; its tensors unknown."""
    inner: dict[str | None, Any] = {
        v.name: env.held.get(v.name) for v in node.inputs if v is not None
    }
    for v in node.inputs:  # (what this body knows of the lists it hands the inner loop)
        if v is not None and v in env.elements:
            inner[v.name] = _Known(env.listed(v))
    lists = _loop_lists([node], inner, env.oracle.opset, env.depth + 1, env.shapes, env.types)
    inner_body = node.attributes.get("body")
    gives = list(inner_body.as_graph().inputs[2:]) if inner_body is not None else []
    for k, out in enumerate(node.outputs):  # (a carried list: the body's input says so)
        if out in lists or (k < len(gives) and isinstance(gives[k].type, ir.SequenceType)):
            env.elements[out] = lists.get(out)
        else:
            env.shapes[out] = None


def _branches(node: ir.Node, env: _Env) -> None:
    """An If for :func:`_step`: both branches followed, each output what either gives."""
    outs = list(node.outputs)
    given: list[list[tuple[bool, Any]]] = []
    for name in ("then_branch", "else_branch"):
        attr = node.attributes.get(name)
        if attr is None or attr.type != ir.AttributeType.GRAPH:
            given = []
            break
        branch = attr.as_graph()
        inner = env.child()
        _step(branch, inner)
        given.append(
            [
                (True, inner.elements[v]) if v in inner.elements else (False, inner.shape(v))
                for v in branch.outputs
            ]
        )
        for v, out in zip(branch.outputs, outs, strict=False):
            if out.type is None and inner.type(v) is not None:
                env.types.setdefault(out, inner.type(v))
    for k, out in enumerate(outs):
        got = [branch[k] for branch in given if k < len(branch)]
        if len(got) != 2 or got[0][0] != got[1][0]:
            env.shapes[out] = None
            if isinstance(out.type, ir.SequenceType):
                env.elements[out] = None
        elif got[0][0]:
            env.elements[out] = _merge(got[0][1], got[1][1])
        else:
            env.shapes[out] = merge_shapes([got[0][1], got[1][1]])


def _refine(
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
    from seqpasses.core.shapes import ShapeOracle

    oracle = ShapeOracle(opset)
    known: dict[ir.Value, tuple[Any, ir.Shape | None]] = {}
    tainted = tainted if tainted is not None else set()
    changed = set(changed) if changed is not None else set()
    for node in graph:
        if node.domain not in ("", "ai.onnx"):
            continue
        if node.op_type not in ("Slice", "Pad"):
            if any(v in changed for v in node.inputs) and not any(
                v in tainted for v in node.inputs
            ):  # (what reads a refined value: onnx's inference of the node, again)
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


_SURE_OF_A_SEQUENCE = frozenset({"SequenceLength", "SequenceInsert", "SequenceErase"})
"""Ops whose output's claims do not hang on the element shape of the sequence they read (a
length is an int64 scalar; a list in, a list out: its own claim is dropped as any list's)."""


def _fill_bodies(
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


def _fill_body(
    body: ir.Graph, inferred: onnx.GraphProto, proven: BodyFacts, opset: int, refine: bool
) -> None:
    types = {info.name: info.type for info in (*inferred.value_info, *inferred.output)}
    tainted: set[ir.Value] = set()
    signature = {*body.inputs, *body.outputs}  # (the model's own: onnx's checker wants them)
    for value in [*body.inputs, *(out for node in body for out in node.outputs)]:
        if isinstance(value.type, ir.SequenceType):
            if value not in signature:
                value.shape = None  # (what is declared of a list's elements is no proof)
            tainted.add(value)
    for node in body:
        reads_list = any(v in tainted for v in node.inputs if v is not None)
        for value in node.outputs:
            fact = proven.get(value) if value not in signature else None
            claimed = _shape_of(types.get(value.name or ""))
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
                value.shape = _shape_of(claim)
    if refine:
        _refine(body, opset, tainted)
    _fill_bodies(body, inferred, proven, opset, refine)


def annotate(
    model: ir.Model, options: Options | None = None, *, disproved: list[str] | None = None
) -> list[str]:
    """Declare the type and shape of every value of ``model`` seqpasses can type, in place,
    changing nothing else: the main graph with what the walk proves beyond onnx's inference,
    every Loop, If, Scan and SequenceMap body with what onnx's inference says there (in
    linear pieces), never a list's element shape the walk does not prove, nor a shape
    computed from such a list's elements. ``options.input_shapes`` fixes graph input shapes
    first. Returns the notes of that (what was fixed); ``disproved`` gets one line per
    declaration of the model's own that seqpasses disproves and replaces (those notes too)."""
    from seqpasses.checks.selfcheck import passes_checker
    from seqpasses.passes.input_shapes import fix_input_shapes
    from seqpasses.passes.repair_shapes import repair_declarations

    notes: list[str] = []
    shapes = options.shapes() if options is not None else {}
    if shapes:
        notes = fix_input_shapes(model, shapes)
    valid = not passes_checker(skeleton(model).proto)
    # what seqpasses proves of the graph outputs, every fact declared (as shape_facts says)
    probe = ir.serde.deserialize_model(skeleton(model).proto)
    fill_shapes_in_place(probe, checkable=False)
    proved = {value.name: value.shape for value in probe.graph.outputs}
    saved = [
        (value, value.type, value.shape)
        for _, graph in graphs(model)
        for value in [*graph.inputs, *(out for node in graph for out in node.outputs)]
    ]
    fill_shapes_in_place(model, checkable=True, bodies=True)
    if valid and passes_checker(skeleton(model).proto):
        # what the walk proves in a body, beside what onnx's checker infers there, would make
        # the model one the checker rejects (where the spec and ONNX Runtime differ): not used
        for value, type_, shape in saved:
            value.type, value.shape = type_, shape
        fill_shapes_in_place(model, checkable=True, bodies=True, body_facts=False, refine=False)
    refuted: list[tuple[ir.Value, ir.Shape | None, ir.Shape]] = []
    for value in model.graph.outputs:  # an exporter's guessed output rank, say
        shape = proved.get(value.name)
        if shape is not None and contradicts(value.shape, shape):
            refuted.append((value, value.shape, shape))
            value.shape = shape
    if valid and passes_checker(skeleton(model).proto):
        for value, declared, _ in refuted:  # (onnx's checker would not take the proof)
            value.shape = declared
        refuted = []
        # what seqpasses proves shows onnx's inference a declaration of the model's own it
        # contradicts: that declaration is replaced
        repairs: list[str] = []
        repair_declarations(model, repairs.append)
        notes.extend(repairs)
        if disproved is not None:
            disproved.extend(repairs)
    for value, declared, shown in refuted:
        line = (
            f"output '{value.name}': declared {shape_text(declared)}, which seqpasses "
            f"disproves; {shape_text(shown)} is declared"
        )
        notes.append(line)
        if disproved is not None:
            disproved.append(line)
    return notes


def infer_shapes_ir(model: ir.Model) -> tuple[ir.Model, ShapeFacts]:
    """Infer on an ``onnx_ir.Model``; returns a new model with shapes filled, and the facts."""
    result = ir.serde.deserialize_model(ir.serde.serialize_model(model))
    analysis, copy = fill_shapes_in_place(result, checkable=False)
    sequences: dict[tuple[str, str], StaticSequence | StackedSequence | Unknown] = {}
    integers: dict[tuple[str, str], int] = {}
    for path, graph in graphs(copy):
        for v in [*graph.inputs, *(o for n in graph for o in n.outputs)]:
            if v.name and v in analysis.sequences:
                sequences[(path, v.name)] = analysis.sequences[v]
            if v.name and v in analysis.integers:
                integers[(path, v.name)] = analysis.integers[v]
    facts = ShapeFacts(outputs=[o.name or "" for o in result.graph.outputs])
    for path, graph in graphs(result):
        values = list(graph.inputs) + [out for node in graph for out in node.outputs]
        for value in values:
            if not value.name:
                continue
            found = sequences.get((path, value.name))
            static = found if isinstance(found, StaticSequence) else None
            length: DimFact = None if static is None else len(static)
            shape = value.shape
            if path != "main" and isinstance(value.type, ir.SequenceType):
                # a body's list: what is declared of its elements is no proof
                known = _sequence_facts({value: found}) if found is not None else {}
                shape = known.get(value, (None, None))[1]
            if isinstance(found, StackedSequence):
                length = _dims(ir.Shape([found.length]))[0]  # type: ignore[index]
            dtype = value.type.dtype if value.type is not None else None
            facts.values.append(
                ValueFact(
                    name=value.name,
                    graph=path,
                    kind=_kind(value),
                    dtype=None if dtype is None else dtype.name.lower(),
                    shape=_dims(shape),
                    length=length,
                    value=integers.get((path, value.name)),
                    element_shapes=None
                    if static is None
                    else tuple(_dims(e.shape) for e in static.elements),
                )
            )
    return result, facts


def _taken(
    model: onnx.ModelProto | str | os.PathLike[str],
) -> tuple[ir.Model | None, onnx.ModelProto, Path | None]:
    """A ModelProto or a path through the gate every entry passes (:func:`seqpasses.pipeline.load`:
    the data gate, admission with its :class:`~seqpasses.errors.InputWarning`, the limits):
    the onnx_ir model (None when onnx_ir cannot hold it), the protobuf and the data's folder."""
    import warnings

    from seqpasses.errors import InputWarning
    from seqpasses.options import Options
    from seqpasses.pipeline import load

    loaded = load(model, Options())
    for line in loaded.warnings:
        warnings.warn(line, InputWarning, stacklevel=3)
    return loaded.model, loaded.proto, loaded.folder


@overload
def infer_shapes(model: onnx.ModelProto) -> onnx.ModelProto: ...
@overload
def infer_shapes(model: ir.Model) -> ir.Model: ...
@overload
def infer_shapes(model: str | os.PathLike[str]) -> onnx.ModelProto: ...


def infer_shapes(
    model: onnx.ModelProto | ir.Model | str | os.PathLike[str],
) -> onnx.ModelProto | ir.Model:
    """Return the model with ``value_info`` filled for every value seqpasses can type: what
    ``seqpasses shapes IN -o OUT`` writes (:func:`annotate`), a model onnx's full check and
    ONNX Runtime take wherever they took the input.

    A ``ModelProto`` or a path gives a ``ModelProto`` (a path's external data read in, so that
    it can be saved anywhere); an ``onnx_ir.Model`` gives a new one. A model seqpasses cannot
    hold comes back as it was. For the facts themselves use :func:`shape_facts` (which also
    says what onnx's inference would reject: an unbind's squeezed elements, as ONNX Runtime
    computes them).
    """
    if isinstance(model, ir.Model):
        result = ir.serde.deserialize_model(ir.serde.serialize_model(model))
        annotate(result)
        return result
    held, proto, folder = _taken(model)
    if held is None:
        copy = onnx.ModelProto()
        copy.CopyFrom(proto)
        return with_external_data(copy, folder)
    annotate(held)
    return with_external_data(ir.serde.serialize_model(held), folder)


def shape_facts(model: onnx.ModelProto | ir.Model | str | os.PathLike[str]) -> ShapeFacts:
    """Per value: kind, dtype, shape; for a static sequence its length and element shapes. A
    model onnx_ir cannot hold (scikit-learn's ``ZipMap`` maps) gets what ONNX's inference
    says of it."""
    if isinstance(model, ir.Model):
        return infer_shapes_ir(model)[1]
    held, proto, _ = _taken(model)
    if held is None:
        return _proto_facts(_infer(proto))
    return infer_shapes_ir(held)[1]


def _proto_facts(proto: onnx.ModelProto) -> ShapeFacts:
    """Facts read off a ModelProto's declarations (types onnx_ir cannot hold are unknown)."""
    graph = proto.graph
    facts = ShapeFacts(outputs=[o.name for o in graph.output])
    for info in (*graph.input, *graph.value_info, *graph.output):
        kind = {
            "tensor_type": "tensor",
            "sequence_type": "sequence",
            "optional_type": "optional",
        }.get(str(info.type.WhichOneof("value")), "unknown")
        shape: tuple[DimFact, ...] | None = None
        dtype = None
        if kind == "tensor":
            tensor = info.type.tensor_type
            dtype = onnx.helper.tensor_dtype_to_np_dtype(tensor.elem_type).name
            if tensor.HasField("shape"):
                shape = tuple(
                    d.dim_value if d.HasField("dim_value") else (d.dim_param or None)
                    for d in tensor.shape.dim
                )
        if any(f.name == info.name for f in facts.values):
            continue
        facts.values.append(ValueFact(info.name, "main", kind, dtype, shape))
    return facts

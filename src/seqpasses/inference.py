"""Shape inference that knows sequences: element shapes, lengths, exact concat sizes.

:func:`infer_shapes` first runs ``onnx.shape_inference.infer_shapes(data_prop=True)`` (so it knows
at least what ONNX knows), then seqpasses' own walk in analysis mode, which tracks each static
sequence as its list of elements. Its answers only fill in what ONNX left unknown: a dim ONNX
knows is never changed, a sequence value stays a sequence, and symbolic sums keep their names
(``N+M``, ``3*N``).
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass, field
from typing import Any, overload

import onnx
import onnx_ir as ir

from seqpasses.core.dims import fill_shape, merge_shapes
from seqpasses.core.graph import graphs
from seqpasses.core.sequence import StackedSequence, StaticSequence, Unknown
from seqpasses.options import FoldOptions
from seqpasses.passes.analysis import analyze

__all__ = [
    "ShapeFacts",
    "ValueFact",
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


def _apply_sequence_facts(
    state: dict[ir.Value, StaticSequence | StackedSequence | Unknown],
) -> None:
    """Give every static sequence value its sequence type and the shape its elements share
    (every element of a list held as one tensor has its element shape)."""
    for value, known in state.items():
        if isinstance(known, StackedSequence) and isinstance(value.type, ir.SequenceType | None):
            if value.type is None and known.dtype is not None:
                value.type = ir.SequenceType(ir.TensorType(known.dtype))
            value.shape = fill_shape(value.shape, known.element)
            continue
        if not isinstance(known, StaticSequence):
            continue
        if value.type is None or isinstance(value.type, ir.SequenceType):
            dtype = known.dtype or (value.type.dtype if value.type is not None else None)
            if dtype is not None:
                value.type = ir.SequenceType(ir.TensorType(dtype))
        common = merge_shapes([e.shape for e in known.elements])
        value.shape = fill_shape(value.shape, common)


def fill_shapes_in_place(model: ir.Model) -> None:
    """Fill missing types and shapes of the main graph's values, without copying the model.

    ONNX's inference runs on a serialized copy and its answers are read straight from the
    protobuf (no second deserialization); then seqpasses' walk adds what it knows of sequences.
    """
    proto = ir.serde.serialize_model(model)
    try:
        inferred = onnx.shape_inference.infer_shapes(proto, data_prop=True)
    except Exception:
        inferred = proto
    types = {vi.name: vi.type for vi in inferred.graph.value_info}
    for node in model.graph:
        for value in node.outputs:
            type_proto = types.get(value.name or "")
            if type_proto is None or type_proto.WhichOneof("value") is None:
                continue
            if value.type is None:
                value.type = ir.serde.deserialize_type_proto_for_type(type_proto)
            value.shape = fill_shape(
                value.shape, ir.serde.deserialize_type_proto_for_shape(type_proto)
            )
    _apply_sequence_facts(analyze(model, FoldOptions()).sequences)


def infer_shapes_ir(model: ir.Model) -> tuple[ir.Model, ShapeFacts]:
    """Infer on an ``onnx_ir.Model``; returns a new model with shapes filled, and the facts."""
    proto = ir.serde.serialize_model(model)
    # When ONNX's inference gives up on a model, seqpasses' own walk still runs.
    with contextlib.suppress(Exception):
        proto = onnx.shape_inference.infer_shapes(proto, data_prop=True)
    result = ir.serde.deserialize_model(proto)
    analysis = analyze(result, FoldOptions())
    state = analysis.sequences
    _apply_sequence_facts(state)
    facts = ShapeFacts(outputs=[o.name or "" for o in result.graph.outputs])
    for path, graph in graphs(result):
        values = list(graph.inputs) + [out for node in graph for out in node.outputs]
        for value in values:
            if not value.name:
                continue
            found = state.get(value)
            static = found if isinstance(found, StaticSequence) else None
            length: DimFact = None if static is None else len(static)
            if isinstance(found, StackedSequence):
                length = _dims(ir.Shape([found.length]))[0]  # type: ignore[index]
            dtype = value.type.dtype if value.type is not None else None
            facts.values.append(
                ValueFact(
                    name=value.name,
                    graph=path,
                    kind=_kind(value),
                    dtype=None if dtype is None else dtype.name.lower(),
                    shape=_dims(value.shape),
                    length=length,
                    value=analysis.integers.get(value),
                    element_shapes=None
                    if static is None
                    else tuple(_dims(e.shape) for e in static.elements),
                )
            )
    return result, facts


@overload
def infer_shapes(model: onnx.ModelProto) -> onnx.ModelProto: ...
@overload
def infer_shapes(model: ir.Model) -> ir.Model: ...
@overload
def infer_shapes(model: str | os.PathLike[str]) -> onnx.ModelProto: ...


def infer_shapes(
    model: onnx.ModelProto | ir.Model | str | os.PathLike[str],
) -> onnx.ModelProto | ir.Model:
    """Return the model with ``value_info`` filled for every value seqpasses can type.

    A ``ModelProto`` or a path gives a ``ModelProto``; an ``onnx_ir.Model`` gives a new one.
    For the facts themselves use :func:`shape_facts`.
    """
    if isinstance(model, ir.Model):
        return infer_shapes_ir(model)[0]
    proto = model if isinstance(model, onnx.ModelProto) else onnx.load(os.fspath(model))
    return ir.serde.serialize_model(infer_shapes_ir(ir.serde.deserialize_model(proto))[0])


def shape_facts(model: onnx.ModelProto | ir.Model | str | os.PathLike[str]) -> ShapeFacts:
    """Per value: kind, dtype, shape; for a static sequence its length and element shapes."""
    if isinstance(model, ir.Model):
        return infer_shapes_ir(model)[1]
    proto = model if isinstance(model, onnx.ModelProto) else onnx.load(os.fspath(model))
    return infer_shapes_ir(ir.serde.deserialize_model(proto))[1]

"""Shape inference that knows sequences: element shapes, lengths, exact concat sizes.

:func:`infer_shapes` first runs ``onnx.shape_inference.infer_shapes(data_prop=True)`` (so it knows
at least what ONNX knows), then seqpasses' own walk in analysis mode, which tracks each static
sequence as its list of elements. Its answers only fill in what ONNX left unknown: a dim ONNX
knows is never changed, a sequence value stays a sequence, and symbolic sums keep their names
(``N+M``, ``3*N``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, overload

import onnx
import onnx_ir as ir

from seqpasses.core.dims import (
    contradicts,
    shape_text,
)
from seqpasses.core.graph import graphs
from seqpasses.core.sequence import StackedSequence, StaticSequence, Unknown
from seqpasses.core.skeleton import skeleton
from seqpasses.io import with_external_data
from seqpasses.options import Options
from seqpasses.passes.fill_shapes import fill_shapes_in_place, inferred, sequence_facts
from seqpasses.pipeline import load

__all__ = [
    "ShapeFacts",
    "ValueFact",
    "annotate",
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
    from seqpasses.passes.analysis import has_lists
    from seqpasses.passes.input_shapes import fix_input_shapes
    from seqpasses.passes.repair_shapes import repair_declarations

    notes: list[str] = []
    shapes = options.shapes() if options is not None else {}
    if shapes:
        notes = fix_input_shapes(model, shapes)
    given = skeleton(model).proto
    valid = not passes_checker(given)
    # what seqpasses proves of the graph outputs, every fact declared (as shape_facts says);
    # of a model with nothing the walk follows, what the fill below declares (it learns no
    # fact that onnx's inference could contradict): no probe
    proved: dict[str | None, ir.Shape | None] = {}
    if has_lists(model):
        probe = ir.serde.deserialize_model(given)
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
            f"disproves: declared {shape_text(shown)} instead"
        )
        notes.append(line)
        if disproved is not None:
            disproved.append(line)
    return notes


def infer_shapes_ir(model: ir.Model) -> tuple[ir.Model, ShapeFacts]:
    """Infer on an ``onnx_ir.Model``; returns a new model with shapes filled, and the facts."""
    result = ir.serde.deserialize_model(ir.serde.serialize_model(model))
    analysis, copy = fill_shapes_in_place(result, checkable=False, bodies=True)
    sequences: dict[tuple[str, str], StaticSequence | StackedSequence | Unknown] = {}
    integers: dict[tuple[str, str], int] = {}
    for path, graph in graphs(copy):
        for v in [*graph.inputs, *(o for n in graph for o in n.outputs)]:
            if v.name and v in analysis.sequences:
                sequences[(path, v.name)] = analysis.sequences[v]
            if v.name and v in analysis.integers:
                integers[(path, v.name)] = analysis.integers[v]
    return result, _facts(result, sequences, integers)


def declared_facts(model: ir.Model) -> ShapeFacts | None:
    """The facts of a model :func:`annotate` declared, read off its declarations, when it
    holds nothing the walk follows (no list: no length, element shape or folded integer to
    add); None when it does (:func:`shape_facts` then)."""
    from seqpasses.passes.analysis import has_lists

    return None if has_lists(model) else _facts(model, {}, {})


def _facts(
    result: ir.Model,
    sequences: dict[tuple[str, str], StaticSequence | StackedSequence | Unknown],
    integers: dict[tuple[str, str], int],
) -> ShapeFacts:
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
                known = sequence_facts({value: found}) if found is not None else {}
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
    return facts


def _taken(
    model: onnx.ModelProto | str | os.PathLike[str],
) -> tuple[ir.Model | None, onnx.ModelProto, Path | None]:
    """A ModelProto or a path through the gate every entry passes (:func:`seqpasses.pipeline.load`:
    the data gate, admission with its :class:`~seqpasses.errors.InputWarning`, the limits):
    the onnx_ir model (None when onnx_ir cannot hold it), the protobuf and the data's folder."""
    import warnings

    from seqpasses.errors import InputWarning

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
        return _proto_facts(inferred(proto))
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

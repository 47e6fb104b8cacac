"""The gate every model passes before anything else reads it: the invariants the rest of
seqpasses relies on, checked once, for every entry (a file, a ``ModelProto``, an onnx_ir
model; the command line and the API alike).

A model that breaks one is refused with :class:`~seqpasses.errors.BadInputError` (one line,
exit 2), before anything is built from it:

- every text field (names, op types, domains, metadata, doc strings) is valid UTF-8;
- every data type (of a tensor, a declared type, a dtype attribute such as ``Cast``'s ``to``
  or ``SequenceEmpty``'s ``dtype``) is one onnx and onnx_ir know;
- every rank (declared or of a tensor) is within numpy's; a tensor's dims are not negative
  and its bytes can be counted in 63 bits;
- types nest (sequences of sequences, optionals) and graphs nest (bodies of bodies) to a
  bounded depth;
- the ONNX ops have as many inputs and outputs as their schema allows, and control flow
  as many as its bodies declare (a ``Loop``'s carried values, an ``If``'s branches);
- no model-local function calls itself, directly or through others.

ONNX's checker says much of this too, but the checker is not the gate: a model it rejects is
still taken when ONNX Runtime loads it (:mod:`seqpasses.checks.admission`), and neither looks
at a function the graph does not call.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import onnx

from seqpasses.checks.dtypes import Refusal, bits, holds_its_data, known_dtypes, tensor_dtypes
from seqpasses.checks.functions import no_recursion
from seqpasses.checks.schema import arity, call_arity
from seqpasses.errors import BadInputError

__all__ = [
    "MAX_GRAPH_DEPTH",
    "MAX_RANK",
    "MAX_TYPE_DEPTH",
    "check_wellformed",
]

MAX_TYPE_DEPTH = 8
"""How deep types may nest (``seq(seq(float))`` is 2): ONNX Runtime runs 2, exporters write 2."""

MAX_GRAPH_DEPTH = 16
"""How deep bodies may nest (a Loop in an If in a Loop ... is 3; protobuf itself reads no
more than about 30)."""


MAX_RANK = 32
"""The most dims a value may have: numpy arrays hold 64 (32 before numpy 2), but some of its
functions (``nditer``, ``einsum``, what ``Split``'s kernels use) take only 32."""

_COUNTABLE = 2**63
"""A tensor's bytes must be fewer than this (numpy's sizes are signed 64-bit)."""

_DTYPE_ATTRIBUTES = {
    ("Cast", "to"),
    ("SequenceEmpty", "dtype"),
    ("EyeLike", "dtype"),
    ("RandomNormal", "dtype"),
    ("RandomUniform", "dtype"),
    ("RandomNormalLike", "dtype"),
    ("RandomUniformLike", "dtype"),
    ("Multinomial", "dtype"),
    ("Bernoulli", "dtype"),
    ("QuantizeLinear", "output_dtype"),
    ("DequantizeLinear", "output_dtype"),
}
"""The attributes of ONNX ops that name a data type."""

_DEFAULT = ("", "ai.onnx")


def check_wellformed(proto: onnx.ModelProto, name: str) -> None:
    """Refuse ``proto`` unless it holds every invariant of the module docstring."""
    try:
        _Gate(proto).model(proto)
        no_recursion(proto)
    except Refusal as refusal:
        raise BadInputError(f"{name}: {refusal}; refused") from None


# -- one walk -----------------------------------------------------------------------------


class _Gate:
    """One walk of every graph and function: text, types, tensors, nodes. Labels for a
    refusal are made only when one is written (a graph of 20,000 nodes would pay more for
    the words than for the checks)."""

    def __init__(self, proto: onnx.ModelProto) -> None:
        self.opsets = {op.domain: op.version for op in proto.opset_import}
        self.functions = {(f.domain, f.name): f for f in proto.functions}
        self.texts: list[str] = []

    def model(self, proto: onnx.ModelProto) -> None:
        texts = self.texts
        texts.extend((proto.producer_name, proto.producer_version, proto.domain))
        texts.append(proto.doc_string)
        for op in proto.opset_import:
            texts.append(op.domain)
        _entries(texts, proto.metadata_props)
        for configuration in proto.configuration:
            _any_text(texts, configuration)
        self.flush("the model's header (producer, domain, doc string, metadata)")
        for function in proto.functions:
            self.function(function)
        self.graph(proto.graph, lambda: "the main graph", self.opsets, 1)
        for training in proto.training_info:
            _entries(texts, training.initialization_binding)
            _entries(texts, training.update_binding)
            for graph in (training.initialization, training.algorithm):
                self.graph(graph, lambda: "a training graph", self.opsets, 1)

    def flush(self, where: str | Callable[[], str]) -> None:
        """Refuse if a text gathered since the last flush is not UTF-8 (upb's protobuf hands
        such a string field as ``bytes``; ``str.join`` takes none)."""
        texts = self.texts
        try:
            "".join(texts)
        except TypeError:
            found = next(repr(text) for text in texts if isinstance(text, bytes))
            place = where if isinstance(where, str) else where()
            raise Refusal(f"{place} holds text that is not UTF-8 ({found})") from None
        texts.clear()

    def function(self, function: onnx.FunctionProto) -> None:
        texts = self.texts
        texts.extend((function.name, function.domain, function.overload, function.doc_string))
        texts.extend(function.input)
        texts.extend(function.output)
        texts.extend(function.attribute)
        for op in function.opset_import:
            texts.append(op.domain)
        _entries(texts, function.metadata_props)
        where = f"function {function.domain!r}::{function.name!r}"
        self.flush(where)
        for attr in function.attribute_proto:
            self.attribute(attr, lambda: where)
        local = {op.domain: op.version for op in function.opset_import} or self.opsets
        for info in function.value_info:
            self.value(info, lambda: where)
        self.nodes(function.node, lambda: where, local, 1)
        self.flush(where)

    def graph(
        self,
        graph: onnx.GraphProto,
        where: Callable[[], str],
        opsets: dict[str, int],
        depth: int,
    ) -> None:
        if depth > MAX_GRAPH_DEPTH:
            raise Refusal(f"bodies are nested more than {MAX_GRAPH_DEPTH} deep ({where()})")
        self.texts.extend((graph.name, graph.doc_string))
        _entries(self.texts, graph.metadata_props)
        for annotation in graph.quantization_annotation:
            _any_text(self.texts, annotation)
        for info in graph.input:
            self.value(info, where)
        for info in graph.output:
            self.value(info, where)
        for info in graph.value_info:
            self.value(info, where)
        for tensor in graph.initializer:
            self.tensor(tensor, lambda: f"an initializer of {where()}")
        for sparse in graph.sparse_initializer:
            self.tensor(sparse.values, lambda: f"a sparse initializer of {where()}")
            self.tensor(sparse.indices, lambda: f"a sparse initializer of {where()}")
        self.flush(where)
        self.nodes(graph.node, where, opsets, depth)
        self.flush(where)

    def value(self, info: onnx.ValueInfoProto, where: Callable[[], str]) -> None:
        self.texts.extend((info.name, info.doc_string))
        if info.metadata_props:
            _entries(self.texts, info.metadata_props)
        if info.HasField("type"):
            self.type(info.type, lambda: f"value {info.name!r} of {where()}", 1)

    def type(self, proto: onnx.TypeProto, where: Callable[[], str], depth: int) -> None:
        if depth > MAX_TYPE_DEPTH:
            raise Refusal(f"{where()} has a type nested more than {MAX_TYPE_DEPTH} deep")
        kind = proto.WhichOneof("value")
        self.texts.append(proto.denotation)
        if kind == "tensor_type" or kind == "sparse_tensor_type":
            inner = proto.tensor_type if kind == "tensor_type" else proto.sparse_tensor_type
            if inner.elem_type and inner.elem_type not in known_dtypes():
                raise Refusal(f"{where()} has data type {inner.elem_type}, not one ONNX defines")
            if inner.HasField("shape"):
                dims = inner.shape.dim
                if len(dims) > MAX_RANK:
                    raise Refusal(f"{where()} has rank {len(dims)}, more than {MAX_RANK}")
                for dim in dims:
                    self.texts.extend((dim.dim_param, dim.denotation))
        elif kind == "sequence_type":
            self.type(proto.sequence_type.elem_type, where, depth + 1)
        elif kind == "optional_type":
            self.type(proto.optional_type.elem_type, where, depth + 1)
        elif kind == "map_type":
            if proto.map_type.key_type not in known_dtypes():
                raise Refusal(f"{where()} has a map key type not one ONNX defines")
            self.type(proto.map_type.value_type, where, depth + 1)
        elif kind == "opaque_type":
            self.texts.extend((proto.opaque_type.domain, proto.opaque_type.name))

    def tensor(self, tensor: onnx.TensorProto, where: Callable[[], str]) -> None:
        """A tensor's dtype, dims and text (its data, which may be large, not read)."""
        self.texts.extend((tensor.name, tensor.doc_string))
        _entries(self.texts, tensor.external_data)
        _entries(self.texts, tensor.metadata_props)
        dtype = tensor.data_type
        if dtype not in tensor_dtypes():
            if dtype in known_dtypes():
                name = onnx.TensorProto.DataType.Name(dtype)
                raise Refusal(f"{where()} is a tensor of {name}, which onnx_ir cannot write")
            raise Refusal(f"{where()} has data type {dtype}, not one ONNX defines")
        dims = tensor.dims
        if dims:
            if len(dims) > MAX_RANK:
                raise Refusal(f"{where()} has rank {len(dims)}, more than {MAX_RANK}")
            if min(dims) < 0:
                raise Refusal(f"{where()} has a negative dim ({list(dims)})")
            if math.prod(max(d, 1) for d in dims) * bits(dtype) >= _COUNTABLE * 8:
                raise Refusal(f"{where()} has dims {list(dims)}: too many elements to count")
        if tensor.data_location != onnx.TensorProto.EXTERNAL:
            holds_its_data(tensor, math.prod(dims), where)

    def attribute(self, attr: onnx.AttributeProto, where: Callable[[], str]) -> None:
        self.texts.extend((attr.name, attr.ref_attr_name, attr.doc_string))
        kind = attr.type
        if kind in _TENSOR_KINDS:
            for tensor in _tensors(attr):
                self.tensor(tensor, lambda: f"attribute {attr.name!r} of {where()}")
        elif kind == onnx.AttributeProto.TYPE_PROTO:
            self.type(attr.tp, lambda: f"attribute {attr.name!r} of {where()}", 1)
        elif kind == onnx.AttributeProto.TYPE_PROTOS:
            for proto in attr.type_protos:
                self.type(proto, lambda: f"attribute {attr.name!r} of {where()}", 1)

    def nodes(
        self,
        nodes: Iterable[onnx.NodeProto],
        where: Callable[[], str],
        opsets: dict[str, int],
        depth: int,
    ) -> None:
        texts = self.texts
        version = opsets.get("", opsets.get("ai.onnx", 0))
        for node in nodes:
            texts.extend(node.input)
            texts.extend(node.output)
            texts.extend((node.name, node.op_type, node.domain, node.overload, node.doc_string))
            if node.metadata_props:
                _entries(texts, node.metadata_props)
            for configuration in node.device_configurations:
                _any_text(texts, configuration)

            def label(node: onnx.NodeProto = node) -> str:
                named = f"{node.name!r} " if node.name else ""
                return f"node {named}({node.op_type!r}) of {where()}"

            default = node.domain in _DEFAULT
            bodies: list[tuple[str, onnx.GraphProto]] = []
            for attr in node.attribute:
                kind = attr.type
                if kind == onnx.AttributeProto.INT:
                    texts.extend((attr.name, attr.ref_attr_name, attr.doc_string))
                    if (
                        default
                        and (node.op_type, attr.name) in _DTYPE_ATTRIBUTES
                        and attr.i not in known_dtypes()
                    ):
                        raise Refusal(
                            f"attribute {attr.name!r} of {label()} names data type "
                            f"{attr.i}, not one ONNX defines"
                        )
                elif kind == onnx.AttributeProto.GRAPH:
                    texts.extend((attr.name, attr.ref_attr_name, attr.doc_string))
                    bodies.append((attr.name, attr.g))
                elif kind == onnx.AttributeProto.GRAPHS:
                    texts.extend((attr.name, attr.ref_attr_name, attr.doc_string))
                    bodies.extend((attr.name, graph) for graph in attr.graphs)
                else:
                    self.attribute(attr, label)
            if default:
                arity(node, label, version, dict(bodies))
            else:
                function = self.functions.get((node.domain, node.op_type))
                if function is not None:
                    call_arity(node, function, label)
            for _, body in bodies:
                self.graph(body, _body_of(label), opsets, depth + 1)


def _body_of(label: Callable[[], str]) -> Callable[[], str]:
    return lambda: f"a body of {label()}"


def _any_text(texts: list[str], message: Any) -> None:
    """Every string field of ``message`` and the messages it holds (for the rare kinds of
    message the walk does not spell out: device configurations, quantization annotations)."""
    stack = [message]
    while stack:
        at = stack.pop()
        for field, value in at.ListFields():
            repeated = (
                field.is_repeated
                if hasattr(field, "is_repeated")  # (protobuf 7 has no label any more)
                else field.label == field.LABEL_REPEATED
            )
            if field.type == field.TYPE_STRING:
                if repeated:
                    texts.extend(value)
                else:
                    texts.append(value)
            elif field.type == field.TYPE_MESSAGE:
                if repeated:
                    stack.extend(value)
                else:
                    stack.append(value)


def _entries(texts: list[str], entries: Iterable[onnx.StringStringEntryProto]) -> None:
    for entry in entries:
        texts.extend((entry.key, entry.value))


_TENSOR_KINDS = frozenset(
    {
        onnx.AttributeProto.TENSOR,
        onnx.AttributeProto.TENSORS,
        onnx.AttributeProto.SPARSE_TENSOR,
        onnx.AttributeProto.SPARSE_TENSORS,
    }
)


def _tensors(attr: onnx.AttributeProto) -> Iterator[onnx.TensorProto]:
    if attr.type == onnx.AttributeProto.TENSOR:
        yield attr.t
    elif attr.type == onnx.AttributeProto.TENSORS:
        yield from attr.tensors
    elif attr.type == onnx.AttributeProto.SPARSE_TENSOR:
        yield attr.sparse_tensor.values
        yield attr.sparse_tensor.indices
    elif attr.type == onnx.AttributeProto.SPARSE_TENSORS:
        for sparse in attr.sparse_tensors:
            yield sparse.values
            yield sparse.indices


# -- functions ----------------------------------------------------------------------------

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
from functools import cache
from typing import Any

import onnx

from seqpasses.errors import BadInputError

__all__ = [
    "MAX_GRAPH_DEPTH",
    "MAX_RANK",
    "MAX_TYPE_DEPTH",
    "calls",
    "check_wellformed",
    "expanded_nodes",
    "known_dtypes",
    "tensor_dtypes",
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


@cache
def known_dtypes() -> frozenset[int]:
    """The data types both onnx and onnx_ir know (UNDEFINED excluded)."""
    import onnx_ir as ir

    held = {int(member) for member in ir.DataType}
    return frozenset(v for v in onnx.TensorProto.DataType.values() if v and v in held)


class _Refusal(Exception):
    """What is wrong, in words (the gate adds the model's name)."""


def check_wellformed(proto: onnx.ModelProto, name: str) -> None:
    """Refuse ``proto`` unless it holds every invariant of the module docstring."""
    try:
        _Gate(proto).model(proto)
        _no_recursion(proto)
    except _Refusal as refusal:
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
            raise _Refusal(f"{place} holds text that is not UTF-8 ({found})") from None
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
            raise _Refusal(f"bodies are nested more than {MAX_GRAPH_DEPTH} deep ({where()})")
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
            raise _Refusal(f"{where()} has a type nested more than {MAX_TYPE_DEPTH} deep")
        kind = proto.WhichOneof("value")
        self.texts.append(proto.denotation)
        if kind == "tensor_type" or kind == "sparse_tensor_type":
            inner = proto.tensor_type if kind == "tensor_type" else proto.sparse_tensor_type
            if inner.elem_type and inner.elem_type not in known_dtypes():
                raise _Refusal(f"{where()} has data type {inner.elem_type}, not one ONNX defines")
            if inner.HasField("shape"):
                dims = inner.shape.dim
                if len(dims) > MAX_RANK:
                    raise _Refusal(f"{where()} has rank {len(dims)}, more than {MAX_RANK}")
                for dim in dims:
                    self.texts.extend((dim.dim_param, dim.denotation))
        elif kind == "sequence_type":
            self.type(proto.sequence_type.elem_type, where, depth + 1)
        elif kind == "optional_type":
            self.type(proto.optional_type.elem_type, where, depth + 1)
        elif kind == "map_type":
            if proto.map_type.key_type not in known_dtypes():
                raise _Refusal(f"{where()} has a map key type not one ONNX defines")
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
                raise _Refusal(f"{where()} is a tensor of {name}, which onnx_ir cannot write")
            raise _Refusal(f"{where()} has data type {dtype}, not one ONNX defines")
        dims = tensor.dims
        if dims:
            if len(dims) > MAX_RANK:
                raise _Refusal(f"{where()} has rank {len(dims)}, more than {MAX_RANK}")
            if min(dims) < 0:
                raise _Refusal(f"{where()} has a negative dim ({list(dims)})")
            if math.prod(max(d, 1) for d in dims) * _bits(dtype) >= _COUNTABLE * 8:
                raise _Refusal(f"{where()} has dims {list(dims)}: too many elements to count")
        if tensor.data_location != onnx.TensorProto.EXTERNAL:
            _holds_its_data(tensor, math.prod(dims), where)

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
                        raise _Refusal(
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
                _arity(node, label, version, dict(bodies))
            else:
                function = self.functions.get((node.domain, node.op_type))
                if function is not None:
                    _call(node, function, label)
            for _, body in bodies:
                self.graph(body, _body_of(label), opsets, depth + 1)


def _body_of(label: Callable[[], str]) -> Callable[[], str]:
    return lambda: f"a body of {label()}"


_PER_ELEMENT: dict[int, int] = {onnx.TensorProto.COMPLEX64: 2, onnx.TensorProto.COMPLEX128: 2}
"""Values of a typed data field per element, where not one."""


def _holds_its_data(tensor: onnx.TensorProto, count: int, where: Callable[[], str]) -> None:
    """A tensor held in the model holds as many values as its dims say (a Constant whose data
    type or dims were changed alone is read as an array of another shape)."""
    dtype = tensor.data_type
    if tensor.HasField("raw_data"):
        if dtype == onnx.TensorProto.STRING:
            raise _Refusal(f"{where()} is a tensor of strings with raw data")
        held = len(tensor.raw_data)
        wanted = [(count * _bits(dtype) + 7) // 8]
        what = "bytes"
    else:
        field = onnx.helper.tensor_dtype_to_field(dtype)
        held = len(getattr(tensor, field))
        bits = _bits(dtype)
        wanted = [count * _PER_ELEMENT.get(dtype, 1)]
        if bits < 8:  # (sub-byte values are packed, a byte's worth to each)
            wanted.append((count * bits + 7) // 8)
        what = "values"
    if held not in wanted:
        raise _Refusal(
            f"{where()} holds {held} {what} of data; its dims {list(tensor.dims)} and data "
            f"type {onnx.TensorProto.DataType.Name(dtype)} need {wanted[0]}"
        )


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


@cache
def _bits(dtype: int) -> int:
    """Bits per element (a string counts one byte: its data is not counted here)."""
    import onnx_ir as ir

    try:
        return int(ir.DataType(dtype).bitwidth)
    except (TypeError, ValueError):
        return 8


@cache
def tensor_dtypes() -> frozenset[int]:
    """The data types onnx_ir reads and writes tensors of (onnx_ir 1.1 cannot write the
    6-bit floats it reads)."""
    import onnx_ir as ir

    held = set()
    for dtype in known_dtypes():
        tensor = onnx.TensorProto(name="t", data_type=dtype, dims=[2])
        if dtype == onnx.TensorProto.STRING:
            tensor.string_data.extend([b"a", b"b"])
        else:
            tensor.raw_data = bytes(16)
        try:
            ir.serde.serialize_tensor(ir.serde.deserialize_tensor(tensor))
        except Exception:
            continue
        held.add(dtype)
    return frozenset(held)


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


def _bodies(node: onnx.NodeProto) -> Iterator[tuple[str, onnx.GraphProto]]:
    for attr in node.attribute:
        if attr.type == onnx.AttributeProto.GRAPH:
            yield attr.name, attr.g
        elif attr.type == onnx.AttributeProto.GRAPHS:
            for graph in attr.graphs:
                yield attr.name, graph


def _call(node: onnx.NodeProto, function: onnx.FunctionProto, label: Callable[[], str]) -> None:
    if len(node.input) > len(function.input) or len(node.output) > len(function.output):
        raise _Refusal(
            f"{label()} gives {len(node.input)} inputs and takes {len(node.output)} outputs "
            f"of a function of {len(function.input)} inputs and {len(function.output)} outputs"
        )


@cache
def _schema(op_type: str, version: int) -> tuple[int, int, int, int] | None:
    """The least and most inputs and outputs of an ONNX op at an opset (None: not known)."""
    try:
        schema = onnx.defs.get_schema(op_type, version, "")
    except Exception:
        return None
    return schema.min_input, schema.max_input, schema.min_output, schema.max_output


def _arity(
    node: onnx.NodeProto,
    label: Callable[[], str],
    version: int,
    bodies: dict[str, onnx.GraphProto],
) -> None:
    """The node's inputs and outputs against its schema, and its bodies' against the node."""
    found = _schema(node.op_type, version) if version else None
    if found is not None:
        least_in, most_in, least_out, most_out = found
        given = len(node.input)
        if given < least_in or given > most_in:
            raise _Refusal(f"{label()} has {given} inputs; the op takes {least_in} to {most_in}")
        if len(node.output) < least_out or len(node.output) > most_out:
            raise _Refusal(
                f"{label()} has {len(node.output)} outputs; the op gives {least_out} to {most_out}"
            )
    op = node.op_type
    if op == "Split":  # (onnx's inference reads past its vector on a mismatch: an abort)
        for attr in node.attribute:
            if attr.name == "num_outputs" and attr.i != len(node.output):
                raise _Refusal(f"{label()} has {len(node.output)} outputs but num_outputs {attr.i}")
    if not bodies:
        return
    if op == "Loop" and "body" in bodies:
        body = bodies["body"]
        carried = len(node.input) - 2
        if len(body.input) != len(node.input) or len(body.output) < 1 + carried:
            raise _Refusal(
                f"{label()} carries {max(carried, 0)} values, but its body takes "
                f"{len(body.input)} inputs and gives {len(body.output)} outputs "
                "(it must take 2 + the carried ones and give 1 + the carried ones + its scans)"
            )
        if len(node.output) > len(body.output) - 1:
            raise _Refusal(
                f"{label()} has {len(node.output)} outputs; its body gives "
                f"{len(body.output) - 1} (carried and scanned)"
            )
    elif op == "If":
        for branch in ("then_branch", "else_branch"):
            found_branch = bodies.get(branch)
            if found_branch is not None and len(found_branch.output) != len(node.output):
                raise _Refusal(
                    f"{label()} has {len(node.output)} outputs; its {branch} gives "
                    f"{len(found_branch.output)}"
                )
    elif op in ("SequenceMap", "Scan") and "body" in bodies:
        body = bodies["body"]
        wrong = len(body.output) != len(node.output) or (
            len(body.input) != len(node.input)
            if op == "SequenceMap"
            else len(body.input) > len(node.input)
        )
        if wrong:
            raise _Refusal(
                f"{label()} takes {len(node.input)} inputs and gives {len(node.output)} "
                f"outputs; its body takes {len(body.input)} and gives {len(body.output)}"
            )


# -- functions ----------------------------------------------------------------------------


def calls(graph: onnx.GraphProto | onnx.FunctionProto) -> Iterator[tuple[str, str]]:
    """The (domain, name) of every op a graph's nodes use, in its bodies too."""
    stack = [graph]
    while stack:
        at = stack.pop()
        for node in at.node:
            yield node.domain, node.op_type
            stack.extend(body for _, body in _bodies(node))


def expanded_nodes(proto: onnx.ModelProto) -> tuple[int, int]:
    """The nodes of the model as written (its graph, bodies and functions), and as many as
    it would have with every call of a model-local function inlined (what onnx's inference
    and ONNX Runtime work through): a function calling another twice, twenty levels deep,
    is a million nodes in a few hundred bytes. Needs :func:`check_wellformed` first (no
    recursion)."""
    functions = {(f.domain, f.name): f for f in proto.functions}
    sizes: dict[tuple[str, str], int] = {}

    def size(graph: onnx.GraphProto | onnx.FunctionProto) -> int:
        total = 0
        for call in calls(graph):
            total += 1
            if call in functions:
                if call not in sizes:
                    sizes[call] = 0  # (no recursion: the gate refused it)
                    sizes[call] = size(functions[call])
                total += sizes[call]
        return total

    written = sum(1 for _ in calls(proto.graph))
    written += sum(1 for function in proto.functions for _ in calls(function))
    return written, size(proto.graph)


def _no_recursion(proto: onnx.ModelProto) -> None:
    """No model-local function calls itself, directly or through others (ONNX forbids it;
    inlining it would never end)."""
    functions = {(f.domain, f.name): f for f in proto.functions}
    if not functions:
        return
    callees = {
        key: sorted({call for call in calls(function) if call in functions})
        for key, function in functions.items()
    }
    state: dict[tuple[str, str], int] = {}  # 1: on the path, 2: done
    for start in callees:
        if start in state:
            continue
        path = [start]
        pending = [iter(callees[start])]
        state[start] = 1
        while pending:
            callee = next(pending[-1], None)
            if callee is None:
                state[path.pop()] = 2
                pending.pop()
                continue
            if state.get(callee) == 1:
                cycle = [*path[path.index(callee) :], callee]
                text = " -> ".join(f"{d}::{n}" for d, n in cycle)
                raise _Refusal(f"model-local functions call themselves ({text})")
            if callee not in state:
                state[callee] = 1
                path.append(callee)
                pending.append(iter(callees[callee]))

"""A model without its weights' data: what shape inference, onnx's checker and an ONNX Runtime
load need (dims and dtypes), at the cost of the graph, not of the weights.

Weights are bytes to carry, not to copy: serializing a model of 1 GB of weights to check or
infer it costs 1 GB per copy (onnx's C++ takes one more). A :class:`Skeleton` is the model's
``ModelProto`` in which every main-graph initializer that is large (:data:`LIGHT_BYTES` or
more) or kept in external data is a typed graph input instead: onnx's inference and checker
see its dtype and dims, never its bytes, and no file is opened. Small initializers (a
Reshape's shape, a Slice's bounds) stay, so that data propagation still reads them.
:meth:`Skeleton.full` puts the weights back, in their place and order.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import onnx
import onnx_ir as ir

__all__ = ["LIGHT_BYTES", "Skeleton", "proto_skeleton", "skeleton"]

LIGHT_BYTES = 16 << 10
"""From this many bytes an initializer is a weight: typed, without its data, in a skeleton."""

_HIDDEN = "seqpasses:weight-left-out"


@dataclass
class Skeleton:
    """A model's protobuf without its weights' data (see the module docstring): ``proto``,
    the names of the initializers made graph inputs (``hidden``), in the model's order of
    initializers, and which of those were graph inputs already."""

    proto: onnx.ModelProto
    order: list[str]  # every main-graph initializer, in the model's order
    hidden: set[str]
    inputs_before: set[str]  # hidden initializers that were graph inputs in the model

    def frame(self) -> onnx.ModelProto:
        """The model without any main-graph initializer (the hidden ones no longer graph
        inputs unless they were): what :func:`seqpasses.wire.write_model` writes around
        them."""
        model = self._copy()
        del model.graph.initializer[:]
        return model

    def _copy(self) -> onnx.ModelProto:
        """A copy of ``proto`` whose hidden initializers are no longer graph inputs (unless
        they were)."""
        model = onnx.ModelProto()
        model.CopyFrom(self.proto)
        graph = model.graph
        kept = [
            info
            for info in graph.input
            if info.name not in self.hidden or info.name in self.inputs_before
        ]
        del graph.input[:]
        graph.input.extend(kept)
        return model

    def full(self, weights: dict[str, onnx.TensorProto]) -> onnx.ModelProto:
        """The model whole (see below); ``proto`` itself when nothing was left out."""
        if not self.hidden:
            return self.proto
        return self._whole(weights)

    def _whole(self, weights: dict[str, onnx.TensorProto]) -> onnx.ModelProto:
        """The model whole: a copy of ``proto`` with the hidden initializers back (from
        ``weights``, by name), in their order, no longer graph inputs unless they were."""
        model = self._copy()
        graph = model.graph
        small = {tensor.name: tensor for tensor in graph.initializer}
        tensors = [small[name] if name in small else weights[name] for name in self.order]
        del graph.initializer[:]
        graph.initializer.extend(tensors)
        return model


def _heavy(tensor: ir.TensorProtocol | None) -> bool:
    if tensor is None:
        return False
    if isinstance(tensor, ir.ExternalTensor):
        return True
    try:
        return tensor.nbytes >= LIGHT_BYTES
    except Exception:  # (a string tensor, say: its size is not known without its data)
        return False


@contextmanager
def _weights_hidden(model: ir.Model) -> Iterator[list[str]]:
    """For as long as it lasts, the main graph's weights are placeholders that serialize as
    external references (no data read, none copied); yields their names."""
    swapped: list[tuple[ir.Value, ir.TensorProtocol]] = []
    try:
        for value in model.graph.initializers.values():
            tensor = value.const_value
            if tensor is None or not _heavy(tensor):
                continue
            placeholder = ir.ExternalTensor(
                _HIDDEN,
                0,
                0,
                tensor.dtype,
                shape=ir.Shape(tensor.shape.numpy()),
                name=value.name or "",
            )
            swapped.append((value, tensor))
            value.const_value = placeholder
        yield [value.name or "" for value, _ in swapped]
    finally:
        for value, tensor in swapped:
            value.const_value = tensor


def _as_inputs(proto: onnx.ModelProto, names: set[str]) -> set[str]:
    """Turn the initializers ``names`` of ``proto``'s main graph into typed graph inputs, in
    place; the names that were graph inputs already."""
    graph = proto.graph
    inputs = {info.name for info in graph.input}
    kept = [tensor for tensor in graph.initializer if tensor.name not in names]
    for tensor in graph.initializer:
        if tensor.name in names and tensor.name not in inputs:
            info = graph.input.add()
            info.name = tensor.name
            tensor_type = info.type.tensor_type
            tensor_type.elem_type = tensor.data_type
            tensor_type.shape.SetInParent()
            for dim in tensor.dims:
                tensor_type.shape.dim.add().dim_value = dim
    del graph.initializer[:]
    graph.initializer.extend(kept)
    return names & inputs


def skeleton(model: ir.Model) -> Skeleton:
    """The skeleton of an onnx_ir model (see the module docstring): its weights are neither
    read nor copied."""
    order = [name or "" for name in model.graph.initializers]
    with _weights_hidden(model) as hidden:
        proto = ir.serde.serialize_model(model)
    names = set(hidden)
    return Skeleton(proto, order, names, _as_inputs(proto, names))


def _copy_field(target: Any, field: Any, value: Any) -> None:
    if field.is_repeated:
        getattr(target, field.name).extend(value)
    elif field.message_type is not None:
        getattr(target, field.name).CopyFrom(value)
    else:
        setattr(target, field.name, value)


def proto_skeleton(model: onnx.ModelProto) -> Skeleton:
    """The skeleton of a ModelProto, which is not changed (its weights are not copied)."""
    graph = model.graph
    names = {
        tensor.name
        for tensor in graph.initializer
        if tensor.data_location == onnx.TensorProto.EXTERNAL
        or len(tensor.raw_data) >= LIGHT_BYTES
        or tensor.ByteSize() >= LIGHT_BYTES
    }
    if not names:  # (nothing to leave out: the model itself, which its users only read)
        return Skeleton(model, [t.name for t in graph.initializer], set(), set())
    copy = onnx.ModelProto()
    # everything but the main graph's initializers, then the small ones: the weights' bytes
    # are never copied
    for field, value in model.ListFields():
        if field.name != "graph":
            _copy_field(copy, field, value)
    for field, value in graph.ListFields():
        if field.name != "initializer":
            _copy_field(copy.graph, field, value)
    copy.graph.SetInParent()
    for tensor in graph.initializer:
        if tensor.name in names:
            placeholder = copy.graph.initializer.add()
            placeholder.name = tensor.name
            placeholder.data_type = tensor.data_type
            placeholder.dims.extend(tensor.dims)
        else:
            copy.graph.initializer.append(tensor)
    order = [tensor.name for tensor in graph.initializer]
    return Skeleton(copy, order, names, _as_inputs(copy, names))

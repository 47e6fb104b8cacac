"""Traversal of a ``ModelProto`` (before onnx_ir holds it, or when it cannot): every graph,
every node, every tensor, at any depth, functions included."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import onnx

__all__ = ["Site", "all_proto_graphs", "all_proto_nodes", "all_proto_tensors"]

Graph = onnx.GraphProto | onnx.FunctionProto


def _graph_attributes(attr: onnx.AttributeProto) -> list[onnx.GraphProto]:
    if attr.type == onnx.AttributeProto.GRAPH:
        return [attr.g]
    if attr.type == onnx.AttributeProto.GRAPHS:
        return list(attr.graphs)
    return []


def all_proto_graphs(model: onnx.ModelProto) -> Iterator[Graph]:
    """Every graph of a ModelProto: the main graph, the functions, their subgraphs (those of
    the functions' attribute defaults too)."""
    graphs: list[Graph] = [model.graph, *model.functions]
    for function in model.functions:
        for attr in function.attribute_proto:
            graphs.extend(_graph_attributes(attr))
    while graphs:
        graph = graphs.pop()
        yield graph
        for node in graph.node:
            for attr in node.attribute:
                graphs.extend(_graph_attributes(attr))


def all_proto_nodes(model: onnx.ModelProto) -> Iterator[onnx.NodeProto]:
    """Every node of a ModelProto: main graph, subgraphs, functions."""
    for graph in all_proto_graphs(model):
        yield from graph.node


def _attribute_tensors(attr: onnx.AttributeProto) -> Iterator[onnx.TensorProto]:
    kind = attr.type
    if kind == onnx.AttributeProto.TENSOR:
        yield attr.t
    elif kind == onnx.AttributeProto.TENSORS:
        yield from attr.tensors
    elif kind == onnx.AttributeProto.SPARSE_TENSOR:
        yield attr.sparse_tensor.values
        yield attr.sparse_tensor.indices
    elif kind == onnx.AttributeProto.SPARSE_TENSORS:
        for sparse in attr.sparse_tensors:
            yield sparse.values
            yield sparse.indices


_TENSOR_KINDS = frozenset(
    {
        onnx.AttributeProto.TENSOR,
        onnx.AttributeProto.TENSORS,
        onnx.AttributeProto.SPARSE_TENSOR,
        onnx.AttributeProto.SPARSE_TENSORS,
    }
)


@dataclass(frozen=True)
class Site:
    """Where a tensor sits, for a message: put in words only when one is written (a model of
    many small constants would pay more for the words than for the walk)."""

    graph: Graph
    what: str  # "initializer", "sparse initializer" or "attribute"
    attr: str = ""
    node: onnx.NodeProto | None = None

    def __str__(self) -> str:
        graph = self.graph
        where = f"function {graph.name}" if isinstance(graph, onnx.FunctionProto) else graph.name
        if self.what != "attribute":
            return f"{self.what} of graph {where!r}"
        if self.node is None:
            return f"attribute {self.attr!r} of {where}"
        label = self.node.name or self.node.op_type
        return f"attribute {self.attr!r} of node {label!r} in {where!r}"


def all_proto_tensors(model: onnx.ModelProto) -> Iterator[tuple[Site, onnx.TensorProto]]:
    """Every tensor a ModelProto holds, with where it sits (:class:`Site`, for messages):
    initializers and sparse initializers of every graph, and the tensors of every attribute
    (nodes' attributes in every graph, and the attribute defaults of every function)."""
    for graph in all_proto_graphs(model):
        if isinstance(graph, onnx.GraphProto):
            for tensor in graph.initializer:
                yield Site(graph, "initializer"), tensor
            for sparse in graph.sparse_initializer:
                yield Site(graph, "sparse initializer"), sparse.values
                yield Site(graph, "sparse initializer"), sparse.indices
        else:
            for attr in graph.attribute_proto:
                for tensor in _attribute_tensors(attr):
                    yield Site(graph, "attribute", attr.name), tensor
        for node in graph.node:
            for attr in node.attribute:
                if attr.type in _TENSOR_KINDS:
                    for tensor in _attribute_tensors(attr):
                        yield Site(graph, "attribute", attr.name, node), tensor

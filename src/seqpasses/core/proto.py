"""Traversal of a ``ModelProto`` (before onnx_ir holds it, or when it cannot): every graph,
every node, every tensor, at any depth, functions included."""

from __future__ import annotations

from collections.abc import Iterator

import onnx

__all__ = ["all_proto_graphs", "all_proto_nodes", "all_proto_tensors"]

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


def all_proto_tensors(model: onnx.ModelProto) -> Iterator[tuple[str, onnx.TensorProto]]:
    """Every tensor a ModelProto holds, with where it sits (for messages): initializers and
    sparse initializers of every graph, and the tensors of every attribute (nodes' attributes
    in every graph, and the attribute defaults of every function)."""
    for graph in all_proto_graphs(model):
        where = f"function {graph.name}" if isinstance(graph, onnx.FunctionProto) else graph.name
        if isinstance(graph, onnx.GraphProto):
            for tensor in graph.initializer:
                yield f"initializer of graph {where!r}", tensor
            for sparse in graph.sparse_initializer:
                yield f"sparse initializer of graph {where!r}", sparse.values
                yield f"sparse initializer of graph {where!r}", sparse.indices
        else:
            for attr in graph.attribute_proto:
                for tensor in _attribute_tensors(attr):
                    yield f"attribute {attr.name!r} of {where}", tensor
        for node in graph.node:
            for attr in node.attribute:
                for tensor in _attribute_tensors(attr):
                    label = node.name or node.op_type
                    yield f"attribute {attr.name!r} of node {label!r} in {where!r}", tensor

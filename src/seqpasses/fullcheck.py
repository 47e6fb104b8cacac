"""``onnx.checker.check_model(full_check=True)``, linear in the number of subgraphs.

The full check is the structural checker followed by onnx's strict shape inference. The
inference copies the enclosing scope's types into every subgraph it enters and the table of
model-local functions into every call it infers, so on a main graph with thousands of Loops,
Ifs or function calls it is quadratic (4.4 s on 20k nodes of If chain; 0.05 s on 2k).

:func:`full_check` runs the same two checks. The structural one runs on the whole model, as
onnx's own does. The strict inference runs on slices of the main graph of at most ``SLICE``
nodes, one after the other; each slice is a model of its own:

- its nodes, with every declaration of a name they read or make: its ``value_info``, and the
  graph outputs of that name with their declared types (onnx merges all declarations of a
  name before it infers a node, and strict mode compares what it infers with them); the
  first slice also holds the declarations of names no node reads or makes (a graph input
  returned as an output). The types onnx infers are read back from the ``value_info`` it
  writes;
- as graph inputs, what its nodes and their subgraphs read from earlier slices, typed as
  onnx inferred them there, or from the main graph's inputs;
- as initializers, the main graph's initializers they read (a large tensor, or one whose data
  is external, is a typed input: onnx only reads the data of small shape-like inputs), and a
  copy of the Constant node behind any constant they read from an earlier slice (onnx reads
  those as data too);
- the model-local functions its nodes call, at any depth (the first slice also holds the ones
  nobody calls), and the model's opsets and IR version.

Each node is so inferred from the same input types, constant data, attributes and functions as
in one run over the whole model, with a scope that holds only what it reads. A complaint of
the sliced run is confirmed by onnx's own full check, whose message is the one reported: the
sliced run can make a check faster, never fail a model that onnx passes.

Slicing pays off only where there are many subgraphs or calls: a main graph of at most
``SLICE`` nodes, or without any, is checked by onnx's ``check_model(full_check=True)`` itself.
The quadratic copy is left inside one large subgraph that itself holds thousands (rare).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator

import onnx
from onnx import helper

from seqpasses.core.graph import DEFAULT_DOMAINS, GRAPH_HOLDERS

__all__ = ["SLICE", "full_check"]

SLICE = 100
"""Main-graph nodes per slice."""

_LARGE = 1024
"""Initializers with more elements than this are given to a slice as typed inputs."""

_FunctionKey = tuple[str, str, str]


def full_check(model: onnx.ModelProto, slice_size: int = SLICE) -> None:
    """Raise what ``onnx.checker.check_model(model, full_check=True)`` raises; return when it
    would pass (see the module docstring)."""
    graph = model.graph
    calls = {(f.domain, f.name, f.overload) for f in model.functions}
    if len(graph.node) <= slice_size or not any(
        _holds_graphs(node) or (node.domain, node.op_type, node.overload) in calls
        for node in graph.node
    ):
        onnx.checker.check_model(model, full_check=True)
        return
    onnx.checker.check_model(model)
    try:
        _sliced_inference(model, slice_size)
    except Exception:
        onnx.checker.check_model(model, full_check=True)  # onnx's own word, and its message


def _holds_graphs(node: onnx.NodeProto) -> bool:
    return any(True for _ in _graphs(node))


def _graphs(node: onnx.NodeProto) -> Iterator[onnx.GraphProto]:
    if not node.attribute or (node.domain in DEFAULT_DOMAINS and node.op_type not in GRAPH_HOLDERS):
        return
    for attr in node.attribute:
        if attr.type == onnx.AttributeProto.GRAPH:
            yield attr.g
        elif attr.type == onnx.AttributeProto.GRAPHS:
            yield from attr.graphs


def _free_names(graph: onnx.GraphProto) -> set[str]:
    """Names ``graph`` (at any depth) reads from enclosing scopes."""
    defined = {v.name for v in graph.input}
    defined.update(t.name for t in graph.initializer)
    defined.update(s.values.name for s in graph.sparse_initializer)
    free: set[str] = set()
    for node in graph.node:
        free.update(name for name in _reads(node) if name not in defined)
        defined.update(node.output)
    free.update(v.name for v in graph.output if v.name not in defined)
    return free


def _reads(node: onnx.NodeProto) -> Iterable[str]:
    """What ``node`` reads from its graph: its inputs and what its subgraphs read from outside."""
    names = [name for name in node.input if name]
    for graph in _graphs(node):
        names.extend(_free_names(graph))
    return names


def _called(
    nodes: Iterable[onnx.NodeProto],
    functions: dict[_FunctionKey, onnx.FunctionProto],
    found: dict[_FunctionKey, onnx.FunctionProto],
) -> None:
    """Add to ``found`` the functions ``nodes`` (and their subgraphs) call, at any depth."""
    for node in nodes:
        key = (node.domain, node.op_type, node.overload)
        function = functions.get(key)
        if function is not None and key not in found:
            found[key] = function
            _called(function.node, functions, found)
        for graph in _graphs(node):
            _called(graph.node, functions, found)


def _is_large(tensor: onnx.TensorProto) -> bool:
    external = tensor.data_location == onnx.TensorProto.EXTERNAL
    return external or math.prod(tensor.dims) > _LARGE


def _source(
    name: str,
    constants: dict[str, onnx.NodeProto],
    initializers: dict[str, onnx.TensorProto],
    types: dict[str, onnx.TypeProto],
) -> onnx.NodeProto | onnx.TensorProto | onnx.ValueInfoProto | None:
    """How a slice gets ``name`` from outside: a copy of its Constant node, the initializer
    itself (small ones: onnx reads their data), or a typed input (None when untyped)."""
    if name in constants:
        return constants[name]
    tensor = initializers.get(name)
    if tensor is not None and not _is_large(tensor):
        return tensor
    if name in types:
        return helper.make_value_info(name, types[name])
    if tensor is not None:
        return helper.make_tensor_value_info(name, tensor.data_type, list(tensor.dims))
    return None


def _sliced_inference(model: onnx.ModelProto, slice_size: int) -> None:
    """onnx's strict shape inference, slice by slice of the main graph; raises as it does."""
    graph = model.graph
    functions = {(f.domain, f.name, f.overload): f for f in model.functions}
    types: dict[str, onnx.TypeProto] = {v.name: v.type for v in graph.input}
    initializers = {t.name: t for t in graph.initializer}
    declared = {v.name: v for v in graph.value_info}
    outputs = {v.name: v for v in graph.output}
    constants: dict[str, onnx.NodeProto] = {}
    nodes = list(graph.node)
    reads = [list(_reads(node)) for node in nodes]
    last_read: dict[str, int] = {}
    for index, names in enumerate(reads):
        for name in names:
            last_read[name] = index
    # the functions each node calls, at any depth (none to look for in most models)
    calls: list[dict[_FunctionKey, onnx.FunctionProto]] = [{} for _ in nodes]
    if functions:
        for node, found in zip(nodes, calls, strict=True):
            _called([node], functions, found)
    uncalled = dict(functions)
    for found in calls:
        for key in found:
            uncalled.pop(key, None)
    # declared types of names no node reads or makes (an output that is a graph input): onnx
    # merges every declaration of a name before it infers a node, so the first slice has them
    touched = {name for node in nodes for name in node.output}
    touched.update(last_read)
    orphans = [name for name in [*outputs, *declared] if name not in touched]
    for start in range(0, len(nodes), slice_size):
        end = min(start + slice_size, len(nodes))
        part = nodes[start:end]
        made: set[str] = set()
        seen: set[str] = set()
        inputs: list[onnx.ValueInfoProto] = []
        tensors: list[onnx.TensorProto] = []
        copies: list[onnx.NodeProto] = []
        extra = [(None, orphans)] if start == 0 else []
        for node, names in [*extra, *zip(part, reads[start:end], strict=True)]:
            for name in names:
                if name in made or name in seen:
                    continue
                seen.add(name)
                source = _source(name, constants, initializers, types)
                if isinstance(source, onnx.NodeProto):
                    copies.append(source)
                elif isinstance(source, onnx.TensorProto):
                    tensors.append(source)
                elif source is not None:
                    inputs.append(source)
            if node is not None:
                made.update(node.output)
        called: dict[_FunctionKey, onnx.FunctionProto] = dict(uncalled) if start == 0 else {}
        for found in calls[start:end]:
            called.update(found)
        # every declaration of a name the slice reads or makes: onnx checks against all of them
        named = dict.fromkeys([*sorted(seen), *sorted(made)])
        results = [outputs[name] for name in named if name in outputs]
        value_info = [declared[name] for name in named if name in declared]
        piece = helper.make_model(
            helper.make_graph(
                [*copies, *part], graph.name, inputs, results, tensors, value_info=value_info
            ),
            opset_imports=model.opset_import,
            ir_version=model.ir_version,
            functions=called.values(),
        )
        inferred = onnx.shape_inference.infer_shapes(piece, check_type=True, strict_mode=True)
        for value in [*inferred.graph.value_info, *inferred.graph.output]:
            if (
                value.name in made
                and last_read.get(value.name, -1) >= end
                and value.type.ByteSize()
            ):
                types[value.name] = value.type
        for node in part:
            if node.op_type == "Constant" and node.domain in DEFAULT_DOMAINS:
                constants.update((name, node) for name in node.output)

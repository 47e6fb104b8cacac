"""onnx's own shape inference, run in pieces so that it stays linear in the model.

``onnx.shape_inference.infer_shapes`` copies the enclosing scope's value types into every
subgraph it infers and the model's function table into every call of a model-local function:
on a graph of thousands of Loops, Ifs or calls it is quadratic (2,500 Loops: 64x the time for
10x the nodes). :func:`infer` gives the same answers in linear time. It splits the main graph:

- *plain* nodes (no subgraph, no call of a model-local function) are inferred in segments,
  each a model of its own whose inputs are the values the segment reads, typed with what is
  known of them so far;
- each *heavy* node (a Loop, an If, a Scan, a SequenceMap, a call) is inferred alone, in a
  model holding just that node (and the functions it calls), whose inputs are the node's
  inputs and the outer values its subgraphs read.

Nodes are scheduled so that segments are as few as possible (a heavy node waits until a plain
node needs it), which keeps data propagation (``Shape`` -> ``Reshape``) within a segment in
all but the values that cross a heavy node. Declared types (``value_info``, graph outputs)
are checked against what is inferred exactly as onnx checks them, so with ``strict`` the
errors are onnx's own: the full check (``onnx.checker`` + strict inference) of a model is
``onnx.checker.check_model(model)`` + :func:`infer` with ``strict=True``.

A subgraph with many subgraphs of its own is still inferred whole (its nested scopes are
what onnx copies): linear in the main graph, quadratic only within one body.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable

import onnx

from seqpasses.core.memory import address_space

__all__ = ["free_names", "infer", "node_reads"]

_GRAPH_KINDS = (onnx.AttributeProto.GRAPH, onnx.AttributeProto.GRAPHS)


def _subgraphs(node: onnx.NodeProto) -> list[onnx.GraphProto]:
    found: list[onnx.GraphProto] = []
    for attr in node.attribute:
        if attr.type == onnx.AttributeProto.GRAPH:
            found.append(attr.g)
        elif attr.type == onnx.AttributeProto.GRAPHS:
            found.extend(attr.graphs)
    return found


def free_names(graph: onnx.GraphProto) -> set[str]:
    """The names a subgraph reads from its enclosing scopes."""
    made = {i.name for i in graph.input} | {i.name for i in graph.initializer}
    read: set[str] = set()
    for node in graph.node:
        read.update(node_reads(node) - made)
        made.update(node.output)
    read.update(o.name for o in graph.output if o.name not in made)
    return read


def node_reads(node: onnx.NodeProto) -> set[str]:
    """What a node reads: its inputs, and what its subgraphs read from outside."""
    names = {name for name in node.input if name}
    for graph in _subgraphs(node):
        names |= free_names(graph)
    return names


def _called(
    functions: dict[tuple[str, str, str], onnx.FunctionProto], nodes: Iterable[onnx.NodeProto]
) -> list[onnx.FunctionProto]:
    """The model-local functions ``nodes`` call, at any depth (subgraphs and callees)."""
    found: dict[tuple[str, str, str], onnx.FunctionProto] = {}
    pending = list(nodes)
    while pending:
        node = pending.pop()
        key = (node.domain, node.op_type, node.overload)
        function = functions.get(key)
        if function is not None and key not in found:
            found[key] = function
            pending.extend(function.node)
        for graph in _subgraphs(node):
            pending.extend(graph.node)
    return list(found.values())


def _schedule(
    reads: list[set[str]], outputs: list[list[str]], heavy: list[bool]
) -> list[tuple[bool, list[int]]]:
    """The nodes in batches ``(heavy, indices)`` that respect what each reads: plain batches
    (segments) and heavy ones alternate, as few as the heavy nodes' chains allow; each heavy
    node as early as it can run, each plain node as late as its readers allow, so that a
    shape computation (``Shape`` -> ``Concat``) sits in the segment of the ``Reshape`` that
    reads it, and data propagation sees it."""
    made = {name: k for k, names in enumerate(outputs) for name in names}
    count = len(reads)
    needs: list[set[int]] = []
    users: list[list[int]] = [[] for _ in range(count)]
    for k, names in enumerate(reads):
        wanted = {made[name] for name in names if name in made} - {k}
        needs.append(wanted)
        for j in wanted:
            users[j].append(k)
    waiting = [len(wanted) for wanted in needs]
    ready = [k for k, n in enumerate(waiting) if n == 0]
    heapq.heapify(ready)
    order: list[int] = []
    while ready:
        k = heapq.heappop(ready)
        order.append(k)
        for user in users[k]:
            waiting[user] -= 1
            if waiting[user] == 0:
                heapq.heappush(ready, user)
    if len(order) < count:  # a cycle (not a valid graph): the rest in their own order
        placed = set(order)
        order.extend(k for k in range(count) if k not in placed)
    # times: a segment of plain nodes at each even time, a batch of heavy nodes at each odd one
    time = [0] * count
    seen = [False] * count
    for k in order:
        base = 0
        for p in needs[k]:
            if seen[p]:
                base = max(base, time[p] + (heavy[k] or heavy[p]))
        time[k] = base + (base % 2 != heavy[k])
        seen[k] = True
    last = max(time, default=0)
    last += last % 2
    for k in reversed(order):  # plain nodes as late as their readers allow
        if not heavy[k]:
            latest = last
            for user in users[k]:
                latest = min(latest, time[user] - heavy[user])
            time[k] = max(latest, time[k])
    batches: dict[int, list[int]] = {}
    for k in order:
        batches.setdefault(time[k], []).append(k)
    return [(bool(t % 2), batch) for t, batch in sorted(batches.items())]


PIECE_NODES = 128
"""The most nodes a piece holds before a heavy node starts a new one: a heavy node's scope,
which onnx copies, is at most this much."""


def _pack(batches: list[tuple[bool, list[int]]], heavy: list[bool]) -> list[list[int]]:
    """The batches, in order, packed into pieces: a plain segment of any size, and heavy
    nodes after it while the piece is small (each heavy node's scope is the piece so far)."""
    pieces: list[list[int]] = [[]]
    for _, batch in batches:
        for k in batch:
            if heavy[k] and len(pieces[-1]) >= PIECE_NODES:
                pieces.append([])
            pieces[-1].append(k)
    return [piece for piece in pieces if piece]


def _value_info(name: str, type_proto: onnx.TypeProto | None) -> onnx.ValueInfoProto:
    info = onnx.ValueInfoProto(name=name)
    if type_proto is not None and type_proto.WhichOneof("value") is not None:
        info.type.CopyFrom(type_proto)
    return info


def _tensor_type(tensor: onnx.TensorProto) -> onnx.TypeProto:
    type_proto = onnx.TypeProto()
    type_proto.tensor_type.elem_type = tensor.data_type
    shape = type_proto.tensor_type.shape
    shape.SetInParent()  # (a scalar has a shape: of no dims)
    for dim in tensor.dims:
        shape.dim.add().dim_value = dim
    return type_proto


HUGE_DIM = 1 << 24
"""From this size of a declared dim, onnx's data propagation is not asked for (see
:data:`DATA_PROP_BYTES`)."""


def _huge_dims(model: onnx.ModelProto) -> bool:
    """Whether the main graph declares a dim of :data:`HUGE_DIM` or more."""
    graph = model.graph
    for info in (*graph.input, *graph.output, *graph.value_info):
        kind = info.type
        while kind.WhichOneof("value") in ("sequence_type", "optional_type"):
            kind = getattr(kind, str(kind.WhichOneof("value"))).elem_type
        if kind.HasField("tensor_type") and any(
            d.dim_value >= HUGE_DIM for d in kind.tensor_type.shape.dim
        ):
            return True
    return any(d >= HUGE_DIM for tensor in graph.initializer for d in tensor.dims)


def _whole_is_cheaper(nodes: int, heavy: int, main: int) -> bool:
    """Whether onnx's own inference of the whole model costs less than the pieces: its
    quadratic part is a copy of the enclosing scope (about ``main`` values) per heavy node,
    the pieces' part a constant per node."""
    return heavy * main <= 300 * nodes


class _Pieces:
    """What is known while the pieces are inferred: each value's type so far, the main
    graph's initializers and what the model declares."""

    def __init__(self, model: onnx.ModelProto, strict: bool, data_prop: bool) -> None:
        self.model = model
        self.strict = strict
        self.data_prop = data_prop
        graph = model.graph
        self.graph_inputs = {info.name for info in graph.input}
        self.initializers = {tensor.name: tensor for tensor in graph.initializer}
        self.types: dict[str, onnx.TypeProto] = {}
        for tensor in graph.initializer:
            self.types[tensor.name] = _tensor_type(tensor)
        for info in graph.input:
            if info.type.WhichOneof("value") is not None:
                self.types[info.name] = info.type
        self.declared = {info.name: info for info in graph.value_info}
        self.outputs = {info.name: info for info in graph.output}
        self.functions = {(f.domain, f.name, f.overload): f for f in model.functions}
        # Constant nodes, taken into every piece that reads them: what their value says
        # (a Slice's bounds, a Reshape's shape) is what data propagation needs
        self.constants = {
            node.output[0]: node
            for node in graph.node
            if node.op_type == "Constant" and node.domain in ("", "ai.onnx") and node.output
        }

    def run(
        self, nodes: list[onnx.NodeProto], reads: list[set[str]], wanted: set[str]
    ) -> onnx.ModelProto:
        """Infer a model of ``nodes``: its inputs what they read from outside (typed as known so
        far; Constant nodes and initializers as the model has them), its outputs the values
        ``wanted`` outside it and the graph's outputs (declared as the model declares them),
        its ``value_info`` the model's declarations of what they make. Returns what onnx
        inferred, and records the types of what they make."""
        made = [name for node in nodes for name in node.output if name]
        inside = set(made)
        graph = onnx.GraphProto(name=self.model.graph.name or "piece")
        listed: set[str] = set()
        for names in reads:
            for name in names:
                if name in inside or name in listed:
                    continue
                listed.add(name)
                constant = self.constants.get(name)
                if constant is not None:
                    graph.node.append(constant)
                    continue
                tensor = self.initializers.get(name)
                if tensor is not None:
                    graph.initializer.append(tensor)
                    if name not in self.graph_inputs:
                        continue
                graph.input.append(_value_info(name, self.types.get(name)))
        graph.node.extend(nodes)
        for name in made:
            output = self.outputs.get(name)
            if output is not None:
                graph.output.append(output)
            elif name in wanted:
                graph.output.append(_value_info(name, None))
            declared = self.declared.get(name)
            if declared is not None:
                graph.value_info.append(declared)
        piece = onnx.ModelProto(ir_version=self.model.ir_version)
        piece.opset_import.extend(self.model.opset_import)
        if self.functions:
            piece.functions.extend(_called(self.functions, nodes))
        piece.graph.CopyFrom(graph)
        inferred: onnx.ModelProto = onnx.shape_inference.infer_shapes(
            piece, check_type=self.strict, strict_mode=self.strict, data_prop=self.data_prop
        )
        for info in inferred.graph.value_info:
            self.types[info.name] = info.type
        for info in inferred.graph.output:
            if info.type.WhichOneof("value") is not None:
                self.types[info.name] = info.type
        return inferred


def infer(
    model: onnx.ModelProto, *, strict: bool = False, data_prop: bool = False
) -> onnx.ModelProto:
    """``model`` with what onnx's shape inference infers (see the module docstring): a new
    ModelProto whose main graph declares every value onnx types (``value_info``, merged
    into the outputs' types), and whose subgraphs hold what onnx infers inside them. With
    ``strict``, raises what ``onnx.shape_inference.infer_shapes(strict_mode=True,
    check_type=True)`` raises."""
    if data_prop and not _huge_dims(model):
        try:
            with address_space(DATA_PROP_BYTES + 4 * model.ByteSize()):
                return _infer(model, strict, True)
        except MemoryError:
            pass  # (onnx's data propagation of a large tensor: inferred without it)
    return _infer(model, strict, False)


DATA_PROP_BYTES = 512 << 20
"""What onnx's inference with data propagation may allocate beyond four times the model's
size: it propagates the values of tensors of any size (a ``Mul`` of a ``[2**31]`` tensor by
a scalar Constant asks for tens of GB), where it is meant for shapes. Past it, the model is
inferred without data propagation."""


def _infer(model: onnx.ModelProto, strict: bool, data_prop: bool) -> onnx.ModelProto:
    nodes = list(model.graph.node)
    functions = {(f.domain, f.name, f.overload) for f in model.functions}
    reads: list[set[str]] = []
    heavy: list[bool] = []
    for node in nodes:
        inner = _subgraphs(node)
        names = {name for name in node.input if name}
        for graph in inner:
            names |= free_names(graph)
        reads.append(names)
        heavy.append(bool(inner) or (node.domain, node.op_type, node.overload) in functions)
    count = sum(heavy)
    if _whole_is_cheaper(len(nodes), count, len(nodes) - count):
        whole: onnx.ModelProto = onnx.shape_inference.infer_shapes(
            model, check_type=strict, strict_mode=strict, data_prop=data_prop
        )
        return whole
    outputs = [[name for name in node.output if name] for node in nodes]
    pieces = _Pieces(model, strict, data_prop)
    packed = _pack(_schedule(reads, outputs, heavy), heavy)
    piece_of = {k: number for number, piece in enumerate(packed) for k in piece}
    made_by = {name: k for k, names in enumerate(outputs) for name in names}
    wanted_after: set[str] = set()  # values read outside the piece that makes them
    for k, names in enumerate(reads):
        for name in names:
            maker = made_by.get(name)
            if maker is not None and piece_of[maker] != piece_of[k]:
                wanted_after.add(name)
    inferred_heavy: dict[int, onnx.NodeProto] = {}
    for piece in packed:
        inferred = pieces.run([nodes[k] for k in piece], [reads[k] for k in piece], wanted_after)
        first = len(inferred.graph.node) - len(piece)  # (after the Constants it reads)
        for offset, k in enumerate(piece):
            if heavy[k]:
                inferred_heavy[k] = inferred.graph.node[first + offset]
    result = onnx.ModelProto()
    result.CopyFrom(model)
    graph = result.graph
    for k, node in inferred_heavy.items():
        graph.node[k].CopyFrom(node)
    outputs_named = {info.name for info in graph.output}
    inputs = {info.name for info in graph.input}
    del graph.value_info[:]
    declared = [t.name for t in graph.initializer if t.name in pieces.declared]
    for name in [*declared, *made_by]:
        if name not in outputs_named and name not in inputs:
            known = pieces.types.get(name)
            if known is not None:
                graph.value_info.append(_value_info(name, known))
    for info in graph.output:
        known = pieces.types.get(info.name)
        if known is not None:
            info.type.CopyFrom(known)
    return result

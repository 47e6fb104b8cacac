"""Graph plumbing every room shares: the ONNX domain, subgraphs, paths, node surgery.

- :func:`is_default`: whether a node is an ONNX op (domain ``""`` or ``"ai.onnx"``).
- :func:`subgraphs`, :func:`nested_nodes`, :func:`all_nodes`: graphs inside a node, and every
  node of a model (in the order of onnx_ir's ``RecursiveGraphIterator``).
- :func:`subgraph_path`: the one spelling of where a graph sits (``main/Loop_3.body``), used by
  reports, reasons, ``inspect`` and ``shapes`` alike.
- :func:`label`: how a reason names a node.
- :func:`detach`, :func:`drop_subgraphs`: take nodes out so that their uses of outer values go.
- :func:`rebuild`: a node like another, with new inputs and body, put in its place.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence

import onnx_ir as ir

from seqpasses.core.pause import no_cycle_collection

__all__ = [
    "DEFAULT_DOMAINS",
    "GRAPH_HOLDERS",
    "all_nodes",
    "clear_declared_shapes",
    "clear_inputs",
    "detach",
    "drop_nodes_of",
    "drop_subgraphs",
    "functions_holding",
    "graph_nodes",
    "graph_paths",
    "graphs",
    "hold",
    "is_default",
    "is_hold",
    "label",
    "nested_graphs",
    "nested_nodes",
    "onnx_opset",
    "own_output",
    "rebuild",
    "subgraph_path",
    "subgraphs",
    "unique_value_names",
]

DEFAULT_DOMAINS = ("", "ai.onnx")


def is_default(node: ir.Node) -> bool:
    """Whether ``node`` is an op of the ONNX domain."""
    return node.domain in DEFAULT_DOMAINS


HOLD_DOMAIN = "seqpasses.hold"


def hold(values: Sequence[ir.Value]) -> ir.Node:
    """A node of no ONNX op that reads ``values``: what inlined copies return, held while the
    copies are walked (it stands for the outputs they replace; see :func:`is_hold`)."""
    return ir.Node(HOLD_DOMAIN, "Hold", list(values), num_outputs=0)


def is_hold(node: ir.Node) -> bool:
    """Whether ``node`` is a :func:`hold`: a read that is a graph output in all but name."""
    return node.domain == HOLD_DOMAIN


def onnx_opset(imports: Mapping[str, int], default: int | None = None) -> int | None:
    """The ONNX opset an opset-import table names (either spelling of the domain)."""
    for domain in DEFAULT_DOMAINS:
        if domain in imports:
            return imports[domain]
    return default


INDEX = "seqpasses.index"
"""The ``Node.meta`` key of an input node's index in a depth-first walk (:func:`number_nodes`):
how every message names a node that has no name (copies keep it)."""


def number_nodes(model: ir.Model) -> None:
    """Give every node its index in a depth-first walk (:data:`INDEX`), as the model is taken
    in: ``optimize``'s report and ``inspect`` then name an unnamed node alike, ``#3``."""
    with no_cycle_collection():  # (a store per node: the collector would rescan the heap)
        for index, node in enumerate(all_nodes(model)):
            if not node.name:  # (a named node is named by its name: no store for it)
                node.meta[INDEX] = index


def node_name(node: ir.Node) -> str:
    """A node's name; for an unnamed input node ``#N``, its index (:func:`number_nodes`); ''
    for an unnamed node seqpasses made."""
    if node.name:
        return node.name
    index = node.meta.get(INDEX)
    return f"#{index}" if index is not None else ""


def label(node: ir.Node) -> str:
    """How reasons name a node: its op type, and its name when it has one (:func:`node_name`)."""
    name = node_name(node)
    return f"{node.op_type} '{name}'" if name else node.op_type


GRAPH_HOLDERS = {  # the ONNX ops with graph attributes, and those attributes
    "If": ("then_branch", "else_branch"),
    "Loop": ("body",),
    "Scan": ("body",),
    "SequenceMap": ("body",),
}


_NO_GRAPHS: tuple[tuple[str, ir.Graph], ...] = ()


def subgraphs(node: ir.Node) -> Sequence[tuple[str, ir.Graph]]:
    """The graphs a node holds, each with its attribute spelled as paths spell it
    (``body``, ``then_branch``, ``branches[1]``)."""
    names = GRAPH_HOLDERS.get(node.op_type)  # (called for every node of every walk: kept quick)
    if node.domain in DEFAULT_DOMAINS:
        if names is None:  # (most nodes: one shared empty answer)
            return _NO_GRAPHS
        found: list[tuple[str, ir.Graph]] = []
        for name in names:
            attr = node.attributes.get(name)
            if attr is not None and not attr.is_ref() and attr.type == ir.AttributeType.GRAPH:
                found.append((name, attr.as_graph()))
        return found
    found = []
    for attr in node.attributes.values():
        if attr.is_ref():
            continue
        if attr.type == ir.AttributeType.GRAPH:
            found.append((attr.name, attr.as_graph()))
        elif attr.type == ir.AttributeType.GRAPHS:
            found.extend((f"{attr.name}[{k}]", g) for k, g in enumerate(attr.as_graphs()))
    return found


def subgraph_path(parent: str, node: ir.Node, attr: str) -> str:
    """Where a subgraph of ``node`` sits, below the graph at ``parent``."""
    return f"{parent}/{node_name(node) or node.op_type}.{attr}"


def graphs(model: ir.Model) -> list[tuple[str, ir.Graph | ir.Function]]:
    """Every graph of a model with its path (:func:`subgraph_path`): the main graph and its
    subgraphs, then each model-local function and its subgraphs."""
    found: list[tuple[str, ir.Graph | ir.Function]] = []

    def walk(graph: ir.Graph | ir.Function, path: str) -> None:
        found.append((path, graph))
        for node in graph:
            for attr, inner in subgraphs(node):
                walk(inner, subgraph_path(path, node, attr))

    walk(model.graph, "main")
    for function in model.functions.values():
        walk(function, f"function {function.name}")
    return found


def graph_paths(model: ir.Model) -> dict[ir.Node, str]:
    """Every node of a model -> the path of the graph it sits in."""
    return {node: path for path, graph in graphs(model) for node in graph}


def graph_nodes(graph: ir.Graph | ir.Function) -> list[ir.Node]:
    """Every node of ``graph``, each followed by those of its subgraphs at any depth (the order
    of onnx_ir's ``RecursiveGraphIterator``, at a fraction of its cost)."""
    return _graph_nodes(graph, [])


def _graph_nodes(graph: ir.Graph | ir.Function, found: list[ir.Node]) -> list[ir.Node]:
    for node in graph:
        found.append(node)
        for _, inner in subgraphs(node):
            _graph_nodes(inner, found)
    return found


def nested_nodes(node: ir.Node) -> list[ir.Node]:
    """Every node inside ``node``'s subgraphs, at any depth, in one fixed order."""
    found: list[ir.Node] = []
    for _, graph in subgraphs(node):
        _graph_nodes(graph, found)
    return found


def all_nodes(model: ir.Model) -> Iterator[ir.Node]:
    """Every node of the main graph, its subgraphs and the model-local functions."""
    found = _graph_nodes(model.graph, [])
    for function in model.functions.values():
        _graph_nodes(function, found)
    return iter(found)


def nested_graphs(graph: ir.Graph | ir.Function) -> list[ir.Graph]:
    """Every subgraph inside ``graph``, at any depth."""
    return [inner for node in _graph_nodes(graph, []) for _, inner in subgraphs(node)]


def unique_value_names(model: ir.Model) -> None:
    """Make every value name unique across the main graph, all its subgraphs and the
    functions' bodies, and name every unnamed one: ONNX Runtime rejects a subgraph value named
    like one of an enclosing graph even when that one comes later (onnx_ir's NameFixPass only
    sees earlier ones, and copies the enclosing scope's names into each subgraph: quadratic
    with many subgraphs). The main graph's inputs and outputs keep their names."""
    tops: list[ir.Graph | ir.Function] = [model.graph, *model.functions.values()]
    # one set of names for the main graph and the functions: a runtime inlines a function's
    # body into the graph that calls it (ONNX Runtime, expanding a SequenceMap around a call,
    # rejects an inlined value named like one of the graph's)
    used: set[str] = set()
    for top in tops:
        seen: set[ir.Value] = set()
        first = [*top.inputs, *top.outputs]
        if isinstance(top, ir.Graph):
            first.extend(top.initializers.values())
        values = list(first)
        level: list[ir.Graph | ir.Function] = [top]
        while level:  # graph by graph, outer levels first: an outer value keeps its name
            below: list[ir.Graph | ir.Function] = []
            for graph in level:
                if graph is not top:
                    values.extend(graph.inputs)
                    values.extend(graph.initializers.values())  # type: ignore[union-attr]
                for node in graph:
                    values.extend(node.outputs)
                    below.extend(inner for _, inner in subgraphs(node))
            level = below
        taken: dict[str, int] = {}  # a base name -> the next suffix to try (linear, not k^2)
        for value in values:
            if value in seen:
                continue
            seen.add(value)
            name = value.name or "v"
            if (name in used or not value.name) and value not in first:
                k = taken.get(name, 1)
                while f"{name}__{k}" in used:
                    k += 1
                taken[name] = k + 1
                name = f"{name}__{k}"
                value.name = name
            used.add(name)


def clear_inputs(node: ir.Node) -> None:
    """Drop every input of ``node`` (it stops being a use of them), in time linear in its
    inputs: onnx_ir's ``replace_input_with`` rebuilds the input tuple on every call, which is
    quadratic for a node of many inputs (a SequenceConstruct of 100,000)."""
    inputs = node.inputs
    if len(inputs) < 32:
        for index in range(len(inputs)):
            node.replace_input_with(index, None)
        return
    for index, value in enumerate(inputs):
        if value is not None:
            value._remove_usage(node, index)  # (onnx_ir's own bookkeeping, done once per input)
    node._inputs = (None,) * len(inputs)


def detach(nodes: Iterable[ir.Node]) -> None:
    """Take ``nodes`` out of their graphs, inputs first (a node still using a value would keep
    it alive)."""
    by_graph: dict[ir.Graph | ir.Function, list[ir.Node]] = {}
    for node in nodes:
        clear_inputs(node)
        if node.graph is not None:
            by_graph.setdefault(node.graph, []).append(node)
    for graph, members in by_graph.items():
        graph.remove(members, safe=False)


def drop_subgraphs(node: ir.Node) -> None:
    """Detach the subgraphs of a node whose work was inlined: their nodes stop counting as
    uses of outer values, so dead-code removal can drop what only they read."""
    for inner in nested_nodes(node):
        clear_inputs(inner)
    for name in [n for n, a in node.attributes.items() if not a.is_ref()]:
        if node.attributes[name].type in (ir.AttributeType.GRAPH, ir.AttributeType.GRAPHS):
            node.attributes.pop(name)


def rebuild(
    node: ir.Node,
    inputs: Sequence[ir.Value | None],
    graphs: dict[str, ir.Graph],
    num_outputs: int,
) -> ir.Node:
    """A node of ``node``'s op with new ``inputs``, graph attributes ``graphs`` and
    ``num_outputs``, inserted before ``node`` (which loses those graphs: they now belong to
    the new node). Every other attribute is kept. The caller moves the outputs over."""
    attributes = [a for name, a in node.attributes.items() if name not in graphs]
    attributes += [ir.Attr(name, ir.AttributeType.GRAPH, graph) for name, graph in graphs.items()]
    new = ir.Node(
        node.domain,
        node.op_type,
        list(inputs),
        attributes,
        num_outputs=num_outputs,
        name=node.name,
    )
    assert node.graph is not None
    node.graph.insert_before(node, new)
    for name in graphs:
        node.attributes.pop(name, None)
    return new


def own_output(graph: ir.Graph, value: ir.Value) -> ir.Value:
    """``value`` as an output of ``graph``: an Identity when it is an input, an output already
    or comes from outside (a graph output must be made by the graph, once)."""
    if value.graph is graph and not value.is_graph_input() and not value.is_graph_output():
        return value
    ident = ir.node("Identity", [value])
    graph.append(ident)
    ident.outputs[0].type, ident.outputs[0].shape = value.type, value.shape
    return ident.outputs[0]


def drop_nodes_of(graph: ir.Graph) -> None:
    """Take every node of a discarded graph out, so that it stops using outer values."""
    nodes = list(graph)
    for inner in nodes:
        drop_subgraphs(inner)
    detach(nodes)


def functions_holding(
    model: ir.Model, holds: Callable[[ir.Node], bool]
) -> set[ir.OperatorIdentifier]:
    """The model-local functions whose body holds a node ``holds`` accepts (at any depth), or
    calls a function that does."""
    found: set[ir.OperatorIdentifier] = set()
    calls: dict[ir.OperatorIdentifier, set[ir.OperatorIdentifier]] = {}
    for fid, function in model.functions.items():
        calls[fid] = set()
        for node in graph_nodes(function):
            if holds(node):
                found.add(fid)
            elif node.op_identifier() in model.functions:
                calls[fid].add(node.op_identifier())
    grew = True
    while grew:
        grew = False
        for fid, callees in calls.items():
            if fid not in found and callees & found:
                found.add(fid)
                grew = True
    return found


def clear_declared_shapes(graph: ir.Graph) -> None:
    """Forget the shapes declared for what ``graph``'s nodes (at any depth) make: an
    exporter's guesses in a copy about to be re-proven."""
    for node in graph_nodes(graph):
        for out in node.outputs:
            out.shape = None

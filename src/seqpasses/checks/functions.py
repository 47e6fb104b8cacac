"""The gate's word on model-local functions: what each calls, that none calls itself, and how
many nodes their calls make once inlined."""

from __future__ import annotations

from collections.abc import Iterator

import onnx

from seqpasses.checks.dtypes import Refusal

__all__ = ["bodies", "calls", "expanded_nodes", "no_recursion"]


def calls(graph: onnx.GraphProto | onnx.FunctionProto) -> Iterator[tuple[str, str]]:
    """The (domain, name) of every op a graph's nodes use, in its bodies too."""
    stack = [graph]
    while stack:
        at = stack.pop()
        for node in at.node:
            yield node.domain, node.op_type
            stack.extend(body for _, body in bodies(node))


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


def no_recursion(proto: onnx.ModelProto) -> None:
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
                raise Refusal(f"model-local functions call themselves ({text})")
            if callee not in state:
                state[callee] = 1
                path.append(callee)
                pending.append(iter(callees[callee]))


def bodies(node: onnx.NodeProto) -> Iterator[tuple[str, onnx.GraphProto]]:
    for attr in node.attribute:
        if attr.type == onnx.AttributeProto.GRAPH:
            yield attr.name, attr.g
        elif attr.type == onnx.AttributeProto.GRAPHS:
            for graph in attr.graphs:
                yield attr.name, graph

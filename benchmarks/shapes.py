"""Graph shapes for the benchmark: each builder makes a model of about ``target`` nodes
(subgraph and function nodes included) that stresses one way a graph can be large.

One shape hides the quadratic paths another exposes: many graph outputs (per-output work), one
long list (per-element copies), wide fan-out of one list (per-reader work), many small loops
(per-subgraph work), a chain of Ifs (per-branch work), many model-local functions (per-function
work), a mixed graph of sequence ops, and a graph of plain ops with a list now and then (what
real exports look like).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import onnx
from onnx import TensorProto, helper

__all__ = ["SHAPES"]

FLOAT = TensorProto.FLOAT


class _Nodes:
    def __init__(self) -> None:
        self.nodes: list[onnx.NodeProto] = []

    def __len__(self) -> int:
        return len(self.nodes)

    def __call__(self, op: str, inputs: list[str], output: str, **attrs: Any) -> str:
        self.nodes.append(helper.make_node(op, inputs, [output], **attrs))
        return output

    def const(self, name: str, value: int) -> str:
        tensor = helper.make_tensor(name, TensorProto.INT64, [], [value])
        return self("Constant", [], name, value=tensor)


def _model(
    nodes: list[onnx.NodeProto],
    inputs: list[onnx.ValueInfoProto],
    outputs: list[onnx.ValueInfoProto],
    functions: list[onnx.FunctionProto] | None = None,
) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "bench", inputs, outputs)
    opsets = [helper.make_opsetid("", 18), helper.make_opsetid("bench", 1)]
    return helper.make_model(graph, opset_imports=opsets, functions=functions or [])


X = helper.make_tensor_value_info("x", FLOAT, [2, 3])


def many_outputs(target: int) -> onnx.ModelProto:
    """One Construct -> Erase -> ConcatFromSequence chain per graph output."""
    node = _Nodes()
    minus = node.const("minus_two", -2)
    outputs = []
    unit = 0
    while len(node) < target:
        r = node("Relu", ["x"], f"r{unit}")
        s = node("SequenceConstruct", ["x", r, "x"], f"s{unit}")
        t = node("SequenceErase", [s, minus], f"t{unit}")
        a = node("ConcatFromSequence", [t], f"a{unit}", axis=0)
        outputs.append(helper.make_tensor_value_info(a, FLOAT, [4, 3]))
        unit += 1
    return _model(node.nodes, [X], outputs)


def long_list(target: int) -> onnx.ModelProto:
    """SequenceEmpty, then one SequenceInsert per node, one ConcatFromSequence."""
    node = _Nodes()
    seq = node("SequenceEmpty", [], "s0", dtype=FLOAT)
    r = node("Relu", ["x"], "r")
    k = 0
    while len(node) < target - 1:
        k += 1
        seq = node("SequenceInsert", [seq, r if k % 2 else "x"], f"s{k}")
    out = node("ConcatFromSequence", [seq], "out", axis=0)
    return _model(node.nodes, [X], [helper.make_tensor_value_info(out, FLOAT, [2 * k, 3])])


def wide_reads(target: int) -> onnx.ModelProto:
    """One 8-element list read by SequenceAt at every position, the reads summed."""
    node = _Nodes()
    elements = ["x"]
    for k in range(7):
        elements.append(node("Relu" if k % 2 else "Neg", [elements[-1]], f"e{k}"))
    seq = node("SequenceConstruct", elements, "s")
    positions = [node.const(f"p{k}", k - 4) for k in range(8)]
    acc = "x"
    j = 0
    while len(node) < target:
        at = node("SequenceAt", [seq, positions[j % 8]], f"at{j}")
        acc = node("Add", [acc, at], f"acc{j}")
        j += 1
    return _model(node.nodes, [X], [helper.make_tensor_value_info(acc, FLOAT, [2, 3])])


def many_loops(target: int) -> onnx.ModelProto:
    """Small Loops with a run-time trip count, each appending to a list that is then stacked."""
    node = _Nodes()
    trips = helper.make_tensor_value_info("n", TensorProto.INT64, [])
    acc = None
    unit = 0
    while len(node) + 3 * unit < target:
        u = f"u{unit}"
        empty = node("SequenceEmpty", [], f"{u}_empty", dtype=FLOAT)
        body = helper.make_graph(
            [
                helper.make_node("Add", ["x", "x"], [f"{u}_e"]),
                helper.make_node("SequenceInsert", [f"{u}_in", f"{u}_e"], [f"{u}_out"]),
                helper.make_node("Identity", [f"{u}_c"], [f"{u}_c_out"]),
            ],
            f"{u}_body",
            [
                helper.make_tensor_value_info(f"{u}_i", TensorProto.INT64, []),
                helper.make_tensor_value_info(f"{u}_c", TensorProto.BOOL, []),
                helper.make_tensor_sequence_value_info(f"{u}_in", FLOAT, None),
            ],
            [
                helper.make_tensor_value_info(f"{u}_c_out", TensorProto.BOOL, []),
                helper.make_tensor_sequence_value_info(f"{u}_out", FLOAT, None),
            ],
        )
        done = node("Loop", ["n", "", empty], f"{u}_list", body=body)
        stacked = node("ConcatFromSequence", [done], f"{u}_st", axis=0, new_axis=1)
        total = node("ReduceSum", [stacked], f"{u}_sum", keepdims=0)
        acc = total if acc is None else node("Add", [acc, total], f"{u}_acc")
        unit += 1
    assert acc is not None
    output = helper.make_tensor_value_info(acc, FLOAT, [])
    return _model(node.nodes, [X, trips], [output])


def if_chain(target: int) -> onnx.ModelProto:
    """A chain of Ifs, each branch building a list from the previous value; one read after."""
    node = _Nodes()
    flag = helper.make_tensor_value_info("flag", TensorProto.BOOL, [])
    one = node.const("one", 1)
    acc = "x"
    unit = 0
    while len(node) + 2 * unit < target:
        u = f"u{unit}"

        def branch(name: str, elements: list[str], u: str = u) -> onnx.GraphProto:
            made = helper.make_node("SequenceConstruct", elements, [f"{u}_{name}_s"])
            out = helper.make_tensor_sequence_value_info(f"{u}_{name}_s", FLOAT, [2, 3])
            return helper.make_graph([made], f"{u}_{name}", [], [out])

        seq = node(
            "If",
            ["flag"],
            f"{u}_s",
            then_branch=branch("then", [acc, "x"]),
            else_branch=branch("else", ["x", acc]),
        )
        at = node("SequenceAt", [seq, one], f"{u}_at")
        acc = node("Add", [at, acc], f"{u}_acc")
        unit += 1
    output = helper.make_tensor_value_info(acc, FLOAT, [2, 3])
    return _model(node.nodes, [X, flag], [output])


def many_functions(target: int) -> onnx.ModelProto:
    """Many model-local functions, each building and reading a list; one call of each."""
    node = _Nodes()
    functions = []
    acc = "x"
    unit = 0
    while len(node) + 3 * unit < target:
        name = f"f{unit}"
        body = [
            helper.make_node(
                "Constant",
                [],
                ["p"],
                value=helper.make_tensor("p", TensorProto.INT64, [], [1]),
            ),
            helper.make_node("SequenceConstruct", ["a", "a"], ["s"]),
            helper.make_node("SequenceAt", ["s", "p"], ["y"]),
        ]
        functions.append(
            helper.make_function("bench", name, ["a"], ["y"], body, [helper.make_opsetid("", 18)])
        )
        y = node(name, [acc], f"y{unit}", domain="bench")
        acc = node("Add", [y, "x"], f"acc{unit}")
        unit += 1
    output = helper.make_tensor_value_info(acc, FLOAT, [2, 3])
    return _model(node.nodes, [X], [output], functions)


def mixed(target: int) -> onnx.ModelProto:
    """Construct -> Erase -> Concat, insert/erase chains and SplitToSequence -> SequenceAt
    fans, interleaved and summed: the realistic mix of a scripted export."""
    node = _Nodes()
    zero, minus = node.const("zero", 0), node.const("minus_two", -2)
    picks_at = [node.const(f"k{k}", k) for k in range(4)]
    acc = node("Concat", ["x", "x"], "acc0", axis=0)
    unit = 0
    while len(node) < target:
        u = f"u{unit}"
        r = node("Relu", ["x"], f"{u}_r")
        s = node("SequenceConstruct", ["x", r, "x"], f"{u}_s")
        t = node("SequenceErase", [s, minus], f"{u}_t")
        a = node("ConcatFromSequence", [t], f"{u}_a", axis=0)
        seq = node("SequenceConstruct", ["x", r], f"{u}_c0")
        for k in range(1, 6):
            seq = node("SequenceInsert", [seq, r if k % 2 else "x"], f"{u}_i{k}")
            seq = node("SequenceErase", [seq, zero], f"{u}_e{k}")
        b = node("ConcatFromSequence", [seq], f"{u}_b", axis=0)
        parts = node("SplitToSequence", [a], f"{u}_p", axis=0, keepdims=1)
        picks = [node("SequenceAt", [parts, k], f"{u}_at{j}") for j, k in enumerate(picks_at)]
        c = node("Concat", picks, f"{u}_cat", axis=0)
        acc = node("Add", [acc, node("Add", [b, c], f"{u}_bc")], f"{u}_acc")
        unit += 1
    output = helper.make_tensor_value_info(acc, FLOAT, [4, 3])
    return _model(node.nodes, [X], [output])


def exported(target: int) -> onnx.ModelProto:
    """What real exports look like: long runs of plain ops, and now and then a list (a
    tensor split into a list, two of its chunks read by position and put back together, as
    ``torch.jit.script`` leaves ``torch.split`` and indexing)."""
    node = _Nodes()
    zero, one = node.const("zero", 0), node.const("one", 1)
    acc = "x"
    unit = 0
    while len(node) < target:
        u = f"u{unit}"
        for k in range(40):
            acc = node(("Relu", "Neg", "Sigmoid", "Abs")[k % 4], [acc], f"{u}_p{k}")
        parts = node("SplitToSequence", [acc], f"{u}_parts", axis=0, keepdims=1)
        first = node("SequenceAt", [parts, zero], f"{u}_first")
        second = node("SequenceAt", [parts, one], f"{u}_second")
        acc = node("Concat", [second, first], f"{u}_cat", axis=0)
        unit += 1
    output = helper.make_tensor_value_info(acc, FLOAT, [2, 3])
    return _model(node.nodes, [X], [output])


SHAPES: dict[str, Callable[[int], onnx.ModelProto]] = {
    "many outputs": many_outputs,
    "long list": long_list,
    "wide reads": wide_reads,
    "many loops": many_loops,
    "if chain": if_chain,
    "many functions": many_functions,
    "mixed": mixed,
    "exported": exported,
}

"""Random programs on lists whose positions or length are known only at run time.

Each program edits and reads lists with positions that are graph inputs (int32 or int64
scalars), lists split off a tensor of run-time length (``xs``, shape ``[N, a, b]``), a list
rebuilt under a run-time condition (``If`` branches of different lengths), and maybe an element
of another shape (so that a list cannot be one tensor and must be left). It comes with input
sets that put the positions in range and out of it and ``N`` at 0..3, so that the rewritten
model must fail where the original fails and agree where it runs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnx
from hypothesis import strategies as st
from onnx import TensorProto, helper

from fuzz_programs import IR_FOR_OPSET

__all__ = ["StackedProgram", "stacked_programs"]

_NP = {TensorProto.FLOAT: np.float32, TensorProto.INT64: np.int64, TensorProto.DOUBLE: np.float64}


@dataclass
class StackedProgram:
    model: onnx.ModelProto
    inputs: list[dict[str, Any]]


@dataclass
class _Lists:
    """What the program has made so far: lists by name, with their length (None: known only at
    run time) and whether all their elements have one shape."""

    nodes: list[onnx.NodeProto] = field(default_factory=list)
    lists: dict[str, tuple[int | None, bool]] = field(default_factory=dict)
    outputs: dict[str, str] = field(default_factory=dict)
    positions: list[tuple[str, int]] = field(default_factory=list)  # name, dtype
    counter: int = 0

    def name(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def const(self, value: int) -> str:
        out = self.name("c")
        tensor = helper.make_tensor(out + "_v", TensorProto.INT64, [], [value])
        self.nodes.append(helper.make_node("Constant", [], [out], value=tensor))
        return out


@st.composite
def stacked_programs(draw: st.DrawFn) -> StackedProgram:
    opset = draw(st.sampled_from([11, 13, 15, 18, 21]))
    dtype = draw(st.sampled_from(sorted(_NP)))
    a, b = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    p = _Lists()
    tensors = ["x0", "x1"]
    odd = draw(st.integers(0, 4)) == 0  # an element of another shape joins some list
    # ConcatFromSequence of the split itself (torch.cat(x.unbind(0))) gives an empty tensor
    # for N = 0 where the original fails: documented; the input sets then start at N = 1
    bare_concat = False

    def position(length: int | None) -> str:
        kind = draw(st.sampled_from(["input", "input", "const"]))
        if kind == "const" and length is not None:
            return p.const(draw(st.integers(-length - 1, length + 1)))
        name = f"p{len(p.positions)}"
        p.positions.append((name, draw(st.sampled_from([TensorProto.INT64, TensorProto.INT32]))))
        return name

    for _ in range(draw(st.integers(2, 9))):
        kind = draw(
            st.sampled_from(
                [
                    "construct",
                    "empty",
                    "split",
                    "insert",
                    "erase",
                    "at",
                    "length",
                    "concat",
                    "if",
                    # (SequenceMap exists from opset 17: before it a model holding one is
                    # invalid, and what fails on it is no behaviour to keep)
                    *(["map"] if opset >= 17 else []),
                ]
            )
        )
        if not p.lists and kind not in ("construct", "empty", "split"):
            kind = "construct"
        out = p.name("s")
        if kind == "construct":
            items = draw(st.lists(st.sampled_from(tensors), min_size=1, max_size=3))
            p.nodes.append(helper.make_node("SequenceConstruct", items, [out]))
            p.lists[out] = (len(items), True)
        elif kind == "empty":
            p.nodes.append(helper.make_node("SequenceEmpty", [], [out], dtype=dtype))
            p.lists[out] = (0, True)
        elif kind == "split":  # N rows of [a, b]: torch.unbind(xs)
            p.nodes.append(helper.make_node("SplitToSequence", ["xs"], [out], axis=0, keepdims=0))
            p.lists[out] = (None, True)
        elif kind in ("insert", "erase", "at", "length", "concat"):
            seq = draw(st.sampled_from(sorted(p.lists)))
            length, alike = p.lists[seq]
            if kind == "insert":
                tensor = "y" if odd and draw(st.booleans()) else draw(st.sampled_from(tensors))
                where = [] if draw(st.integers(0, 3)) == 0 else [position(length)]
                p.nodes.append(helper.make_node("SequenceInsert", [seq, tensor, *where], [out]))
                p.lists[out] = (None if length is None else length + 1, alike and tensor != "y")
            elif kind == "erase":
                where = [] if draw(st.integers(0, 3)) == 0 else [position(length)]
                p.nodes.append(helper.make_node("SequenceErase", [seq, *where], [out]))
                p.lists[out] = (None if length is None else max(length - 1, 0), alike)
            elif kind == "at":
                p.nodes.append(helper.make_node("SequenceAt", [seq, position(length)], [out]))
                p.outputs[out] = "tensor"
            elif kind == "length":
                p.nodes.append(helper.make_node("SequenceLength", [seq], [out]))
                p.outputs[out] = "length"
            else:
                new_axis = draw(st.sampled_from([0, 1]))
                axis = draw(st.sampled_from([0, 1, -1] + ([2, -3] if new_axis else [])))
                if not alike:  # ONNX Runtime stacks mismatched shapes into garbage
                    new_axis, axis = 0, 0
                bare_concat |= _is_split(p, seq)
                p.nodes.append(
                    helper.make_node(
                        "ConcatFromSequence", [seq], [out], axis=axis, new_axis=new_axis
                    )
                )
                p.outputs[out] = "tensor"
        elif kind == "map":  # SequenceMap(l, x1): each element times x1, then a Relu
            seq = draw(st.sampled_from(sorted(p.lists)))
            length, alike = p.lists[seq]
            product, relu = f"{out}_m", f"{out}_o"
            body = helper.make_graph(
                [
                    helper.make_node("Mul", ["e", "v"], [product]),
                    helper.make_node(
                        "Relu" if dtype != TensorProto.INT64 else "Abs", [product], [relu]
                    ),
                ],
                "map",
                [
                    helper.make_tensor_value_info("e", dtype, None),
                    helper.make_tensor_value_info("v", dtype, [a, b]),
                ],
                [helper.make_tensor_value_info(relu, dtype, None)],
            )
            p.nodes.append(helper.make_node("SequenceMap", [seq, "x1"], [out], body=body))
            p.lists[out] = (length, alike)
        else:  # an If whose branches edit the list differently
            seq = draw(st.sampled_from(sorted(p.lists)))
            length, alike = p.lists[seq]
            branches = []
            for side in ("then", "else"):
                edit = draw(st.sampled_from(["same", "append", "erase", "front"]))
                inner = f"{out}_{side}"
                if edit == "same":
                    node = helper.make_node("Identity", [seq], [inner])
                elif edit == "append":
                    node = helper.make_node("SequenceInsert", [seq, "x1"], [inner])
                elif edit == "erase":
                    node = helper.make_node("SequenceErase", [seq], [inner])
                else:
                    node = helper.make_node("SequenceInsert", [seq, "x0", "zero"], [inner])
                out_info = helper.make_tensor_sequence_value_info(inner, dtype, None)
                branches.append(helper.make_graph([node], side, [], [out_info]))
            p.nodes.append(
                helper.make_node(
                    "If", ["flag"], [out], then_branch=branches[0], else_branch=branches[1]
                )
            )
            p.lists[out] = (None, alike)
    if p.lists and (not p.outputs or draw(st.booleans())):
        p.outputs[draw(st.sampled_from(sorted(p.lists)))] = "sequence"
    zero = helper.make_tensor("zero", TensorProto.INT64, [], [0])
    inputs = [
        helper.make_tensor_value_info("x0", dtype, [a, b]),
        helper.make_tensor_value_info("x1", dtype, [a, b]),
        helper.make_tensor_value_info("y", dtype, [a + 1, b]),
        helper.make_tensor_value_info("xs", dtype, ["N", a, b]),
        helper.make_tensor_value_info("flag", TensorProto.BOOL, []),
        *(helper.make_tensor_value_info(name, kind, []) for name, kind in p.positions),
    ]
    outputs = []
    for name, kind in p.outputs.items():
        if kind == "length":
            outputs.append(helper.make_tensor_value_info(name, TensorProto.INT64, []))
        elif kind == "sequence":
            outputs.append(helper.make_tensor_sequence_value_info(name, dtype, None))
        else:
            outputs.append(helper.make_tensor_value_info(name, dtype, None))
    graph = helper.make_graph(p.nodes, "stacked", inputs, outputs, initializer=[zero])
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=IR_FOR_OPSET[opset]
    )
    sets = []
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    for n in range(int(bare_concat), 4):  # N rows of xs
        feed: dict[str, Any] = {
            "x0": rng.standard_normal((a, b)).astype(_NP[dtype]),
            "x1": rng.standard_normal((a, b)).astype(_NP[dtype]),
            "y": rng.standard_normal((a + 1, b)).astype(_NP[dtype]),
            "xs": rng.standard_normal((n, a, b)).astype(_NP[dtype]),
            "flag": np.array(bool(rng.integers(0, 2))),
        }
        for name, kind in p.positions:
            value = draw(st.integers(-4, 4))
            feed[name] = np.array(value, dtype=np.int64 if kind == TensorProto.INT64 else np.int32)
        sets.append(feed)
    return StackedProgram(model, sets)


def _is_split(p: _Lists, seq: str) -> bool:
    producer = next(node for node in p.nodes if seq in node.output)
    return producer.op_type == "SplitToSequence"


@st.composite
def carried_programs(draw: st.DrawFn) -> StackedProgram:
    """A Loop with a run-time trip count (or a run-time condition) whose body edits and reads
    the list it carries at run-time positions: ``l[i]``, ``l[p]`` (an input), ``l[-1]``, pops,
    inserts at the front or at ``i``, appends under a run-time condition; then reads of the
    final list. With input sets for 0..3 iterations and positions in range and out of it."""
    opset = draw(st.sampled_from([11, 13, 16, 18, 21]))
    f32 = TensorProto.FLOAT
    a, b = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    p = _Lists()
    start = draw(st.integers(0, 2))
    initial = p.name("init")
    if start:
        p.nodes.append(helper.make_node("SequenceConstruct", ["x0", "x1"][:start], [initial]))
    else:
        p.nodes.append(helper.make_node("SequenceEmpty", [], [initial], dtype=f32))
    while_loop = draw(st.integers(0, 3)) == 0
    trip = "" if while_loop else "steps"
    cond_in = ""
    if while_loop or draw(st.booleans()):
        cond_in = p.name("go")
        p.nodes.append(helper.make_node("Greater", ["steps", p.const(0)], [cond_in]))

    outer = p.nodes
    p.nodes = body = []
    cur = "l"
    element = p.name("e")
    body.append(helper.make_node("Cast", ["i"], [p.name("fi")], to=f32))
    body.append(helper.make_node("Mul", ["x0", body[-1].output[0]], [element]))
    for _ in range(draw(st.integers(1, 4))):
        edit = draw(
            st.sampled_from(
                [
                    "append",
                    "read_i",
                    "read_p",
                    "read_last",
                    "pop",
                    "pop_front",
                    "front",
                    "at_i",
                    "maybe_append",
                    "length",
                    "odd",
                ]
            )
        )
        nxt = p.name("l")
        if edit == "append":
            body.append(helper.make_node("SequenceInsert", [cur, element], [nxt]))
        elif edit in ("read_i", "read_p", "read_last"):
            where = {"read_i": "i", "read_p": "q", "read_last": p.const(-1)}[edit]
            read, mixed = p.name("r"), p.name("e")
            body.append(helper.make_node("SequenceAt", [cur, where], [read]))
            body.append(helper.make_node("Add", [element, read], [mixed]))
            element, nxt = mixed, cur
        elif edit == "pop":
            body.append(helper.make_node("SequenceErase", [cur], [nxt]))
        elif edit == "pop_front":
            body.append(helper.make_node("SequenceErase", [cur, p.const(0)], [nxt]))
        elif edit == "front":
            body.append(helper.make_node("SequenceInsert", [cur, element, p.const(0)], [nxt]))
        elif edit == "at_i":
            body.append(helper.make_node("SequenceInsert", [cur, element, "i"], [nxt]))
        elif edit == "odd":  # an element of another shape: the list cannot be one tensor
            body.append(helper.make_node("SequenceInsert", [cur, "y"], [nxt]))
        elif edit == "length":
            count, fcount, scaled = p.name("n"), p.name("fn"), p.name("e")
            body.append(helper.make_node("SequenceLength", [cur], [count]))
            body.append(helper.make_node("Cast", [count], [fcount], to=f32))
            body.append(helper.make_node("Mul", [element, fcount], [scaled]))
            element, nxt = scaled, cur
        else:  # append when i is even
            half, twice, even = p.name("h"), p.name("t"), p.name("ev")
            body.append(helper.make_node("Div", ["i", p.const(2)], [half]))
            body.append(helper.make_node("Mul", [half, p.const(2)], [twice]))
            body.append(helper.make_node("Equal", [twice, "i"], [even]))
            then_out, else_out = p.name("lt"), p.name("le")
            branches = [
                helper.make_graph(
                    [helper.make_node("SequenceInsert", [cur, element], [then_out])],
                    "then",
                    [],
                    [helper.make_tensor_sequence_value_info(then_out, f32, None)],
                ),
                helper.make_graph(
                    [helper.make_node("Identity", [cur], [else_out])],
                    "else",
                    [],
                    [helper.make_tensor_sequence_value_info(else_out, f32, None)],
                ),
            ]
            body.append(
                helper.make_node(
                    "If", [even], [nxt], then_branch=branches[0], else_branch=branches[1]
                )
            )
        cur = nxt
    keep = p.name("co")
    if while_loop:  # stop after 'steps' iterations
        plus = p.name("ip")
        body.append(helper.make_node("Add", ["i", p.const(1)], [plus]))
        body.append(helper.make_node("Less", [plus, "steps"], [keep]))
    else:
        body.append(helper.make_node("Identity", ["c"], [keep]))
    out_list = cur if cur != "l" else p.name("lo")
    if cur == "l":
        body.append(helper.make_node("Identity", ["l"], [out_list]))
    loop_body = helper.make_graph(
        body,
        "body",
        [
            helper.make_tensor_value_info("i", TensorProto.INT64, []),
            helper.make_tensor_value_info("c", TensorProto.BOOL, []),
            helper.make_tensor_sequence_value_info("l", f32, None),
        ],
        [
            helper.make_tensor_value_info(keep, TensorProto.BOOL, []),
            helper.make_tensor_sequence_value_info(out_list, f32, None),
        ],
    )
    p.nodes = outer
    outer.append(helper.make_node("Loop", [trip, cond_in, initial], ["final"], body=loop_body))
    outputs: dict[str, str] = {}
    for _ in range(draw(st.integers(1, 3))):
        read = draw(st.sampled_from(["concat", "length", "at", "output"]))
        out = p.name("r")
        if read == "concat":
            new_axis = draw(st.sampled_from([0, 1]))
            axis = draw(st.sampled_from([0, 1, -1] + ([2] if new_axis else [])))
            p.nodes.append(
                helper.make_node(
                    "ConcatFromSequence", ["final"], [out], axis=axis, new_axis=new_axis
                )
            )
            outputs[out] = "tensor"
        elif read == "length":
            p.nodes.append(helper.make_node("SequenceLength", ["final"], [out]))
            outputs[out] = "length"
        elif read == "at":
            p.nodes.append(helper.make_node("SequenceAt", ["final", "q"], [out]))
            outputs[out] = "tensor"
        else:
            outputs["final"] = "sequence"
    inputs = [
        helper.make_tensor_value_info("x0", f32, [a, b]),
        helper.make_tensor_value_info("x1", f32, [a, b]),
        helper.make_tensor_value_info("y", f32, [a + 1, b]),
        helper.make_tensor_value_info("steps", TensorProto.INT64, []),
        helper.make_tensor_value_info("q", TensorProto.INT64, []),
    ]
    graph_outputs = []
    for name, kind in outputs.items():
        if kind == "length":
            graph_outputs.append(helper.make_tensor_value_info(name, TensorProto.INT64, []))
        elif kind == "sequence":
            graph_outputs.append(helper.make_tensor_sequence_value_info(name, f32, None))
        else:
            graph_outputs.append(helper.make_tensor_value_info(name, f32, None))
    graph = helper.make_graph(p.nodes, "carried", inputs, graph_outputs)
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=IR_FOR_OPSET[opset]
    )
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    sets = []
    # a list that starts empty and becomes a scan output gives an empty tensor after zero
    # iterations where the original's ConcatFromSequence fails (documented): 1..3 then
    fewest = int(
        start == 0
        and "tensor" in outputs.values()
        and any(node.op_type == "ConcatFromSequence" for node in p.nodes)
    )
    for steps in range(fewest, 4):
        sets.append(
            {
                "x0": rng.standard_normal((a, b)).astype(np.float32),
                "x1": rng.standard_normal((a, b)).astype(np.float32),
                "y": rng.standard_normal((a + 1, b)).astype(np.float32),
                "steps": np.array(steps, dtype=np.int64),
                "q": np.array(draw(st.integers(-3, 3)), dtype=np.int64),
            }
        )
    return StackedProgram(model, sets)

"""Random straight-line sequence programs for property-based testing (hypothesis).

Each program starts from a few tensor inputs of one shape and applies random sequence ops
with random constant positions (in range and out of range), axes, ``new_axis``, ``keepdims``,
dtypes and opsets 11-21. Used by tests/test_fuzz.py and by scripts/fuzz.py for long campaigns.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import onnx
from hypothesis import strategies as st
from onnx import TensorProto, helper

IR_FOR_OPSET = {11: 6, 12: 7, 13: 7, 14: 7, 15: 8, 16: 8, 17: 8, 18: 8, 19: 9, 20: 9, 21: 10}
DTYPES = [
    TensorProto.FLOAT,
    TensorProto.DOUBLE,
    TensorProto.INT64,
    TensorProto.INT32,
    TensorProto.FLOAT16,
]


@dataclass
class _Builder:
    dtype: int
    shape: list[int]
    nodes: list[onnx.NodeProto] = field(default_factory=list)
    tensors: list[str] = field(default_factory=list)
    sequences: list[tuple[str, int]] = field(default_factory=list)  # name, length
    # split axis of sequences made by SplitToSequence: their elements may differ in shape, so
    # they are only concatenated back along that axis (ONNX Runtime returns garbage instead of
    # failing when ConcatFromSequence meets mismatched shapes, which would make runs disagree)
    split_axis: dict[str, int] = field(default_factory=dict)
    outputs: list[tuple[str, str]] = field(default_factory=list)  # name, kind
    counter: int = 0

    def name(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def const(
        self, value: int, dtype: int = TensorProto.INT64, shape: list[int] | None = None
    ) -> str:
        out = self.name("c")
        dims = [] if shape is None else shape
        values = [value] if shape is None else [value] * (shape[0] if shape else 1)
        tensor = helper.make_tensor(out + "_v", dtype, dims, values)
        self.nodes.append(helper.make_node("Constant", [], [out], value=tensor))
        return out

    def consts(self, values: list[int]) -> str:
        out = self.name("c")
        tensor = helper.make_tensor(out + "_v", TensorProto.INT64, [len(values)], values)
        self.nodes.append(helper.make_node("Constant", [], [out], value=tensor))
        return out


@st.composite
def programs(draw: st.DrawFn) -> onnx.ModelProto:
    opset = draw(st.sampled_from(sorted(IR_FOR_OPSET)))
    dtype = draw(st.sampled_from(DTYPES))
    shape = [draw(st.integers(1, 3)), draw(st.integers(1, 4))]
    n_inputs = draw(st.integers(1, 3))
    b = _Builder(dtype, shape)
    b.tensors = [f"x{i}" for i in range(n_inputs)]

    def position(length: int | None, optional: bool) -> str | None:
        if optional and draw(st.booleans()):
            return None
        n = length if length is not None else 2
        value = draw(st.integers(-n - 1, n + 1))
        dtype_pos = draw(st.sampled_from([TensorProto.INT64, TensorProto.INT32]))
        return b.const(value, dtype_pos)

    for _ in range(draw(st.integers(1, 8))):
        kind = draw(
            st.sampled_from(
                ["construct", "empty", "insert", "erase", "at", "length", "concat", "split"]
            )
        )
        if kind == "construct" or (not b.sequences and kind not in ("empty", "split")):
            items = draw(st.lists(st.sampled_from(b.tensors), min_size=1, max_size=4))
            out = b.name("s")
            b.nodes.append(helper.make_node("SequenceConstruct", items, [out]))
            b.sequences.append((out, len(items)))
        elif kind == "empty":
            out = b.name("s")
            b.nodes.append(helper.make_node("SequenceEmpty", [], [out], dtype=dtype))
            b.sequences.append((out, 0))
        elif kind == "split":
            source = draw(st.sampled_from(b.tensors))
            axis = draw(st.sampled_from([0, 1, -1, -2]))
            keepdims = draw(st.sampled_from([0, 1]))
            mode = draw(st.sampled_from(["none", "scalar", "list"]))
            inputs = [source]
            dim = shape[axis]
            length: int | None = dim
            if mode == "scalar":
                chunk = draw(st.integers(1, 3))
                inputs.append(b.const(chunk))
                length = -(-dim // chunk)
                keepdims = (
                    1 if chunk != 1 else keepdims
                )  # ORT rejects other scalar splits with keepdims=0
            elif mode == "list":
                first = draw(st.integers(1, dim - 1)) if dim > 1 else dim
                inputs.append(b.consts([first, dim - first]))
                length = 2
            out = b.name("s")
            b.nodes.append(
                helper.make_node("SplitToSequence", inputs, [out], axis=axis, keepdims=keepdims)
            )
            b.sequences.append((out, length))
            b.split_axis[out] = axis % 2
        else:
            seq, length = draw(st.sampled_from(b.sequences))
            if seq in b.split_axis and kind in ("insert", "erase"):
                kind = "length"
            if kind == "insert":
                tensor = draw(st.sampled_from(b.tensors))
                pos = position(length, optional=True)
                out = b.name("s")
                b.nodes.append(
                    helper.make_node(
                        "SequenceInsert", [seq, tensor] + ([pos] if pos else []), [out]
                    )
                )
                b.sequences.append((out, length + 1))
            elif kind == "erase":
                pos = position(length, optional=True)
                out = b.name("s")
                b.nodes.append(
                    helper.make_node("SequenceErase", [seq] + ([pos] if pos else []), [out])
                )
                b.sequences.append((out, max(length - 1, 0)))
            elif kind == "at":
                pos = position(length, optional=False)
                assert pos is not None
                out = b.name("t")
                b.nodes.append(helper.make_node("SequenceAt", [seq, pos], [out]))
                b.outputs.append((out, "tensor"))
            elif kind == "length":
                out = b.name("n")
                b.nodes.append(helper.make_node("SequenceLength", [seq], [out]))
                b.outputs.append((out, "length"))
            else:
                new_axis = draw(st.sampled_from([0, 1]))
                axis = draw(st.sampled_from([0, 1, -1, -2] + ([2, -3] if new_axis else [])))
                if seq in b.split_axis:
                    new_axis, axis = 0, b.split_axis[seq] - draw(st.sampled_from([0, 2]))
                out = b.name("y")
                b.nodes.append(
                    helper.make_node(
                        "ConcatFromSequence", [seq], [out], axis=axis, new_axis=new_axis
                    )
                )
                b.outputs.append((out, "tensor"))
    if b.sequences and draw(st.booleans()):
        b.outputs.append((b.sequences[-1][0], "sequence"))
    if not b.outputs:
        seq = b.sequences[-1][0] if b.sequences else None
        if seq is None:
            out = b.name("s")
            b.nodes.append(helper.make_node("SequenceConstruct", [b.tensors[0]], [out]))
            seq = out
        b.outputs.append((seq, "sequence"))
    inputs = [helper.make_tensor_value_info(t, dtype, shape) for t in b.tensors]
    return _model("fuzz", b.nodes, inputs, b.outputs, dtype, opset)


def _model(
    name: str,
    nodes: list[onnx.NodeProto],
    inputs: list[onnx.ValueInfoProto],
    outputs: list[tuple[str, str]],
    dtype: int,
    opset: int,
) -> onnx.ModelProto:
    """The model of a program: its outputs by kind (``length``, ``sequence``, ``tensor``)."""
    graph_outputs = []
    for name_, kind in dict(outputs).items():
        if kind == "length":
            graph_outputs.append(helper.make_tensor_value_info(name_, TensorProto.INT64, []))
        elif kind == "sequence":
            graph_outputs.append(helper.make_tensor_sequence_value_info(name_, dtype, None))
        else:
            graph_outputs.append(helper.make_tensor_value_info(name_, dtype, None))
    graph = helper.make_graph(nodes, name, inputs, graph_outputs)
    return helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=IR_FOR_OPSET[opset]
    )


@st.composite
def loop_programs(draw: st.DrawFn) -> onnx.ModelProto:
    """A Loop that carries a list (and maybe a tensor state) with random trip counts (constant,
    an input's dim, a run-time value, none with a condition), breaks, appends at the back or
    the front, reads inside the body (the list itself, an outer split at the loop counter),
    element shapes that grow, then random reads of the final list. Every loop runs at least
    once unless its list starts with an element (the documented zero-iteration difference is
    not what this checks)."""
    opset = draw(st.sampled_from([11, 13, 16, 18]))
    n: int | str = draw(st.sampled_from([2, "N"]))
    f32 = TensorProto.FLOAT
    b = _Builder(f32, [2, 3])
    outer: list[onnx.NodeProto] = []

    def const(value: float | int, dtype: int) -> str:
        b.nodes = outer
        return b.const(int(value), dtype) if dtype != f32 else _float(b, float(value))

    # -- the trip count and condition (at most 3 iterations when the body reads the 3 columns
    # of x at the loop counter: a read out of range fails at run time, and the folded model
    # computes only what its outputs need)
    outer_split = draw(st.booleans())
    most = 3 if outer_split else 4
    # a list that starts with an element may also see zero iterations (one that starts empty
    # would make the original's ConcatFromSequence fail: the documented difference)
    start = draw(st.sampled_from(["empty", "one"]))
    trip_kind = draw(st.sampled_from(["const", "dim", "runtime", "while"]))
    trip = ""
    if trip_kind == "const":
        trip = const(draw(st.integers(1, most)), TensorProto.INT64)
    elif trip_kind == "dim":
        shape = b.name("shape")
        outer.append(helper.make_node("Shape", ["x"], [shape]))
        trip = b.name("trip")
        outer.append(
            helper.make_node("Gather", [shape, const(0, TensorProto.INT64)], [trip], axis=0)
        )
    elif trip_kind == "runtime":
        absolute, plus, trip = b.name("abs"), b.name("plus"), b.name("trip")
        outer.append(helper.make_node("Abs", ["steps"], [absolute]))
        first = 0 if start == "one" else 1
        outer.append(helper.make_node("Add", [absolute, const(first, TensorProto.INT64)], [plus]))
        outer.append(helper.make_node("Min", [plus, const(most, TensorProto.INT64)], [trip]))
    cond = const(1, TensorProto.BOOL) if trip_kind == "while" or draw(st.booleans()) else ""
    breaks = trip_kind == "while" or draw(st.integers(0, 4)) == 0
    limit = draw(st.integers(1, 3))

    # -- what the loop carries
    initial = b.name("init")
    if start == "empty":
        outer.append(helper.make_node("SequenceEmpty", [], [initial], dtype=f32))
    else:
        outer.append(helper.make_node("SequenceConstruct", ["x"], [initial]))
    has_state = draw(st.booleans())
    grows = has_state and draw(st.integers(0, 3)) == 0  # the state's shape changes
    if outer_split:
        outer.append(helper.make_node("SplitToSequence", ["x"], ["cols"], axis=1, keepdims=0))

    # -- the body
    body: list[onnx.NodeProto] = []
    b.nodes = body
    fi = b.name("fi")
    body.append(helper.make_node("Cast", ["i"], [fi], to=f32))
    base = "h" if has_state else "x"
    element = b.name("e")
    body.append(helper.make_node("Mul", [base, fi], [element]))
    if outer_split:
        col, col2, widened = b.name("col"), b.name("col2"), b.name("e")
        body.append(helper.make_node("SequenceAt", ["cols", "i"], [col]))
        axes = b.consts([1])
        if opset >= 13:
            body.append(helper.make_node("Unsqueeze", [col, axes], [col2]))
        else:
            body.append(helper.make_node("Unsqueeze", [col], [col2], axes=[1]))
        if not grows:
            body.append(helper.make_node("Add", [element, col2], [widened]))
            element = widened
    edit = draw(st.sampled_from(["append", "front", "read_last", "length", "keep"]))
    list_out = b.name("lo")
    if edit == "append":
        body.append(helper.make_node("SequenceInsert", ["l", element], [list_out]))
    elif edit == "front":
        body.append(helper.make_node("SequenceInsert", ["l", element, b.const(0)], [list_out]))
    elif edit in ("read_last", "length"):
        grown = b.name("g")
        body.append(helper.make_node("SequenceInsert", ["l", element], [grown]))
        if edit == "read_last":
            last, mixed = b.name("last"), b.name("e")
            body.append(helper.make_node("SequenceAt", [grown, b.const(-1)], [last]))
            body.append(helper.make_node("Neg", [last], [mixed]))
            body.append(helper.make_node("SequenceInsert", [grown, mixed], [list_out]))
        else:
            count, fcount, scaled = b.name("n"), b.name("fn"), b.name("e")
            body.append(helper.make_node("SequenceLength", [grown], [count]))
            body.append(helper.make_node("Cast", [count], [fcount], to=f32))
            body.append(helper.make_node("Mul", ["x", fcount], [scaled]))
            body.append(helper.make_node("SequenceInsert", [grown, scaled], [list_out]))
    else:
        list_out = "l"
    outputs_body = [b.name("co"), list_out]
    if breaks:
        plus = b.name("ip")
        body.append(helper.make_node("Add", ["i", b.const(1)], [plus]))
        body.append(helper.make_node("Less", [plus, b.const(limit)], [outputs_body[0]]))
    else:
        body.append(helper.make_node("Identity", ["c"], [outputs_body[0]]))
    body_inputs = [
        helper.make_tensor_value_info("i", TensorProto.INT64, []),
        helper.make_tensor_value_info("c", TensorProto.BOOL, []),
        helper.make_tensor_sequence_value_info("l", f32, None),
    ]
    body_outputs = [
        helper.make_tensor_value_info(outputs_body[0], TensorProto.BOOL, []),
        helper.make_tensor_sequence_value_info(list_out, f32, None),
    ]
    loop_inputs = [trip, cond, initial]
    loop_outputs = ["final"]
    if has_state:
        state = b.name("h")
        if grows:
            body.append(helper.make_node("Concat", ["h", "x"], [state], axis=0))
        else:
            body.append(helper.make_node("Add", ["h", "x"], [state]))
        body_inputs.append(helper.make_tensor_value_info("h", f32, None))
        body_outputs.append(helper.make_tensor_value_info(state, f32, None))
        loop_inputs.append("x")
        loop_outputs.append("state")
    loop_body = helper.make_graph(body, "body", body_inputs, body_outputs)
    b.nodes = outer
    outer.append(helper.make_node("Loop", loop_inputs, loop_outputs, body=loop_body))

    # -- reads of the final list
    outputs = [("state", "tensor")] if has_state and draw(st.booleans()) else []
    for _ in range(draw(st.integers(1, 3))):
        read = draw(st.sampled_from(["concat", "length", "at", "output"]))
        if grows and read == "concat":
            read = "length"  # elements of different shapes: ONNX Runtime returns garbage
        out = b.name("r")
        if read == "concat":
            new_axis = draw(st.sampled_from([0, 1]))
            axis = draw(st.sampled_from([0, 1, -1] + ([2] if new_axis else [])))
            outer.append(
                helper.make_node(
                    "ConcatFromSequence", ["final"], [out], axis=axis, new_axis=new_axis
                )
            )
            outputs.append((out, "tensor"))
        elif read == "length":
            outer.append(helper.make_node("SequenceLength", ["final"], [out]))
            outputs.append((out, "length"))
        elif read == "at":
            position = b.const(draw(st.integers(-2, 2)))
            outer.append(helper.make_node("SequenceAt", ["final", position], [out]))
            outputs.append((out, "tensor"))
        else:
            outputs.append(("final", "sequence"))
    inputs = [
        helper.make_tensor_value_info("x", f32, [n, 3]),
        helper.make_tensor_value_info("steps", TensorProto.INT64, []),
    ]
    return _model("fuzz_loop", outer, inputs, outputs, f32, opset)


def _float(b: _Builder, value: float) -> str:
    out = b.name("f")
    tensor = helper.make_tensor(out + "_v", TensorProto.FLOAT, [], [value])
    b.nodes.append(helper.make_node("Constant", [], [out], value=tensor))
    return out

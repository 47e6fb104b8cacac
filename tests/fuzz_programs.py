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


@st.composite
def nested_programs(draw: st.DrawFn) -> onnx.ModelProto:
    """A Loop that carries a list, with an inner Loop or an If in its body: lists appended at
    both levels (a list of stacked inner lists), appends, pops and reads inside conditional
    blocks (run-time and data-dependent conditions, branches of equal and of different list
    lengths), iteration numbers declared ``[]`` or ``[1]`` (read by a Slice, as TorchScript
    writes it), constant and run-time trip counts, then random reads of the final list."""
    opset = draw(st.sampled_from([13, 16, 18]))  # a Loop carries sequences from opset 13
    f32, i64 = TensorProto.FLOAT, TensorProto.INT64
    b = _Builder(f32, [2, 3])
    outer: list[onnx.NodeProto] = []
    b.nodes = outer

    def axes(nodes: list[onnx.NodeProto], op: str, source: str, axis: int) -> str:
        out = b.name(op.lower())
        if opset >= 13:
            b.nodes = nodes
            nodes.append(helper.make_node(op, [source, b.consts([axis])], [out]))
        else:
            nodes.append(helper.make_node(op, [source], [out], axes=[axis]))
        return out

    # -- trip counts: the outer loop runs 1..3 times; the inner one 1..2 times
    def trip(nodes: list[onnx.NodeProto], most: int) -> str:
        b.nodes = nodes
        if draw(st.booleans()):
            return b.const(draw(st.integers(1, most)))
        absolute, plus, count = b.name("abs"), b.name("plus"), b.name("trip")
        nodes.append(helper.make_node("Abs", ["steps"], [absolute]))
        nodes.append(helper.make_node("Add", [absolute, b.const(1)], [plus]))
        nodes.append(helper.make_node("Min", [plus, b.const(most)], [count]))
        return count

    outer_trip = trip(outer, 3)
    b.nodes = outer
    true = b.const(1, TensorProto.BOOL)
    start = draw(st.sampled_from(["empty", "one", "two"]))
    inner_kind = draw(st.sampled_from(["none", "loop", "if"]))
    stacked = inner_kind == "loop" and draw(st.booleans())  # the list holds inner stacks
    if stacked:
        start = "empty"
    initial = b.name("init")
    if start == "empty":
        outer.append(helper.make_node("SequenceEmpty", [], [initial], dtype=f32))
    else:
        items = ["x"] if start == "one" else ["x", "x"]
        outer.append(helper.make_node("SequenceConstruct", items, [initial]))

    # -- the outer body: counter i ([] or [1]), condition c, list l, state h
    body: list[onnx.NodeProto] = []
    b.nodes = body
    counter_one = draw(st.booleans())
    scalar_i = "i"
    if counter_one:  # declared [1]: a Slice reads it as its start; positions need a scalar
        scalar_i = axes(body, "Squeeze", "i", 0)
        row, stop = b.name("row"), b.name("stop")
        body.append(helper.make_node("Add", ["i", b.consts([1])], [stop]))
        body.append(helper.make_node("Slice", ["x", "i", stop, b.consts([1])], [row]))
        b.nodes = body
    fi = b.name("fi")
    body.append(helper.make_node("Cast", [scalar_i], [fi], to=f32))
    element = b.name("e")
    body.append(helper.make_node("Mul", ["h", fi], [element]))
    if counter_one:
        widened = b.name("e")
        body.append(helper.make_node("Add", [element, row], [widened]))  # [2,3] + [2,1]...
        element = widened
    list_in, state_out = "l", b.name("h")
    body.append(helper.make_node("Add", ["h", "x"], [state_out]))
    appended: str | None = element

    if inner_kind == "loop":
        inner: list[onnx.NodeProto] = []
        inner_trip = trip(body, 2)
        b.nodes = body
        inner_init = b.name("ii")
        body.append(helper.make_node("SequenceEmpty", [], [inner_init], dtype=f32))
        b.nodes = inner
        fj, piece, grown = b.name("fj"), b.name("piece"), b.name("ig")
        inner.append(helper.make_node("Cast", ["j"], [fj], to=f32))
        inner.append(helper.make_node("Add", [element, fj], [piece]))
        reads_outer = start != "empty" and not stacked and draw(st.booleans())
        if reads_outer:  # the inner body reads the outer list's last element
            last, mixed = b.name("last"), b.name("piece")
            inner.append(helper.make_node("SequenceAt", [list_in, b.const(-1)], [last]))
            inner.append(helper.make_node("Add", [piece, last], [mixed]))
            piece = mixed
        inner.append(helper.make_node("SequenceInsert", ["il", piece], [grown]))
        ico = b.name("ico")
        inner.append(helper.make_node("Identity", ["ci"], [ico]))
        inner_body = helper.make_graph(
            inner,
            "inner",
            [
                helper.make_tensor_value_info("j", i64, []),
                helper.make_tensor_value_info("ci", TensorProto.BOOL, []),
                _sequence_info("il"),
            ],
            [
                helper.make_tensor_value_info(ico, TensorProto.BOOL, []),
                _sequence_info(grown),
            ],
        )
        b.nodes = body
        inner_final, stack = b.name("if"), b.name("stack")
        body.append(
            helper.make_node("Loop", [inner_trip, true, inner_init], [inner_final], body=inner_body)
        )
        body.append(
            helper.make_node("ConcatFromSequence", [inner_final], [stack], axis=0, new_axis=1)
        )
        if stacked:
            appended = stack
        else:  # the stack's rows summed back into the element
            total = b.name("e")
            body.append(
                helper.make_node("ReduceSum", [stack], [total], keepdims=0, axes=[0])
                if opset < 13
                else helper.make_node("ReduceSum", [stack, b.consts([0])], [total], keepdims=0)
            )
            appended = total
    list_out = b.name("lo")
    if inner_kind == "if":
        cond_kind = draw(st.sampled_from(["flag", "data"]))
        condition = "flag"
        if cond_kind == "data":
            condition = b.name("big")
            total = b.name("sum")
            body.append(helper.make_node("ReduceSum", ["h"], [total], keepdims=0))
            body.append(helper.make_node("Greater", [total, fi], [condition]))
        shapes = ["append_both", "pop_append", "read"]
        shape = draw(st.sampled_from([*shapes, "append_one"] if opset >= 14 else shapes))
        then_nodes: list[onnx.NodeProto] = []
        else_nodes: list[onnx.NodeProto] = []
        then_out, else_out = b.name("tl"), b.name("el")
        if shape == "append_both":  # one length in both branches
            negated = b.name("neg")
            then_nodes.append(helper.make_node("SequenceInsert", [list_in, element], [then_out]))
            else_nodes.append(helper.make_node("Neg", [element], [negated]))
            else_nodes.append(helper.make_node("SequenceInsert", [list_in, negated], [else_out]))
        elif shape == "append_one":  # a conditional append: lengths differ
            then_nodes.append(helper.make_node("SequenceInsert", [list_in, element], [then_out]))
            else_nodes.append(helper.make_node("Identity", [list_in], [else_out]))
        elif shape == "pop_append":  # pop, change, append back (fails on an empty list)
            b.nodes = then_nodes
            top, popped, doubled = b.name("top"), b.name("pl"), b.name("dbl")
            then_nodes.append(helper.make_node("SequenceAt", [list_in, b.const(-1)], [top]))
            then_nodes.append(helper.make_node("SequenceErase", [list_in], [popped]))
            then_nodes.append(helper.make_node("Add", [top, element], [doubled]))
            then_nodes.append(helper.make_node("SequenceInsert", [popped, doubled], [then_out]))
            else_nodes.append(helper.make_node("SequenceInsert", [list_in, element], [else_out]))
        else:  # a read in a conditional block; the list grows after the If
            b.nodes = then_nodes
            top, mixed = b.name("top"), b.name("mix")
            then_nodes.append(helper.make_node("SequenceAt", [list_in, b.const(0)], [top]))
            then_nodes.append(helper.make_node("Add", [top, element], [then_out]))
            else_nodes.append(helper.make_node("Identity", [element], [else_out]))
        b.nodes = body
        kind = "tensor" if shape == "read" else "sequence"

        def info(name: str) -> onnx.ValueInfoProto:
            if kind == "tensor":
                return helper.make_tensor_value_info(name, f32, [2, 3])
            return _sequence_info(name)

        branch_out = b.name("bo")
        body.append(
            helper.make_node(
                "If",
                [condition],
                [branch_out],
                then_branch=helper.make_graph(then_nodes, "then", [], [info(then_out)]),
                else_branch=helper.make_graph(else_nodes, "else", [], [info(else_out)]),
            )
        )
        if kind == "tensor":
            body.append(helper.make_node("SequenceInsert", [list_in, branch_out], [list_out]))
        else:
            list_out = branch_out
    else:
        assert appended is not None
        body.append(helper.make_node("SequenceInsert", [list_in, appended], [list_out]))
    cond_out = b.name("co")
    body.append(helper.make_node("Identity", ["c"], [cond_out]))
    counter_type = helper.make_tensor_value_info("i", i64, [1] if counter_one else [])
    loop_body = helper.make_graph(
        body,
        "body",
        [
            counter_type,
            helper.make_tensor_value_info("c", TensorProto.BOOL, []),
            _sequence_info("l"),
            helper.make_tensor_value_info("h", f32, [2, 3]),
        ],
        [
            helper.make_tensor_value_info(cond_out, TensorProto.BOOL, []),
            _sequence_info(list_out),
            helper.make_tensor_value_info(state_out, f32, [2, 3]),
        ],
    )
    b.nodes = outer
    outer.append(
        helper.make_node(
            "Loop", [outer_trip, true, initial, "x"], ["final", "state"], body=loop_body
        )
    )
    # -- reads of the final list (tensor outputs declared with their rank)
    rank = 3 if stacked else 2
    outputs: list[onnx.ValueInfoProto] = []
    if draw(st.booleans()):
        outputs.append(helper.make_tensor_value_info("state", f32, [2, 3]))
    for _ in range(draw(st.integers(1, 3))):
        read = draw(st.sampled_from(["concat", "length", "at", "output"]))
        out = b.name("r")
        if read == "concat":
            new_axis = draw(st.sampled_from([0, 1]))
            outer.append(
                helper.make_node("ConcatFromSequence", ["final"], [out], axis=0, new_axis=new_axis)
            )
            dims = [None] * (rank + new_axis)
            outputs.append(helper.make_tensor_value_info(out, f32, dims))
        elif read == "length":
            outer.append(helper.make_node("SequenceLength", ["final"], [out]))
            outputs.append(helper.make_tensor_value_info(out, i64, []))
        elif read == "at":
            position = b.const(draw(st.integers(-2, 1)))
            outer.append(helper.make_node("SequenceAt", ["final", position], [out]))
            outputs.append(helper.make_tensor_value_info(out, f32, [None] * rank))
        elif all(o.name != "final" for o in outputs):
            outputs.append(_sequence_info("final"))
    if not outputs:
        outputs.append(_sequence_info("final"))
    inputs = [
        helper.make_tensor_value_info("x", f32, [2, 3]),
        helper.make_tensor_value_info("steps", i64, []),
        helper.make_tensor_value_info("flag", TensorProto.BOOL, []),
    ]
    graph = helper.make_graph(outer, "fuzz_nested", inputs, outputs)
    return helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=IR_FOR_OPSET[opset]
    )


def _sequence_info(name: str) -> onnx.ValueInfoProto:
    """A sequence of float tensors of unknown shape (``make_tensor_sequence_value_info`` with
    no shape declares scalar elements)."""
    element = helper.make_tensor_type_proto(TensorProto.FLOAT, None)
    return helper.make_value_info(name, helper.make_sequence_type_proto(element))

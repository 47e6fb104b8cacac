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
    outputs = []
    for name, kind in dict(b.outputs).items():
        if kind == "length":
            outputs.append(helper.make_tensor_value_info(name, TensorProto.INT64, []))
        elif kind == "sequence":
            outputs.append(helper.make_tensor_sequence_value_info(name, dtype, None))
        else:
            outputs.append(helper.make_tensor_value_info(name, dtype, None))
    graph = helper.make_graph(b.nodes, "fuzz", inputs, outputs)
    return helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=IR_FOR_OPSET[opset]
    )

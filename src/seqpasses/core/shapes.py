"""Shapes on demand: ask ONNX's own per-node inference only for values a rewrite needs.

A rewrite that needs a rank or a dim (SplitToSequence's chunk count, ConcatFromSequence's axis
check) asks :meth:`ShapeOracle.shape`. When the value has no shape yet, the oracle walks back
through its producers (iteratively, each node at most once) and runs
``onnx.shape_inference.infer_node_outputs`` on each: no whole-graph inference, and the
answers are stored on the values so that they also end up in the output model.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import onnx
import onnx_ir as ir

from seqpasses.core.constants import MAX_ELEMENTS, constant_array
from seqpasses.core.graph import GRAPH_HOLDERS, is_default

__all__ = ["ShapeOracle", "TypeAndShape"]

TypeAndShape = tuple[ir.TypeProtocol | None, ir.Shape | None]

# Ops whose output has the type and shape of their (first) input: answered without ONNX.
_SAME_AS_INPUT = frozenset(
    {
        "Abs",
        "Acos",
        "Asin",
        "Atan",
        "Ceil",
        "Cos",
        "Cosh",
        "Elu",
        "Erf",
        "Exp",
        "Floor",
        "Gelu",
        "HardSigmoid",
        "HardSwish",
        "Identity",
        "LeakyRelu",
        "Log",
        "LogSoftmax",
        "Mish",
        "Neg",
        "Not",
        "Reciprocal",
        "Relu",
        "Round",
        "Selu",
        "Sigmoid",
        "Sign",
        "Sin",
        "Sinh",
        "Softmax",
        "Softplus",
        "Softsign",
        "Sqrt",
        "Tan",
        "Tanh",
        "ThresholdedRelu",
    }
)


_DTYPES = frozenset(int(t) for t in ir.DataType if t != ir.DataType.UNDEFINED)

_ELEMENTWISE = frozenset({"Add", "Sub", "Mul", "Div", "Pow", "Max", "Min"})


class ShapeOracle:
    """Fills in missing types and shapes of tensor values, one producer at a time."""

    def __init__(
        self, opset: int, constant: Callable[[ir.Value], np.ndarray | None] | None = None
    ) -> None:
        self.opset = opset
        self.constant = constant  # what a value holds before run time, beyond constants
        self.tried: set[ir.Node] = set()

    def shape(self, value: ir.Value) -> ir.Shape | None:
        if value.shape is None:
            self._infer_upstream(value)
        return value.shape

    def _infer_upstream(self, value: ir.Value) -> None:
        stack: list[ir.Node] = []
        producer = value.producer()
        if producer is not None and producer not in self.tried:
            stack.append(producer)
        while stack:
            node = stack[-1]
            pending = [
                p
                for v in node.inputs
                if v is not None and v.shape is None
                for p in [v.producer()]
                if p is not None and p not in self.tried and p is not node
            ]
            if pending:
                stack.extend(pending)
                continue
            stack.pop()
            if node not in self.tried:
                self.tried.add(node)
                self._infer_node(node)

    def _infer_node(self, node: ir.Node) -> None:
        inputs = [(v.type, v.shape) if v is not None else None for v in node.inputs]
        for out, (type_, shape) in zip(node.outputs, self.infer(node, inputs), strict=True):
            if out.type is None:
                out.type = type_
            if out.shape is None:
                out.shape = shape

    def infer(self, node: ir.Node, inputs: list[TypeAndShape | None]) -> list[TypeAndShape]:
        """The types and shapes of ``node``'s outputs for inputs of the given types and shapes.

        Unknown outputs are ``(None, None)``; nothing is stored on the values.
        """
        unknown: list[TypeAndShape] = [(None, None)] * len(node.outputs)
        if not is_default(node) or node.op_type in GRAPH_HOLDERS:
            return unknown  # (a node's own inference does not see into its subgraphs)
        first = inputs[0] if inputs else None
        if (
            node.op_type in _SAME_AS_INPUT
            and first is not None
            and len(node.outputs) == 1
            and isinstance(first[0], ir.TensorType)
        ):
            return [(first[0], ir.Shape(list(first[1])) if first[1] is not None else None)]
        if (
            node.op_type in _ELEMENTWISE
            and len(inputs) == 2
            and len(node.outputs) == 1
            and first is not None
            and inputs[1] is not None
            and isinstance(first[0], ir.TensorType)
            and first[0] == inputs[1][0]
            and first[1] is not None
            and first[1] == inputs[1][1]
            and all(isinstance(d, int) for d in first[1])
        ):  # the same numeric shape on both sides: no broadcasting to work out
            return [(first[0], ir.Shape(list(first[1])))]
        listed = _sequence_type(node, inputs)
        if listed is not None:
            return [(listed, None)]
        pairs = list(zip(node.inputs, inputs, strict=True))
        if any(v is not None and (t is None or t[0] is None) for v, t in pairs):
            return unknown
        try:
            schema = onnx.defs.get_schema(node.op_type, self.opset, "")
            proto = ir.serde.serialize_node(node)
            # the node's own names are not unique while a walk runs (onnx_ir names new values
            # per graph: a Split's output and an axes Constant of a body can both be "val_1"),
            # so inputs and outputs are named by position for the inference
            types = {}
            data: dict[str, onnx.TensorProto] = {}
            for k, (v, given) in enumerate(zip(node.inputs, inputs, strict=True)):
                if v is None or not v.name or given is None:
                    continue
                name = proto.input[k] = f"input_{k}"
                probe = ir.Value(name=name, type=given[0], shape=given[1])
                types[name] = ir.serde.serialize_value(probe).type
                if v.is_graph_input():
                    continue
                array = self.constant(v) if self.constant is not None else constant_array(v)
                if array is not None and array.size <= MAX_ELEMENTS:
                    data[name] = onnx.numpy_helper.from_array(array, name)
            for k in range(len(proto.output)):
                if proto.output[k]:
                    proto.output[k] = f"output_{k}"
            opsets = [onnx.helper.make_opsetid("", self.opset)]
            inferred = onnx.shape_inference.infer_node_outputs(
                schema, proto, types, data, opset_imports=opsets
            )
        except Exception:
            return unknown
        result: list[TypeAndShape] = []
        for k, out in enumerate(node.outputs):
            type_proto = inferred.get(f"output_{k}") if out.name else None
            if type_proto is None:
                result.append((None, None))
                continue
            result.append(
                (
                    ir.serde.deserialize_type_proto_for_type(type_proto),
                    ir.serde.deserialize_type_proto_for_shape(type_proto),
                )
            )
        return result


def _sequence_type(node: ir.Node, inputs: list[TypeAndShape | None]) -> ir.SequenceType | None:
    """The type of a SequenceEmpty, or of a SequenceInsert into a list of the tensor's own
    element type, as onnx infers it (a sequence type has no shape), without asking onnx."""
    if len(node.outputs) != 1:
        return None
    if node.op_type == "SequenceEmpty" and not node.inputs:
        dtype = node.attributes.get_int("dtype", ir.DataType.FLOAT)
        if dtype not in _DTYPES:
            return None
        return ir.SequenceType(ir.TensorType(ir.DataType(dtype)))
    if node.op_type != "SequenceInsert" or len(inputs) not in (2, 3):
        return None
    listed, tensor = inputs[0], inputs[1]
    if listed is None or tensor is None or (len(inputs) == 3 and inputs[2] is None):
        return None
    if (
        isinstance(listed[0], ir.SequenceType)
        and isinstance(listed[0].elem_type, ir.TensorType)
        and listed[0].elem_type == tensor[0]
    ):
        return listed[0]
    return None

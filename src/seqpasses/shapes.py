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

from seqpasses.sequence import constant_array

__all__ = ["ShapeOracle"]

_MAX_CONST_ELEMENTS = 4096

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
        if node.domain not in ("", "ai.onnx") or node.op_type in ("Loop", "If", "Scan"):
            return
        source = node.inputs[0] if node.inputs else None
        if node.op_type in _SAME_AS_INPUT and source is not None and len(node.outputs) == 1:
            out = node.outputs[0]
            if isinstance(source.type, ir.TensorType):
                out.type = out.type or source.type
                if out.shape is None and source.shape is not None:
                    out.shape = ir.Shape(list(source.shape))
                return
        if any(v is not None and v.type is None for v in node.inputs):
            return
        try:
            schema = onnx.defs.get_schema(node.op_type, self.opset, "")
            proto = ir.serde.serialize_node(node)
            types = {
                v.name: ir.serde.serialize_value(v).type
                for v in node.inputs
                if v is not None and v.name
            }
            data: dict[str, onnx.TensorProto] = {}
            for v in node.inputs:
                if v is None or not v.name:
                    continue
                if v.is_graph_input():
                    continue
                array = self.constant(v) if self.constant is not None else constant_array(v)
                if array is not None and array.size <= _MAX_CONST_ELEMENTS:
                    data[v.name] = onnx.numpy_helper.from_array(array, v.name)
            opsets = [onnx.helper.make_opsetid("", self.opset)]
            inferred = onnx.shape_inference.infer_node_outputs(
                schema, proto, types, data, opset_imports=opsets
            )
        except Exception:
            return
        for out in node.outputs:
            type_proto = inferred.get(out.name or "")
            if type_proto is None:
                continue
            if out.type is None:
                out.type = ir.serde.deserialize_type_proto_for_type(type_proto)
            if out.shape is None:
                out.shape = ir.serde.deserialize_type_proto_for_shape(type_proto)

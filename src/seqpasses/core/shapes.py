"""Shapes on demand: ask ONNX's own per-node inference only for values a rewrite needs.

A rewrite that needs a rank or a dim (SplitToSequence's chunk count, ConcatFromSequence's axis
check) asks :meth:`ShapeOracle.shape`. When the value has no shape yet, the oracle walks back
through its producers (iteratively, each node at most once) and runs
``onnx.shape_inference.infer_node_outputs`` on each: no whole-graph inference, and the
answers are stored on the values so that they also end up in the output model.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np
import onnx
import onnx_ir as ir

from seqpasses.core.constants import MAX_ELEMENTS, constant_array
from seqpasses.core.dims import INT64_MAX, cap_of, capped
from seqpasses.core.graph import GRAPH_HOLDERS, is_default
from seqpasses.core.partial import Known, partial_vector

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
        self,
        opset: int,
        constant: Callable[[ir.Value], np.ndarray | None] | None = None,
        functions: Mapping[ir.OperatorIdentifier, ir.Function] | None = None,
    ) -> None:
        self.opset = opset
        self.constant = constant  # what a value holds before run time, beyond constants
        self.functions = functions or {}  # the model-local functions calls are inferred through
        self.tried: set[ir.Node] = set()
        self._protos: dict[int, onnx.FunctionProto] = {}

    def _infer_call(
        self, node: ir.Node, inputs: list[TypeAndShape | None]
    ) -> list[TypeAndShape] | None:
        return _call_types(self, node, inputs)

    def shape(self, value: ir.Value) -> ir.Shape | None:
        tensor = _constant_tensor(value)
        if tensor is not None:  # a constant's tensor says what its declaration may not
            real = ir.Shape([d if isinstance(d, int) else None for d in tensor.shape])
            if value.shape != real:
                value.shape = real
            if value.type is None:
                value.type = ir.TensorType(tensor.dtype)
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

    def infer(
        self,
        node: ir.Node,
        inputs: list[TypeAndShape | None],
        errors: list[str] | None = None,
        known: Mapping[ir.Value, TypeAndShape] | None = None,
    ) -> list[TypeAndShape]:
        """The types and shapes of ``node``'s outputs for inputs of the given types and shapes.

        Unknown outputs are ``(None, None)``; nothing is stored on the values. Where onnx's
        inference rejects the inputs (incompatible dims: the node would fail the checker),
        its message goes to ``errors`` when given. ``known`` holds the shapes of the values
        around ``node`` where their declarations are not to be trusted (a loop body's, inferred
        afresh): a value it lacks is read as declared (or inferred)."""
        unknown: list[TypeAndShape] = [(None, None)] * len(node.outputs)
        if not is_default(node):
            return self._infer_call(node, inputs) or unknown
        if node.op_type in GRAPH_HOLDERS:
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
        except onnx.shape_inference.InferenceError as error:
            if errors is not None:
                errors.append(f"{node.op_type}: {str(error).strip()}")
            return unknown
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
        if node.op_type == "Slice" and result and result[0][1] is not None:
            result[0] = (result[0][0], self.slice_dims(node, inputs, result[0][1], known))
        return result

    def slice_dims(
        self,
        node: ir.Node,
        inputs: list[TypeAndShape | None],
        shape: ir.Shape,
        known: Mapping[ir.Value, TypeAndShape] | None,
    ) -> ir.Shape:
        """The dims of a Slice's output that onnx's inference leaves unknown when an end is
        known only in part (an entry computed at run time beside constant ones), or the
        sliced axis is a symbol: a number where the axis and the slice are numbers; the
        symbol itself for a slice from 0 to an end past any size; ``min(symbol, end)``
        (:func:`~seqpasses.core.dims.capped`) to a smaller constant end."""
        data = inputs[0][1] if inputs and inputs[0] is not None else None
        if data is None or len(data) != len(shape) or len(node.inputs) < 3:
            return shape

        def vector(k: int) -> list[Known] | None:
            value = node.inputs[k] if k < len(node.inputs) else None
            if value is None:
                return None
            given = inputs[k] if k < len(inputs) else None

            def shape_of(v: ir.Value) -> ir.Shape | None:
                if v is value and given is not None:
                    return given[1]
                if known is not None and v in known:
                    return known[v][1]
                return self.shape(v)

            return partial_vector(value, self.constant or constant_array, shape_of)

        starts, ends = vector(1), vector(2)
        if starts is None or ends is None or len(starts) != len(ends):
            return shape
        axes = vector(3) if len(node.inputs) > 3 and node.inputs[3] is not None else None
        steps = vector(4) if len(node.inputs) > 4 and node.inputs[4] is not None else None
        axes = axes if axes is not None else list(range(len(starts)))
        steps = steps if steps is not None else [1] * len(starts)
        if len(axes) != len(starts) or len(steps) != len(starts):
            return shape
        dims = list(shape)
        rank = len(data)
        if any(
            not isinstance(a, int) or isinstance(a, bool) or not -rank <= a < rank for a in axes
        ):
            return shape
        sliced = {a % rank for a in axes}  # type: ignore[operator]
        for k in range(rank):  # (an axis not sliced keeps its size)
            if (
                k not in sliced
                and not isinstance(dims[k], int)
                and getattr(dims[k], "value", None) is None
            ):
                dims[k] = data[k]
        for axis, start, end, step in zip(axes, starts, ends, steps, strict=True):
            assert isinstance(axis, int)
            axis %= rank
            if any(not isinstance(x, int) or isinstance(x, bool) for x in (start, end, step)):
                continue
            assert isinstance(start, int) and isinstance(end, int) and isinstance(step, int)
            if step == 0 or isinstance(dims[axis], int):
                continue
            size = data[axis]
            if isinstance(size, int):
                dims[axis] = _slice_length(size, start, end, step)
            elif isinstance(size, ir.SymbolicDim) and size.value and start == 0 and step == 1:
                if end >= INT64_MAX // 2:
                    dims[axis] = size
                elif end > 0 and cap_of(size) is None:
                    dims[axis] = capped(size.value, end)
        return ir.Shape(dims)


def _constant_tensor(value: ir.Value) -> ir.TensorProtocol | None:
    """The tensor a constant value holds (an initializer, a ``Constant`` node's ``value``):
    its shape and dtype are read without its data."""
    tensor = value.const_value
    if tensor is None:
        node = value.producer()
        if node is None or node.op_type != "Constant" or not is_default(node):
            return None
        attr = node.attributes.get("value")
        if attr is None or attr.is_ref() or attr.type != ir.AttributeType.TENSOR:
            return None
        tensor = attr.value
    return tensor if isinstance(tensor, ir.TensorProtocol) else None


def _contradicts(a: ir.Shape, b: ir.Shape) -> bool:
    return len(a) != len(b) or any(
        isinstance(x, int) and isinstance(y, int) and x != y for x, y in zip(a, b, strict=True)
    )


def _call_types(
    oracle: ShapeOracle, node: ir.Node, inputs: list[TypeAndShape | None]
) -> list[TypeAndShape] | None:
    """What a call of a model-local function gives for inputs of these types (onnx's inference
    of the function body); None when it cannot tell."""
    function = oracle.functions.get(node.op_identifier())
    if function is None or any(i is None or i[0] is None for i in inputs):
        return None
    proto = oracle._protos.get(id(function))
    if proto is None:
        proto = oracle._protos[id(function)] = ir.serde.serialize_function(function)
    try:
        types = [
            ir.serde.serialize_value(ir.Value(name="x", type=i[0], shape=i[1])).type
            for i in inputs
            if i is not None
        ]
        attributes = [
            ir.serde.serialize_attribute(a) for a in node.attributes.values() if not a.is_ref()
        ]
        found = onnx.shape_inference.infer_function_output_types(proto, types, attributes)
    except Exception:
        return None
    if len(found) != len(node.outputs):
        return None
    return [
        (
            ir.serde.deserialize_type_proto_for_type(t) if t.WhichOneof("value") else None,
            ir.serde.deserialize_type_proto_for_shape(t) if t.WhichOneof("value") else None,
        )
        for t in found
    ]


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


def _slice_length(size: int, start: int, end: int, step: int) -> int:
    """How many elements ONNX's Slice takes from an axis of ``size``: a negative index counts
    from the end; then, stepping forward, start and end are clamped into [0, size]; stepping
    back, start into [0, size-1] and end into [-1, size-1] (not Python's clamping: a start
    before the first element stepping back takes it)."""
    if start < 0:
        start += size
    if end < 0:
        end += size
    if step > 0:
        start, end = min(max(start, 0), size), min(max(end, 0), size)
        return max(0, -(-(end - start) // step))
    start, end = min(max(start, 0), size - 1), min(max(end, -1), size - 1)
    return max(0, -(-(start - end) // -step))

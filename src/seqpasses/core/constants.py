"""Values computable before run time: small shape arithmetic, folded on demand.

Exporters compute split sizes, positions and trip counts from ``Shape`` at run time
(``torch.chunk`` gives ``Concat(Expand(Div(Add(Gather(Shape(x)), 2), 3)), ...)``). A rewrite
that needs such a value asks :meth:`ConstantEvaluator.value`; the evaluator walks back through
the producers and evaluates each with ``onnx.reference`` at the model's opset, for a short list
of side-effect-free ops and only while every tensor stays small. ``Shape`` of a value with
known dims is answered from the shape (and ``Gather``/``Slice`` of a ``Shape`` from the known
dims they select). Nothing is evaluated that a rewrite did not ask for.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import onnx
import onnx_ir as ir

from seqpasses.core.graph import is_default

__all__ = ["MAX_ELEMENTS", "ConstantEvaluator", "constant_array", "output_elements"]

MAX_ELEMENTS = 4096
_INT64_MAX = 2**63 - 1
_MAX_DEPTH = 64


def integer_array(value: ir.Value) -> np.ndarray | None:
    """:func:`constant_array`, when it holds integers (as positions, sizes and axes must: a
    model may give a float or a complex tensor there, which ONNX Runtime refuses)."""
    array = constant_array(value)
    return array if array is not None and array.dtype in (np.int32, np.int64) else None


def constant_array(value: ir.Value) -> np.ndarray | None:
    """The array a value holds when it is an initializer or a ``Constant`` node's output.

    A lean version of ``onnx_ir.convenience.get_const_tensor`` for the hot path: no
    runtime-checkable Protocol ``isinstance`` checks, which cost ~100 us each.
    """
    tensor = value.const_value
    if tensor is None:
        node = value.producer()
        if node is None or node.op_type != "Constant" or not is_default(node):
            return None
        if len(node.attributes) != 1:
            return None
        name, attr = next(iter(node.attributes.items()))
        if attr.is_ref():
            return None
        if name == "value":
            tensor = attr.value
        elif name in ("value_int", "value_ints"):
            return np.array(attr.value, dtype=np.int64)
        elif name in ("value_float", "value_floats"):
            return np.array(attr.value, dtype=np.float32)
        else:
            return None
    try:
        return tensor.numpy()
    except Exception:
        return None


_FOLDABLE = frozenset(
    {
        "Abs",
        "Add",
        "And",
        "Cast",
        "Ceil",
        "Concat",
        "ConstantOfShape",
        "Div",
        "Equal",
        "Expand",
        "Floor",
        "Gather",
        "Greater",
        "GreaterOrEqual",
        "Identity",
        "Less",
        "LessOrEqual",
        "Max",
        "Min",
        "Mod",
        "Mul",
        "Neg",
        "Not",
        "Or",
        "Range",
        "ReduceMax",
        "ReduceMin",
        "ReduceProd",
        "ReduceSum",
        "Reshape",
        "Sign",
        "Slice",
        "Squeeze",
        "Sub",
        "Tile",
        "Unsqueeze",
        "Where",
    }
)


class ConstantEvaluator:
    """Arrays of values that follow from constants and known shapes, memoized per value."""

    def __init__(
        self, opset_of: Callable[[ir.Node], int], usable: Callable[[ir.Value], bool]
    ) -> None:
        self.opset_of = opset_of  # the ONNX opset a node runs under
        self.usable = usable  # whether a constant-looking value may be read (graph inputs)
        self.memo: dict[ir.Value, np.ndarray | None] = {}

    def value(self, value: ir.Value) -> np.ndarray | None:
        return self._value(value, 0)

    def _value(self, value: ir.Value, depth: int) -> np.ndarray | None:
        if value in self.memo:
            return self.memo[value]
        if not self.usable(value):
            return None
        array = constant_array(value)
        if array is None and depth < _MAX_DEPTH:
            array = self._evaluate(value, depth)
        if array is not None and array.size > MAX_ELEMENTS:
            array = None
        self.memo[value] = array
        return array

    def _evaluate(self, value: ir.Value, depth: int) -> np.ndarray | None:
        node = value.producer()
        if node is None or not is_default(node):
            return None
        if node.op_type == "Shape":
            return _shape_of(node)
        if node.op_type == "Size":
            dims = _known_dims(node.inputs[0])
            size = None if dims is None else math.prod(dims)
            return None if size is None or size > _INT64_MAX else np.array(size, dtype=np.int64)
        if node.op_type not in _FOLDABLE or len(node.outputs) != 1:
            return None
        if node.op_type in ("Gather", "Slice"):
            picked = _pick_from_shape(self, node, depth)
            if picked is not None:
                return picked
        feeds: dict[str, np.ndarray] = {}
        arrays: list[np.ndarray | None] = []
        for v in node.inputs:
            if v is None:
                arrays.append(None)
                continue
            array = self._value(v, depth + 1)
            if array is None or not v.name:
                return None
            feeds[v.name] = array
            arrays.append(array)
        bound = output_elements(node.op_type, arrays)
        if bound is None or bound > MAX_ELEMENTS:
            return None  # (computed from the inputs' shapes: nothing big is ever allocated)
        return _run(node, feeds, self.opset_of(node))


_BROADCAST = frozenset(
    {
        "Add", "And", "Div", "Equal", "Greater", "GreaterOrEqual", "Less", "LessOrEqual",
        "Max", "Min", "Mod", "Mul", "Or", "Sub", "Where",
    }
)  # fmt: skip
_NO_LARGER = frozenset(
    {
        "Abs", "Cast", "Ceil", "Floor", "Identity", "Neg", "Not", "Sign", "Reshape", "Squeeze",
        "Unsqueeze", "Slice", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceSum",
    }
)  # fmt: skip


def _broadcast(shapes: list[tuple[int, ...]]) -> int | None:
    try:
        return math.prod(np.broadcast_shapes(*shapes))
    except ValueError:
        return None  # (the op fails at run time: nothing to fold)


def output_elements(op_type: str, inputs: list[np.ndarray | None]) -> int | None:
    """How many elements ``op_type`` would make of these inputs, worked out from their shapes
    and values without running it (None: it would fail, or the op is not one seqpasses folds).
    A fold is only run when this is small: ``Tile([0], [6e8])`` is never allocated."""
    given = [a for a in inputs if a is not None]
    if not given:
        return None
    first = inputs[0]
    try:
        if op_type in _NO_LARGER:
            return int(first.size) if first is not None else None
        if op_type in _BROADCAST:
            return _broadcast([tuple(a.shape) for a in given])
        if op_type == "Concat":
            return sum(int(a.size) for a in given)
        if op_type == "ConstantOfShape" and first is not None:
            dims = [int(d) for d in first.reshape(-1)]
            return math.prod(dims) if all(d >= 0 for d in dims) else None
        if op_type == "Expand" and first is not None and len(inputs) > 1:
            target = inputs[1]
            if target is None:
                return None
            return _broadcast([tuple(first.shape), tuple(int(d) for d in target.reshape(-1))])
        if op_type == "Tile" and first is not None and len(inputs) > 1:
            repeats = inputs[1]
            if repeats is None or repeats.size != first.ndim:
                return None
            counts = [int(r) for r in repeats.reshape(-1)]
            if any(r < 0 for r in counts):
                return None
            return math.prod(int(d) * r for d, r in zip(first.shape, counts, strict=True))
        if op_type == "Range" and len(given) == 3:
            start, limit, delta = (float(a.reshape(-1)[0]) for a in given)
            if delta == 0 or not all(math.isfinite(x) for x in (start, limit, delta)):
                return None
            return max(math.ceil((limit - start) / delta), 0)
        if op_type == "Gather" and first is not None and len(inputs) > 1:
            indices = inputs[1]
            if indices is None or first.ndim == 0:
                return None
            return int(first.size) * max(int(indices.size), 1)  # (an upper bound, any axis)
    except (TypeError, ValueError, OverflowError, IndexError):
        return None
    return None


def _known_dims(value: ir.Value | None) -> list[int] | None:
    if value is None or value.shape is None:
        return None
    dims = list(value.shape)
    return dims if all(isinstance(d, int) for d in dims) else None  # type: ignore[return-value]


def _shape_range(node: ir.Node, rank: int) -> tuple[int, int]:
    start = node.attributes.get_int("start", 0)
    end = node.attributes.get_int("end", rank)
    start = min(max(start + rank if start < 0 else start, 0), rank)
    end = min(max(end + rank if end < 0 else end, 0), rank)
    return start, end


def _shape_of(node: ir.Node) -> np.ndarray | None:
    dims = _known_dims(node.inputs[0])
    if dims is None:
        return None
    start, end = _shape_range(node, len(dims))
    return np.array(dims[start:end], dtype=np.int64)


def _pick_from_shape(evaluator: ConstantEvaluator, node: ir.Node, depth: int) -> np.ndarray | None:
    """``Gather``/``Slice`` of ``Shape(x)`` when the dims it selects are known numbers."""
    source = node.inputs[0]
    shape_node = source.producer() if source is not None else None
    if shape_node is None or shape_node.op_type != "Shape" or shape_node.inputs[0] is None:
        return None
    shape = shape_node.inputs[0].shape
    if shape is None:
        return None
    start, end = _shape_range(shape_node, len(shape))
    dims = list(shape)[start:end]
    marked = np.array([d if isinstance(d, int) else -1 for d in dims], dtype=np.int64)
    positions = np.arange(len(dims), dtype=np.int64)
    feeds: dict[str, np.ndarray] = {}
    for index, v in enumerate(node.inputs):
        if v is None:
            continue
        if index == 0:
            feeds[v.name or ""] = positions
            continue
        array = evaluator._value(v, depth + 1)
        if array is None or not v.name:
            return None
        feeds[v.name] = array
    if not all(feeds):
        return None
    picked = _run(node, feeds, evaluator.opset_of(node))
    if picked is None or picked.dtype != np.int64:
        return None
    result = marked[picked]
    return None if (result < 0).any() else result


def _run(node: ir.Node, feeds: dict[str, np.ndarray], opset: int) -> np.ndarray | None:
    from onnx.reference import ReferenceEvaluator  # (only where a node is folded: 20 ms)

    out = node.outputs[0]
    if not out.name:
        return None
    try:
        proto = ir.serde.serialize_node(node)
        inputs = [
            onnx.helper.make_tensor_value_info(
                name, onnx.helper.np_dtype_to_tensor_dtype(array.dtype), array.shape
            )
            for name, array in feeds.items()
        ]
        graph = onnx.helper.make_graph(
            [proto], "fold", inputs, [onnx.helper.make_empty_tensor_value_info(out.name)]
        )
        model = onnx.helper.make_model(graph, opset_imports=[onnx.helper.make_opsetid("", opset)])
        (result,) = ReferenceEvaluator(model).run(None, feeds)
    except Exception:
        return None
    array = np.asarray(result)
    return array if array.size <= MAX_ELEMENTS else None

"""Shapes of single ops from what is known of their inputs, where onnx's own inference
says less: numpy's broadcasting (onnx infers no shape for the comparisons it defines as
functions), ops shaped by a vector known in part (``ConstantOfShape``, ``Expand``,
``Reshape``, ``Tile``), a ``Slice`` whose ends or sizes are named dims, and the sequence
types onnx would give. Pure functions of the inputs' types and shapes: the oracle
(:mod:`seqpasses.core.shapes`) reads the values and hands them on.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable

import numpy as np
import onnx_ir as ir

from seqpasses.core.dims import (
    INT64_MAX,
    Dim,
    cap_of,
    capped,
    divide_dims,
    multiply_dims,
    same_dim,
    scale_dim,
)
from seqpasses.core.graph import is_default
from seqpasses.core.partial import Known

__all__ = [
    "BROADCASTING",
    "COMPARISONS",
    "ELEMENTWISE",
    "SAME_AS_INPUT",
    "SHAPED_BY_VECTOR",
    "TypeAndShape",
    "broadcast",
    "constant_gap",
    "constant_tensor",
    "sequence_type",
    "slice_dims",
    "vector_shape",
]

TypeAndShape = tuple[ir.TypeProtocol | None, ir.Shape | None]

ELEMENTWISE = frozenset({"Add", "Sub", "Mul", "Div", "Pow", "Max", "Min"})

_DTYPES = frozenset(int(t) for t in ir.DataType if t != ir.DataType.UNDEFINED)

# Ops whose output has the type and shape of their (first) input: answered without ONNX.
SAME_AS_INPUT = frozenset(
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


SHAPED_BY_VECTOR = frozenset({"ConstantOfShape", "Expand", "Reshape", "Tile"})

COMPARISONS = frozenset(
    {"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual", "And", "Or", "Xor"}
)
BROADCASTING = COMPARISONS | ELEMENTWISE | {"Where", "Mod", "BitShift", "Sum", "Mean"}
"""Ops whose output has the inputs' shapes broadcast (numpy's rules)."""


def broadcast(shapes: list[ir.Shape | None]) -> ir.Shape | None:
    """The shapes broadcast as numpy does, right-aligned: a dim of 1 gives way; a number
    beside a name is the number (the name must be it, or the op fails); names must be the
    same name, else unknown. None when a shape is unknown or numbers disagree."""
    if not shapes or any(shape is None for shape in shapes):
        return None
    rank = max(len(shape) for shape in shapes if shape is not None)
    dims: list[Dim] = []
    for k in range(rank):
        column = [
            shape[len(shape) - rank + k]
            for shape in shapes
            if shape is not None and len(shape) - rank + k >= 0
        ]
        column = [d for d in column if d != 1] or [1]
        numbers = {d for d in column if isinstance(d, int)}
        if len(numbers) > 1:
            return None  # (fails at run time: nothing is claimed)
        if numbers:
            dims.append(numbers.pop())
        elif all(same_dim(d, column[0]) for d in column):
            dims.append(column[0])
        else:
            dims.append(_capped_by(column))
    return ir.Shape(dims)


def _capped_by(column: list[Dim]) -> Dim:
    """A name beside ``min(name, cap)`` broadcasts to the name (where the two differ, the
    name is past the cap and neither is 1: the op fails); anything else is unknown."""
    names = {getattr(d, "value", None) for d in column if cap_of(d) is None}
    capped_names = {found[0] for d in column if (found := cap_of(d)) is not None}
    if len(names) == 1 and None not in names and capped_names <= names:
        return next(d for d in column if cap_of(d) is None)
    return ir.SymbolicDim(None)


def _broadcast_expand(data: list[Dim], target: list[Dim]) -> ir.Shape | None:
    """``Expand``'s output: the data and the target shape broadcast, right-aligned; a named dim
    of the target stands where the data's is 1 or unknown (else the op fails)."""
    rank = max(len(data), len(target))
    ones: list[Dim] = [1] * rank
    data = ones[: rank - len(data)] + data
    target = ones[: rank - len(target)] + target
    dims: list[Dim] = []
    for a, b in zip(data, target, strict=True):
        if b == 1:
            dims.append(a)
        elif a == 1:
            dims.append(b)
        elif isinstance(a, int) and isinstance(b, int):
            if a != b:
                return None  # (fails at run time: nothing is claimed)
            dims.append(a)
        elif same_dim(a, b) or (_unknown(a) and not _unknown(b)):
            dims.append(b)
        elif _unknown(b) and isinstance(a, int) and a != 1:
            dims.append(a)
        else:
            dims.append(ir.SymbolicDim(None))
    return ir.Shape(dims)


def _reshaped(data: list[Dim], target: list[Dim], allowzero: bool) -> ir.Shape | None:
    """``Reshape``'s output: each target entry, ``0`` copying the data's dim there (unless
    ``allowzero``), ``-1`` what the others leave of the data's size where that is numbers."""
    dims: list[Dim] = []
    inferred = None
    for k, d in enumerate(target):
        if d == 0 and not allowzero:
            if k >= len(data):
                return None
            dims.append(data[k])
        elif d == -1:
            if inferred is not None:
                return None
            inferred = k
            dims.append(ir.SymbolicDim(None))
        else:
            dims.append(d)
    if inferred is not None:
        rest = [d for k, d in enumerate(dims) if k != inferred]
        numbers = [d for d in (*data, *rest) if isinstance(d, int)]
        if len(numbers) == len(data) + len(rest):
            total = math.prod(numbers[: len(data)])
            others = math.prod(numbers[len(data) :])
            if others and total % others == 0:
                dims[inferred] = total // others
        else:  # (names: the product of the data's dims over the others', as terms: 4*N)
            whole: Dim = 1
            for d in data:
                whole = multiply_dims(whole, d)
            known: Dim = 1
            for d in rest:
                known = multiply_dims(known, d)
            dims[inferred] = divide_dims(whole, known)
    return ir.Shape(dims)


def _unknown(d: int | ir.SymbolicDim) -> bool:
    return not isinstance(d, int) and getattr(d, "value", None) is None


def _through_casts(value: ir.Value | None) -> ir.Value | None:
    """``value`` before the Identities and Casts (CastLike included) that only retype it."""
    while value is not None:
        node = value.producer()
        if node is None or not is_default(node) or not node.inputs:
            return value
        if node.op_type not in ("Identity", "Cast", "CastLike"):
            return value
        value = node.inputs[0]
    return value


def constant_gap(
    starts: ir.Value | None,
    ends: ir.Value | None,
    constant: Callable[[ir.Value], np.ndarray | None],
) -> int | None:
    """``k`` when ``ends`` is ``starts + k`` (or ``k + starts``) for a constant scalar (or
    one-entry) ``k``, through Casts and Identities; None otherwise."""
    node = _through_casts(ends)
    producer = node.producer() if node is not None else None
    if producer is None or producer.op_type != "Add" or len(producer.inputs) != 2:
        return None
    left, right = (_through_casts(v) for v in producer.inputs)
    start = _through_casts(starts)
    for mine, other in ((left, right), (right, left)):
        if mine is not start or other is None:
            continue
        array = constant(other)
        if array is not None and array.size == 1 and array.dtype.kind in "iu":
            return int(array.reshape(-1)[0])
    return None


def vector_shape(
    node: ir.Node, inputs: list[TypeAndShape | None], entries: list[Known] | None
) -> ir.Shape | None:
    """The output shape of an op whose shape is a vector input's entries
    (``ConstantOfShape``, ``Expand``, ``Reshape``, ``Tile``), where that vector is known
    in part: a named dim there is the output's (``ConstantOfShape(Shape(x)[0:1])`` of an
    ``x: [batch, 3]`` is ``[batch]``), what is known only at run time is unknown."""
    op = node.op_type
    if entries is None or any(isinstance(e, bool) for e in entries):
        return None
    dims: list[Dim] = [e if e is not None else ir.SymbolicDim(None) for e in entries]
    data = inputs[0][1] if op != "ConstantOfShape" and inputs and inputs[0] else None
    if op == "ConstantOfShape":
        return ir.Shape(dims)
    if data is None:
        return None
    if op == "Expand":
        return _broadcast_expand(list(data), dims)
    if op == "Tile":
        if len(dims) != len(data):
            return None
        return ir.Shape(
            [
                scale_dim(d, r) if isinstance(r, int) else (r if d == 1 else ir.SymbolicDim(None))
                for d, r in zip(data, dims, strict=True)
            ]
        )
    return _reshaped(list(data), dims, bool(node.attributes.get_int("allowzero", 0)))


def slice_dims(
    node: ir.Node,
    inputs: list[TypeAndShape | None],
    shape: ir.Shape,
    vector: Callable[[int], list[Known] | None],
    most_entries: Callable[[], int | None],
) -> ir.Shape:
    """The dims of a Slice's output that onnx's inference leaves unknown when an end is
    known only in part (an entry computed at run time beside constant ones), or the
    sliced axis is a symbol: a number where the axis and the slice are numbers; the
    symbol itself for a slice from 0 to an end past any size; ``min(symbol, end)``
    (:func:`~seqpasses.core.dims.capped`) to a smaller constant end."""
    data = inputs[0][1] if inputs and inputs[0] is not None else None
    if data is None or len(data) != len(shape) or len(node.inputs) < 3:
        return shape

    starts, ends = vector(1), vector(2)
    no_axes = len(node.inputs) <= 3 or node.inputs[3] is None
    if starts is None and no_axes:
        # starts of a length known only in part: with no axes given, an axis at or past
        # its most entries is not sliced, and keeps its size
        most = most_entries()
        if most is None:
            return shape
        return ir.Shape([data[k] if k >= most and _unknown(d) else d for k, d in enumerate(shape)])
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
    if any(not isinstance(a, int) or isinstance(a, bool) or not -rank <= a < rank for a in axes):
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
        if (
            start == 0
            and not isinstance(start, bool)
            and step == 1
            and isinstance(end, ir.SymbolicDim)
            and not isinstance(dims[axis], int)
        ):
            dims[axis] = _to_named_end(data[axis], end.value or "")
            continue
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


def sequence_type(node: ir.Node, inputs: list[TypeAndShape | None]) -> ir.SequenceType | None:
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


def _to_named_end(size: Dim, end: str) -> Dim:
    """A slice from 0 to the named end ``end`` (a dim's size: never negative) of an axis of
    ``size``: the end where the axis is the same name; ``min(end, size)`` where the size is
    a number; else unknown."""
    halved = _FLOORED.match(end)
    if halved is not None and getattr(size, "value", None) == halved.group(1):
        return ir.SymbolicDim(end)  # (``x[:n // k]`` of an axis of size n)
    if not _NAME.match(end):
        return ir.SymbolicDim(None)
    if isinstance(size, int):
        return capped(end, size) if size > 0 else 0
    if getattr(size, "value", None) == end:
        return size
    return ir.SymbolicDim(None)


_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_FLOORED = re.compile(r"^floor\(([A-Za-z_][A-Za-z0-9_]*)/\d+\)$")


def constant_tensor(value: ir.Value) -> ir.TensorProtocol | None:
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

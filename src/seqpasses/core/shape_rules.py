"""Shapes of single ops from what is known of their inputs, where onnx's own inference
says less: numpy's broadcasting (onnx infers no shape for the comparisons it defines as
functions), ops shaped by a vector known in part (``ConstantOfShape``, ``Expand``,
``Reshape``, ``Tile``), and the sequence types onnx would give (a ``Slice`` whose bounds
are known in part: :mod:`seqpasses.core.slices`). Pure functions of the inputs' types and shapes: the oracle
(:mod:`seqpasses.core.shapes`) reads the values and hands them on.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import onnx_ir as ir

from seqpasses.core.arithmetic import at_least
from seqpasses.core.dims import (
    Dim,
    add_dims,
    cap_of,
    contradicts,
    divide_dims,
    fill_shape,
    multiply_dims,
    same_dim,
    scale_dim,
)
from seqpasses.core.graph import is_default
from seqpasses.core.partial import Known
from seqpasses.core.spatial import concat_dims, resized_shape

__all__ = [
    "BROADCASTING",
    "COMPARISONS",
    "ELEMENTWISE",
    "SAME_AS_INPUT",
    "SHAPED_BY_VECTOR",
    "BodyFacts",
    "TypeAndShape",
    "broadcast",
    "constant_tensor",
    "named_dims",
    "range_shape",
    "sequence_type",
    "vector_shape",
]

TypeAndShape = tuple[ir.TypeProtocol | None, ir.Shape | None]
BodyFacts = dict[ir.Value, TypeAndShape]
"""What an induction over a Loop's body proved of its values."""

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


SHAPED_BY_VECTOR = frozenset({"ConstantOfShape", "Expand", "Reshape", "Resize", "Tile"})

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
        elif not allowzero and _copies(target, k, data):
            dims.append(ir.SymbolicDim(None))  # (a run's 0 there copies the data's dim)
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
            left, right = _cancelled(list(data), rest)
            whole: Dim = 1
            for d in left:
                whole = multiply_dims(whole, d)
            known: Dim = 1
            for d in right:
                known = multiply_dims(known, d)
            dims[inferred] = divide_dims(whole, known)
    return ir.Shape(dims)


def _copies(target: list[Dim], k: int, data: list[Dim]) -> bool:
    """Whether a Reshape's named target entry ``k`` may be 0 at run time where the output then
    differs from it: without ``allowzero`` a 0 takes the data's dim there instead. Not where
    the entry is that dim, or is at least 1, or every other entry is a number above 0 (a run
    that succeeds then has no elements, and the data's dim copied is 0 too)."""
    d = target[k]
    if not isinstance(d, ir.SymbolicDim) or d.value is None or k >= len(data):
        return False
    if same_dim(d, data[k]) or at_least(d, 1):
        return False
    return not all(isinstance(e, int) and e > 0 for j, e in enumerate(target) if j != k)


def _cancelled(top: list[Dim], bottom: list[Dim]) -> tuple[list[Dim], list[Dim]]:
    """``top`` and ``bottom`` without the named dims they share (a ``view(n, -1, C, H, W)`` of
    ``[n, A*C, H, W]`` leaves ``A*C`` over ``C``)."""
    top = list(top)
    kept: list[Dim] = []
    for d in bottom:
        match = next(
            (k for k, t in enumerate(top) if not isinstance(d, int) and same_dim(d, t)), None
        )
        if match is None:
            kept.append(d)
        else:
            del top[match]
    return top, kept


def _unknown(d: int | ir.SymbolicDim) -> bool:
    return not isinstance(d, int) and getattr(d, "value", None) is None


def vector_shape(
    node: ir.Node, inputs: list[TypeAndShape | None], read: Callable[[int], list[Known] | None]
) -> ir.Shape | None:
    """The output shape of an op whose shape is a vector input's entries
    (``ConstantOfShape``, ``Expand``, ``Reshape``, ``Tile``; a ``Resize``'s sizes or scales:
    :func:`~seqpasses.core.spatial.resized_shape`), where that vector is known in part
    (``read(k)``: input ``k``'s entries): a named dim there is the output's
    (``ConstantOfShape(Shape(x)[0:1])`` of an ``x: [batch, 3]`` is ``[batch]``), what is known
    only at run time is unknown."""
    op = node.op_type
    if op == "Resize":
        return resized_shape(node, inputs[0][1] if inputs and inputs[0] else None, read)
    entries = read(0 if op == "ConstantOfShape" else 1)
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


def named_dims(
    node: ir.Node,
    inputs: list[TypeAndShape | None],
    shape: ir.Shape | None,
    vector: Callable[[int], list[Known] | None],
) -> ir.Shape | None:
    """``shape`` (onnx's inference of ``node``) with the dims it leaves unknown named where
    arithmetic on names gives them: a ``Range``'s length (``arange(n)``), a ``Concat``'s axis
    (``M+N``); ``vector(k)``: input ``k``'s entries, known in part."""
    if node.op_type == "Range":
        return range_shape(shape, [vector(k) for k in range(3)])
    if node.op_type != "Concat":
        return shape
    found = concat_dims(node, [given[1] if given is not None else None for given in inputs])
    if found is None or contradicts(shape, found):
        return shape
    return fill_shape(shape, found) or found


def range_shape(shape: ir.Shape | None, entries: list[list[Known] | None]) -> ir.Shape | None:
    """A ``Range``'s shape where its length is a name (``arange(n)`` of a dim ``n``: ``[n]``;
    from a start at or below 0 by steps of 1: ``[n+2]``), else ``shape`` as given."""
    start, limit, delta = (e[0] if e is not None and len(e) == 1 else None for e in entries)
    if (
        shape is not None
        and (len(shape) != 1 or isinstance(shape[0], int) or shape[0].value is not None)
    ) or not (
        isinstance(start, int)
        and not isinstance(start, bool)
        and start <= 0
        and isinstance(delta, int)
        and not isinstance(delta, bool)
        and delta == 1
        and isinstance(limit, ir.SymbolicDim)
        and limit.value is not None
    ):
        return shape
    return ir.Shape([limit if start == 0 else add_dims([limit, -start])])


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


def constant_tensor(value: ir.Value) -> ir.TensorProtocol | None:
    """The tensor a constant value holds (an initializer, a ``Constant`` node's ``value``):
    its shape and dtype are read without its data. None for an initializer that is also a
    graph input: the caller may feed another tensor, of another shape."""
    if value.is_graph_input():
        return None
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

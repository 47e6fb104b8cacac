"""What a small integer vector holds before run time, entry by entry: some entries known,
others only at run time.

Exporters build a ``Slice``'s ends from a run-time length and constants (tf2onnx's
``strided_slice`` with one run-time end: ``Concat(Unsqueeze(n), [0])``, clamped by ``Max``
with ``[-1e9, 1e9]``, then a ``Where`` on ``Equal``/``Less``/``And`` for negative steps), and
read dims with ``Shape``. ONNX's inference knows such a vector only when all of it is
constant; :func:`partial_vector` follows the chain and knows the entries that do not hang on a
run-time value (ONNX Runtime's symbolic inference does the same). Each entry is an int, a
bool, a named dim (``Shape(x)`` of an ``x: [batch, 3]`` is ``[batch, 3]``; sums and
multiples of names are named too: ``batch+1``, ``2*batch``), or None (known only at run
time); a vector longer than :data:`MAX_ENTRIES` or a chain deeper than :data:`MAX_DEPTH` is
not followed.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import onnx_ir as ir

from seqpasses.core.arithmetic import at_least
from seqpasses.core.dims import add_dims, floor_div, generated, multiply_dims, scale_dim
from seqpasses.core.graph import is_default

__all__ = ["MAX_DEPTH", "MAX_ENTRIES", "Known", "partial_vector"]

Known = int | bool | ir.SymbolicDim | None
"""An entry of a vector known in part: a number, a boolean, a named dim, or None (known only
at run time)."""
MAX_ENTRIES = 16
MAX_DEPTH = 24

Constant = Callable[[ir.Value], np.ndarray | None]


def partial_vector(
    value: ir.Value, constant: Constant, shape: Callable[[ir.Value], ir.Shape | None]
) -> list[Known] | None:
    """The entries of ``value``, a scalar or a vector of at most :data:`MAX_ENTRIES` ints or
    bools (a scalar as one entry), each known or None; None when not even its length is known.
    ``constant`` gives what a value holds before run time, ``shape`` a value's shape."""
    return _vector(value, constant, shape, MAX_DEPTH)


def _entries(array: np.ndarray) -> list[Known] | None:
    if array.ndim > 1 or array.size > MAX_ENTRIES:
        return None
    if array.dtype == np.bool_:
        return [bool(x) for x in array.reshape(-1)]
    if np.issubdtype(array.dtype, np.integer):
        return [int(x) for x in array.reshape(-1)]
    if np.issubdtype(array.dtype, np.floating):
        flat = array.reshape(-1)
        if all(float(x).is_integer() for x in flat):
            return [int(x) for x in flat]
    return None


def _length(value: ir.Value, shape: Callable[[ir.Value], ir.Shape | None]) -> int | None:
    dims = shape(value)
    if dims is None or len(dims) > 1:
        return None
    if len(dims) == 0:
        return 1
    return dims[0] if isinstance(dims[0], int) and dims[0] <= MAX_ENTRIES else None


def _vector(
    value: ir.Value,
    constant: Constant,
    shape: Callable[[ir.Value], ir.Shape | None],
    depth: int,
) -> list[Known] | None:
    array = constant(value)
    if array is not None:
        return _entries(np.asarray(array))
    length = _length(value, shape)
    unknown: list[Known] | None = None if length is None else [None] * length
    node = value.producer()
    if depth <= 0 or node is None or not is_default(node):
        return unknown
    found = _node_vector(node, value, constant, shape, depth - 1)
    if found is None or (length is not None and len(found) != length):
        return unknown
    return found


def _node_vector(
    node: ir.Node,
    value: ir.Value,
    constant: Constant,
    shape: Callable[[ir.Value], ir.Shape | None],
    depth: int,
) -> list[Known] | None:
    op = node.op_type
    inputs = list(node.inputs)

    def read(k: int) -> list[Known] | None:
        if k >= len(inputs) or inputs[k] is None:
            return None
        return _vector(inputs[k], constant, shape, depth)  # type: ignore[arg-type]

    if op == "Shape" and inputs and inputs[0] is not None and len(node.outputs) == 1:
        dims = shape(inputs[0])
        if dims is None or len(dims) > MAX_ENTRIES:
            return None
        rank = len(dims)
        start = node.attributes.get_int("start", 0)
        end = node.attributes.get_int("end", rank)
        start, end = (max(0, min(rank, k + rank if k < 0 else k)) for k in (start, end))
        return [_named(d) for d in list(dims)[start:end]]
    if op == "Gather" and len(inputs) == 2 and node.attributes.get_int("axis", 0) == 0:
        found, index = read(0), inputs[1]
        picks = constant(index) if index is not None else None
        if found is None or picks is None or np.asarray(picks).ndim > 1:
            return None
        out: list[Known] = []
        for k in np.asarray(picks).reshape(-1).tolist():
            if not isinstance(k, int) or not -len(found) <= k < len(found):
                return None
            out.append(found[k])
        return out
    if op == "Slice" and len(inputs) >= 3:
        found = read(0)
        bounds = [constant(v) if v is not None else None for v in inputs[1:5]]
        if found is None or any(b is None for b in bounds[:2]):
            return None
        limits = [[int(x) for x in np.asarray(b).reshape(-1)] for b in bounds if b is not None]
        if any(len(p) != 1 for p in limits) or (len(limits) > 2 and limits[2][0] not in (0, -1)):
            return None
        step = limits[3][0] if len(limits) > 3 else 1
        if step == 0:
            return None
        return found[slice(limits[0][0], limits[1][0], step)]
    if op in ("Identity", "Unsqueeze", "Squeeze", "Reshape") and value is node.outputs[0]:
        found = read(0)
        if found is not None and op == "Reshape" and len(found) > 1:  # (a vector as a vector)
            return found if read(1) in ([-1], [len(found)]) else None
        return found if op == "Identity" or (found is not None and len(found) == 1) else None
    if op == "Cast":
        found = read(0)
        to = node.attributes.get_int("to", 0)
        if found is None:
            return None
        try:
            target = ir.DataType(to)
            kind = target.numpy()
        except Exception:
            return None
        if not (target == ir.DataType.BOOL or target.is_integer() or target.is_floating_point()):
            return None
        named = [x for x in found if isinstance(x, ir.SymbolicDim)]
        if named and not (target.is_integer() or target.is_floating_point()):
            return None
        # (numpy's conversion: what the cast does to large numbers, float32's rounding; a
        # named dim stays itself: a size, which an integer or a float holds)
        with np.errstate(all="ignore"):
            cast = [
                None if x is None or isinstance(x, ir.SymbolicDim) else np.asarray(x).astype(kind)
                for x in found
            ]
        if named:
            return [
                x if isinstance(x, ir.SymbolicDim) else (None if c is None else int(c))
                for x, c in zip(found, cast, strict=True)
            ]
        if target == ir.DataType.BOOL:
            return [None if x is None else bool(x) for x in cast]
        if any(x is not None and not np.isfinite(x) for x in cast):
            return None
        return [None if x is None else int(x) for x in cast]
    if op == "ConstantOfShape" and len(inputs) == 1:
        return _filled(node, read(0))
    if op == "Concat":
        parts = [read(k) for k in range(len(inputs))]
        if any(p is None for p in parts):
            return None
        return [x for p in parts for x in p]  # type: ignore[union-attr]
    if op == "Where" and len(inputs) == 3:
        cond, a, b = read(0), read(1), read(2)
        if cond is None or a is None or b is None:
            return None
        width = max(len(cond), len(a), len(b))
        if any(len(p) not in (1, width) for p in (cond, a, b)):
            return None
        c, a, b = (p * width if len(p) == 1 else p for p in (cond, a, b))
        return [
            (x if k else y) if k is not None else (x if x is not None and x == y else None)
            for k, x, y in zip(c, a, b, strict=True)
        ]
    if op == "Not":
        found = read(0)
        return None if found is None else [None if x is None else not x for x in found]
    binary = _BINARY.get(op)
    if binary is not None and len(inputs) == 2:
        a, b = read(0), read(1)
        if a is None or b is None or (len(a) != len(b) and 1 not in (len(a), len(b))):
            return None
        width = max(len(a), len(b))
        a, b = (p * width if len(p) == 1 else p for p in (a, b))
        return [binary(x, y) for x, y in zip(a, b, strict=True)]
    return None


def _filled(node: ir.Node, dims: list[Known] | None) -> list[Known] | None:
    """A ``ConstantOfShape`` of one known length: that many copies of its value (exporters
    write ``repeat(1, n)``'s ones this way, read by an ``Expand`` or a ``Tile``)."""
    if dims is None or len(dims) != 1 or not isinstance(dims[0], int):
        return None
    if isinstance(dims[0], bool) or not 0 <= dims[0] <= MAX_ENTRIES:
        return None
    attribute = node.attributes.get("value")
    if attribute is None:
        fill: list[Known] | None = [0]  # (the default: a float 0)
    else:
        tensor = attribute.as_tensor()
        if tensor.size != 1:
            return None
        fill = _entries(tensor.numpy().reshape(-1))
    return None if fill is None else fill * dims[0]


_WRAPS = 2**31
"""Sums and products at least this large are not claimed: the vector's integer type (int32 or
int64, not tracked) may wrap them at run time."""


def _named(dim: object) -> Known:
    """A dim as a vector's entry: a number, a name a user or a model gave, else None."""
    if isinstance(dim, int):
        return dim
    if isinstance(dim, ir.SymbolicDim) and dim.value and not generated(dim):
        return dim
    return None


def _symbolic(op: str) -> Callable[[Known, Known], Known]:
    """What ``op`` makes of a named dim and a number (or two names): a name (``n+1``,
    ``2*n``), or a truth where the two are the same name; else None."""

    def apply(x: Known, y: Known) -> Known:
        if isinstance(x, bool) or isinstance(y, bool):
            return None
        if op == "Add":
            return _name(add_dims([x, y]))  # type: ignore[list-item]
        if op == "Sub" and isinstance(y, int):
            return _name(add_dims([x, -y]))  # type: ignore[list-item]
        if op == "Mul" and isinstance(y, int):
            return _name(scale_dim(x, y))  # type: ignore[arg-type]
        if op == "Mul" and isinstance(x, int):
            return _name(scale_dim(y, x))  # type: ignore[arg-type]
        if op == "Mul":
            return _name(multiply_dims(x, y))  # type: ignore[arg-type]  # (B*S)
        if op == "Div" and isinstance(y, int) and y > 0 and _plain_name(x):
            return _name(floor_div(x, y))  # type: ignore[arg-type]  # (a dim: never negative)
        if op in _FLIPPED and (isinstance(x, int) or isinstance(y, int)):
            return _ordered(op, x, y)
        same = isinstance(x, ir.SymbolicDim) and isinstance(y, ir.SymbolicDim)
        same = same and x.value == y.value  # type: ignore[union-attr]
        if same and op in ("Equal", "LessOrEqual", "GreaterOrEqual"):
            return True
        if same and op in ("Less", "Greater"):
            return False
        if same and op in ("Max", "Min"):
            return x
        return None

    return apply


_FLIPPED = {
    "Equal": "Equal",
    "Less": "Greater",
    "Greater": "Less",
    "LessOrEqual": "GreaterOrEqual",
    "GreaterOrEqual": "LessOrEqual",
}


def _ordered(op: str, x: Known, y: Known) -> Known:
    """A comparison of a named dim and a number the dim is sure to pass (a size is never
    negative, ``T+2`` never below 2): ``Equal(batch, -1)`` is False; else None."""
    if isinstance(x, int):  # (the number on the right)
        x, y, op = y, x, _FLIPPED[op]
    if not isinstance(x, ir.SymbolicDim) or not isinstance(y, int) or isinstance(y, bool):
        return None
    if not at_least(x, y + 1):  # (the dim is above the number: settles each comparison)
        return None
    return op in ("Greater", "GreaterOrEqual")


def _plain_name(dim: Known) -> bool:
    """Whether ``dim`` is a dim's own name (a size: never negative), not arithmetic on it."""
    text = getattr(dim, "value", None)
    return isinstance(text, str) and text.isidentifier()


def _truncated(x: int, y: int) -> Known:
    """Integer Div as ONNX does it: rounded toward zero (None for a zero divisor)."""
    if y == 0:
        return None
    quotient = abs(x) // abs(y)
    return quotient if (x >= 0) == (y > 0) else -quotient


def _name(dim: object) -> Known:
    """A dim arithmetic made, as an entry (an unknown one is None)."""
    if isinstance(dim, int):
        return dim
    return dim if isinstance(dim, ir.SymbolicDim) and dim.value else None


def _known(fn: Callable[[int, int], Known], wraps: bool = False) -> Callable[[Known, Known], Known]:
    symbolic = _symbolic(getattr(fn, "op", ""))

    def apply(x: Known, y: Known) -> Known:
        if x is None or y is None:
            return None
        if isinstance(x, ir.SymbolicDim) or isinstance(y, ir.SymbolicDim):
            return symbolic(x, y)
        found = fn(x, y)
        return None if wraps and isinstance(found, int) and abs(found) >= _WRAPS else found

    return apply


def _and(x: Known, y: Known) -> Known:
    if x is False or y is False:
        return False
    return None if x is None or y is None else bool(x and y)


def _or(x: Known, y: Known) -> Known:
    if x is True or y is True:
        return True
    return None if x is None or y is None else bool(x or y)


def _op(name: str, fn: Callable[[int, int], Known]) -> Callable[[int, int], Known]:
    fn.op = name  # type: ignore[attr-defined]
    return fn


_BINARY: dict[str, Callable[[Known, Known], Known]] = {
    "Add": _known(_op("Add", lambda x, y: x + y), wraps=True),
    "Sub": _known(_op("Sub", lambda x, y: x - y), wraps=True),
    "Mul": _known(_op("Mul", lambda x, y: x * y), wraps=True),
    "Div": _known(_op("Div", _truncated)),
    "Max": _known(_op("Max", lambda x, y: max(x, y))),
    "Min": _known(_op("Min", lambda x, y: min(x, y))),
    "Equal": _known(_op("Equal", lambda x, y: x == y)),
    "Less": _known(_op("Less", lambda x, y: x < y)),
    "Greater": _known(_op("Greater", lambda x, y: x > y)),
    "LessOrEqual": _known(_op("LessOrEqual", lambda x, y: x <= y)),
    "GreaterOrEqual": _known(_op("GreaterOrEqual", lambda x, y: x >= y)),
    "And": _and,
    "Or": _or,
}

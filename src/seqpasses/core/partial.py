"""What a small integer vector holds before run time, entry by entry: some entries known,
others only at run time.

Exporters build a ``Slice``'s ends from a run-time length and constants (tf2onnx's
``strided_slice`` with one run-time end: ``Concat(Unsqueeze(n), [0])``, clamped by ``Max``
with ``[-1e9, 1e9]``, then a ``Where`` on ``Equal``/``Less``/``And`` for negative steps), and
read dims with ``Shape``. ONNX's inference knows such a vector only when all of it is
constant; :func:`partial_vector` follows the chain and knows the entries that do not hang on a
run-time value (ONNX Runtime's symbolic inference does the same). Each entry is an int, a
bool, or None (known only at run time); a vector longer than :data:`MAX_ENTRIES` or a chain
deeper than :data:`MAX_DEPTH` is not followed.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import onnx_ir as ir

from seqpasses.core.graph import is_default

__all__ = ["MAX_DEPTH", "MAX_ENTRIES", "Known", "partial_vector"]

Known = int | bool | None
"""An entry of a vector known in part: a number, a boolean, or None (known only at run time)."""
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
        return [d if isinstance(d, int) else None for d in list(dims)[start:end]]
    if op in ("Identity", "Unsqueeze", "Squeeze", "Reshape") and value is node.outputs[0]:
        found = read(0)
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
        # (numpy's conversion: what the cast does to large numbers, float32's rounding)
        with np.errstate(all="ignore"):
            cast = [None if x is None else np.asarray(x).astype(kind) for x in found]
        if target == ir.DataType.BOOL:
            return [None if x is None else bool(x) for x in cast]
        if any(x is not None and not np.isfinite(x) for x in cast):
            return None
        return [None if x is None else int(x) for x in cast]
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


_WRAPS = 2**31
"""Sums and products at least this large are not claimed: the vector's integer type (int32 or
int64, not tracked) may wrap them at run time."""


def _known(fn: Callable[[int, int], Known], wraps: bool = False) -> Callable[[Known, Known], Known]:
    def apply(x: Known, y: Known) -> Known:
        if x is None or y is None:
            return None
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


_BINARY: dict[str, Callable[[Known, Known], Known]] = {
    "Add": _known(lambda x, y: x + y, wraps=True),
    "Sub": _known(lambda x, y: x - y, wraps=True),
    "Mul": _known(lambda x, y: x * y, wraps=True),
    "Max": _known(max),
    "Min": _known(min),
    "Equal": _known(lambda x, y: x == y),
    "Less": _known(lambda x, y: x < y),
    "Greater": _known(lambda x, y: x > y),
    "LessOrEqual": _known(lambda x, y: x <= y),
    "GreaterOrEqual": _known(lambda x, y: x >= y),
    "And": _and,
    "Or": _or,
}

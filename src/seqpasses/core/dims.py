"""Dims and shapes: what a dim says (a number, a name, a made-up name, nothing), filling,
merging and comparing shapes, and the shapes of concatenations. The arithmetic on dims
(sums, products, floor division, in one canonical spelling) is :mod:`seqpasses.core.arithmetic`,
whose names this module gives too."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TypeGuard

import onnx
import onnx_ir as ir

from seqpasses.core.arithmetic import (
    INT64_MAX,
    Dim,
    add_dims,
    bounded,
    divide_dims,
    floor_div,
    multiply_dims,
    scale_dim,
)

__all__ = [
    "INT64_MAX",
    "Dim",
    "add_dims",
    "bounded",
    "cap_of",
    "capped",
    "claimed_shape",
    "concat_dims",
    "concat_shape",
    "contradicts",
    "dim_of",
    "dims_of",
    "divide_dims",
    "fill_shape",
    "floor_div",
    "generated",
    "merge_form",
    "merge_shapes",
    "multiply_dims",
    "named_only",
    "same_dim",
    "same_shape",
    "scale_dim",
    "shape_dims",
    "shape_text",
    "unknown",
]


def dim_of(dim: object) -> Dim:
    """Normalize whatever an ``ir.Shape`` yields into a :data:`Dim`."""
    if isinstance(dim, int):
        return dim
    if isinstance(dim, ir.SymbolicDim):
        return dim
    return ir.SymbolicDim(None)


_GENERATED = re.compile(r"^unk__\d+$|_dim_\d+$")
"""Dim names tools make up for a dim they know nothing of: ONNX's ``unk__N``, and the
TorchScript exporter's ``<op><n>_dim_<k>``."""


def _symbolic(dim: object) -> TypeGuard[ir.SymbolicDim]:
    """Whether ``dim`` is a symbolic dim; an int is ruled out first (a failed isinstance of an
    onnx_ir class, a runtime protocol, costs 1 µs)."""
    return not isinstance(dim, int) and isinstance(dim, ir.SymbolicDim)


def generated(dim: object) -> bool:
    """A dim named by a tool that knew nothing of it (ONNX's ``unk__N``, an exporter's
    ``<op><n>_dim_<k>``): a name that says nothing."""
    return _symbolic(dim) and bool(dim.value) and _GENERATED.search(dim.value or "") is not None


def unknown(dim: object) -> bool:
    """No size and no user-given name (generated names such as ``unk__N`` say nothing)."""
    return _symbolic(dim) and (dim.value is None or _GENERATED.search(dim.value) is not None)


def fill_shape(
    declared: ir.Shape | None, inferred: ir.Shape | None, *, numbers_win: bool = False
) -> ir.Shape | None:
    """``declared`` with its unknown dims taken from ``inferred``; a known number is never changed.

    With ``numbers_win`` an inferred number also replaces a declared symbolic name.
    """
    if declared is None:
        return inferred
    if inferred is None or len(declared) != len(inferred):
        return declared
    dims: list[int | ir.SymbolicDim] = []
    for d, i in zip(declared, inferred, strict=True):
        if isinstance(d, int):  # (a known number is never changed)
            dims.append(d)
            continue
        take = unknown(d) or (numbers_win and isinstance(i, int))
        dims.append(i if take and isinstance(i, int | ir.SymbolicDim) else d)
    return ir.Shape(dims)


def contradicts(declared: ir.Shape | None, inferred: ir.Shape | None) -> bool:
    """Whether two known shapes cannot describe the same value (rank or a number differs)."""
    if declared is None or inferred is None:
        return False
    if len(declared) != len(inferred):
        return True
    return any(
        isinstance(d, int) and isinstance(i, int) and d != i
        for d, i in zip(declared, inferred, strict=True)
    )


def same_dim(a: object, b: object) -> bool:
    """Whether two dims are provably equal: the same number, or the same symbolic name."""
    if isinstance(a, int) or isinstance(b, int):
        return a == b
    name = getattr(a, "value", None)
    return bool(name) and name == getattr(b, "value", None)


def same_shape(a: ir.Shape | None, b: ir.Shape | None) -> bool:
    """Whether two shapes are provably equal, dim by dim (unknown dims never are)."""
    if a is None or b is None or len(a) != len(b):
        return False
    return all(same_dim(x, y) for x, y in zip(a, b, strict=True))


def merge_shapes(shapes: list[ir.Shape | None]) -> ir.Shape | None:
    """The shape every one of ``shapes`` fits: their dims where all agree, unknown where they
    differ; None when a rank is unknown or the ranks differ."""
    known = [s for s in shapes if s is not None]
    if not shapes or len(known) != len(shapes) or len({len(s) for s in known}) != 1:
        return None
    dims: list[int | ir.SymbolicDim] = []
    for column in zip(*[list(s) for s in known], strict=True):
        first = column[0]
        same = all(same_dim(d, first) for d in column)
        dims.append(first if same else ir.SymbolicDim(None))
    return ir.Shape(dims)


def shape_text(shape: ir.Shape | None) -> str:
    """``[2,N,3]``, or ``?`` for an unknown shape."""
    if shape is None:
        return "?"
    return "[" + ",".join("?" if getattr(d, "value", 0) is None else str(d) for d in shape) + "]"


_CAPPED = re.compile(r"^min\(([^(),]+),(\d+)\)$")


def capped(name: str, cap: int) -> ir.SymbolicDim:
    """The dim ``min(name, cap)``: a slice to a constant end of an axis whose size is the
    symbol ``name`` (tf2onnx ends an open slice at 10^9)."""
    return ir.SymbolicDim(f"min({name},{cap})")


def cap_of(dim: object) -> tuple[str, int] | None:
    """``(name, cap)`` of a :func:`capped` dim; None for any other dim."""
    text = getattr(dim, "value", None)
    found = _CAPPED.match(text) if isinstance(text, str) else None
    return (found.group(1), int(found.group(2))) if found else None


def claimed_shape(type_proto: onnx.TypeProto | None) -> ir.Shape | None:
    """The shape a ``TypeProto`` claims (onnx's inference, a declaration), its made-up dim names
    (``unk__N``) read as unknown."""
    if type_proto is None or type_proto.WhichOneof("value") is None:
        return None
    return named_only(ir.serde.deserialize_type_proto_for_shape(type_proto))


def named_only(shape: ir.Shape | None) -> ir.Shape | None:
    """``shape`` with the dim names tools made up (``unk__N``) read as unknown."""
    if shape is None or not any(generated(d) for d in shape):
        return shape
    return ir.Shape([ir.SymbolicDim(None) if generated(d) else d for d in shape])


def shape_dims(value: ir.Value) -> list[Dim] | None:
    return dims_of(value.shape)


def dims_of(shape: ir.Shape | None) -> list[Dim] | None:
    """``shape``'s dims (a number, or a symbolic dim), None for an unknown shape."""
    return None if shape is None else [dim_of(d) for d in shape]


def merge_form(dims: Sequence[Dim], axis: int, first_positive: bool, opset: int) -> str | None:
    """How :meth:`Emitter.merge_axes` writes its ``Reshape``, or None where no target is right
    for every size. A ``-1`` cannot be inferred when the other dims multiply to 0, and before
    opset 14 (no ``allowzero``) a ``0`` in the target copies the input's dim at that place:

    - ``infer``: ``[0, ..., -1, tail]`` when every dim but the two merged is a known positive
      number (the -1 is then always inferred);
    - ``one-before`` / ``one-after``: a target of the same rank with a 1 beside the merged dim
      (then squeezed): right when dim ``axis`` is at least 1 (``first_positive``), or when dim
      ``axis + 1`` is a known positive number;
    - ``exact``: from opset 14, the target's every dim, with ``allowzero=1``.
    """

    def positive(d: Dim) -> bool:
        return isinstance(d, int) and d > 0

    if all(positive(d) for k, d in enumerate(dims) if k not in (axis, axis + 1)):
        return "infer"
    if first_positive:
        return "one-before"
    if positive(dims[axis + 1]):
        return "one-after"
    return "exact" if opset >= 14 else None


def concat_shape(inputs: Sequence[ir.Value], axis: int) -> ir.Shape | None:
    """Concat's output shape: the axis dims summed, the others taken from any input that knows them."""
    return concat_dims([shape_dims(v) for v in inputs], axis)


def concat_dims(shapes: Sequence[list[Dim] | None], axis: int) -> ir.Shape | None:
    """:func:`concat_shape` of inputs of the dims given (None: a rank not known)."""
    if any(s is None for s in shapes):
        return None
    known = [s for s in shapes if s is not None]
    rank = len(known[0])
    if any(len(s) != rank for s in known) or not 0 <= axis < rank:
        return None
    dims: list[Dim] = []
    for i in range(rank):
        if i == axis:
            dims.append(add_dims([s[i] for s in known]))
            continue
        ints = {s[i] for s in known if isinstance(s[i], int)}
        if len(ints) > 1:
            return None  # the inputs disagree: Concat fails at run time, so claim no shape
        if ints:
            dims.append(ints.pop())
            continue
        column = [s[i] for s in known]
        named = [d for d in column if isinstance(d, ir.SymbolicDim) and d.value is not None]
        dims.append(named[0] if named else ir.SymbolicDim(None))
    return ir.Shape(dims)

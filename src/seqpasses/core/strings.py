"""Strings in the forms ONNX Runtime computes right.

ONNX Runtime 1.32's ``Gather`` of string rows copies the first string of each row and leaves
the rest empty (on any axis but the last); its ``GatherND`` does not. (Its Loop scan outputs
of strings keep only the first iteration's: :mod:`seqpasses.transfer.loops.scan` makes
none.) Every other op seqpasses writes was checked on strings against onnx.reference.
"""

from __future__ import annotations

from typing import Any, Protocol

import onnx_ir as ir

from seqpasses.core.dims import dims_of

__all__ = ["string_gather"]


class Emits(Protocol):
    """What :func:`string_gather` asks of an emitter (:class:`seqpasses.core.emit.Emitter`)."""

    def op(self, op_type: str, inputs: list[ir.Value], **attributes: Any) -> ir.Value: ...

    def unsqueeze(self, x: ir.Value, axis: int) -> ir.Value: ...

    def type_of(self, x: ir.Value) -> ir.TypeProtocol | None: ...

    def seen(self, x: ir.Value) -> tuple[ir.TypeProtocol | None, ir.Shape | None]: ...


def string_gather(
    emit: Emits, data: ir.Value | None, index: ir.Value | None, axis: object
) -> ir.Value | None:
    """``Gather(data, index, axis)`` of strings as ``GatherND(x', Unsqueeze(index, -1))``,
    the axis moved first in ``x'`` and the gathered dims moved back after; None where a
    plain Gather is right (the last axis gathers single strings) or no form can be written
    (an unknown rank: --check finds what ONNX Runtime gets wrong)."""
    assert data is not None and index is not None and isinstance(axis, int)
    dims, picked = dims_of(emit.seen(data)[1]), dims_of(emit.seen(index)[1])
    rank = len(dims) if dims is not None else None
    k = axis + rank if axis < 0 and rank is not None else axis
    if k != 0 and (rank is None or picked is None or k == rank - 1):
        return None
    moved = data
    if k != 0:
        assert rank is not None
        perm = [k, *range(k), *range(k + 1, rank)]
        moved = emit.op("Transpose", [data], type=emit.type_of(data), perm=perm)
    out = emit.op("GatherND", [moved, emit.unsqueeze(index, -1)], type=emit.type_of(data))
    if k != 0:
        assert rank is not None and picked is not None
        q = len(picked)
        back = [*range(q, q + k), *range(q), *range(q + k, q + rank - 1)]
        out = emit.op("Transpose", [out], type=emit.type_of(data), perm=back)
    return out

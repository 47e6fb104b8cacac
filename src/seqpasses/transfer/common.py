"""Small pieces several transfer families share."""

from __future__ import annotations

from collections.abc import Iterable

import onnx_ir as ir

from seqpasses.core.graph import label
from seqpasses.walk.context import Context
from seqpasses.walk.facts import Reason

__all__ = ["concat_new_axis", "follows_ort", "position", "stable"]


def position(ctx: Context, node: ir.Node, index: int) -> tuple[int | None, Reason | None]:
    """The constant position input ``index`` holds (None, None when it is absent)."""
    if len(node.inputs) <= index or node.inputs[index] is None:
        return None, None
    value = node.inputs[index]
    assert value is not None
    return ctx.const_int(value)


def concat_new_axis(ctx: Context, node: ir.Node) -> int | None:
    """ConcatFromSequence's ``new_axis`` (0 or 1); None after leaving a node with another value
    (invalid; ONNX Runtime stacks anyway: no lowering is faithful)."""
    new_axis = node.attributes.get_int("new_axis", 0)
    if new_axis not in (0, 1):
        ctx.facts.leave(
            node, Reason("invalid", f"new_axis {new_axis} is not 0 or 1 (the spec allows no other)")
        )
        return None
    return new_axis


def follows_ort(ctx: Context, node: ir.Node, values: Iterable[ir.Value], what: str) -> None:
    """Record a rewrite that squeezed chunks of one of a scalar split with ``keepdims=0`` as
    ONNX Runtime does: a report note, and the values whose declared shapes may follow the spec
    instead."""
    ctx.edits.note(
        f"{label(node)}: {what} (scalar split with keepdims=0 into chunks of one: follows ONNX "
        "Runtime/PyTorch; --strict-spec keeps the axis)"
    )
    ctx.edits.diverged.extend(values)


def stable(ctx: Context, shape: ir.Shape | None) -> bool:
    """Whether ``shape`` is the same wherever it is met: numbers and the inputs' dim names."""
    if shape is None:
        return False
    return all(
        isinstance(d, int)
        or (
            isinstance(d, ir.SymbolicDim)
            and d.value is not None
            and d.value in ctx.facts.input_dims
        )
        for d in shape
    )

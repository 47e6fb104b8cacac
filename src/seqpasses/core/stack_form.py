"""The stack form: ``k`` tensors of one shape ``E`` stacked on ``axis`` (``axis < rank``).

``Concat(Unsqueeze(t_i, axis), axis)`` is ``k + 1`` nodes; ``Reshape(Concat(t_i, axis),
[*E[:axis], k, *E[axis:]])`` is two, and the same tensor (the Concat lays each ``t_i``'s
block along ``axis`` in order; the Reshape splits that axis into ``k`` blocks). ONNX Runtime
pays for each node of a small model, so emitters write the second where every dim of ``E``
is a positive number (the target is then literal: no ``-1`` to infer, no ``0`` to copy).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import onnx_ir as ir

from seqpasses.core.dims import Dim

__all__ = ["stack_sources"]


def stack_sources(
    inputs: Sequence[ir.Value], axis: int, dims: Callable[[ir.Value], list[Dim] | None]
) -> tuple[list[ir.Value], list[int]] | None:
    """The tensors a ``Concat`` of ``inputs`` on ``axis`` stacks, and their shape, when each
    input is one of them unsqueezed on ``axis`` or a stack in this form of several, and
    ``dims`` (what is known of a value's shape) gives them all one shape of positive numbers;
    None otherwise."""
    if len(inputs) < 2 or axis < 0:
        return None
    sources: list[ir.Value] = []
    for value in inputs:
        found = _unsqueezed(value, axis)
        parts = [found] if found is not None else _restacked(value, axis)
        if not parts:
            return None
        sources.extend(parts)
    first = dims(sources[0])
    if first is None or not axis < len(first):
        return None
    element = [d for d in first if isinstance(d, int) and d > 0]
    if len(element) != len(first) or any(dims(s) != first for s in sources[1:]):
        return None
    return sources, element


def _unsqueezed(value: ir.Value, axis: int) -> ir.Value | None:
    """What ``value`` is ``Unsqueeze``d from, when on ``axis`` alone (None otherwise)."""
    node = value.producer()
    if node is None or node.op_type != "Unsqueeze" or node.domain not in ("", "ai.onnx"):
        return None
    axes: list[int] | None = None
    if len(node.inputs) > 1:
        given = node.inputs[1].const_value if node.inputs[1] is not None else None
        axes = given.numpy().reshape(-1).tolist() if given is not None else None
    elif (attr := node.attributes.get("axes")) is not None:
        axes = list(attr.as_ints())
    return node.inputs[0] if axes == [axis] else None


def _restacked(value: ir.Value, axis: int) -> list[ir.Value]:
    """The tensors ``value`` stacks on ``axis``, when it is ``Reshape(Concat(tensors))`` in
    the stack form (the target puts their count at ``axis``); [] otherwise."""
    reshape = value.producer()
    if reshape is None or reshape.op_type != "Reshape" or len(reshape.inputs) != 2:
        return []
    flat, target = reshape.inputs
    concat = flat.producer() if flat is not None else None
    if concat is None or concat.op_type != "Concat" or target is None:
        return []
    attr = concat.attributes.get("axis")
    parts = [v for v in concat.inputs if v is not None]
    shape = parts[0].shape if parts else None
    if attr is None or attr.value != axis or target.const_value is None or shape is None:
        return []
    wanted = [*shape[:axis], len(parts), *shape[axis:]]
    if target.const_value.numpy().reshape(-1).tolist() != wanted:
        return []
    return parts if all(p.shape == shape for p in parts) else []

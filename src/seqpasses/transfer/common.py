"""Small pieces several transfer families share."""

from __future__ import annotations

import re
from collections.abc import Container

import onnx_ir as ir

from seqpasses.core.dims import cap_of, same_shape
from seqpasses.core.graph import is_default, is_hold, label
from seqpasses.core.ops import ORT_SPLIT_TO_SEQUENCE_TYPES
from seqpasses.walk.context import Context
from seqpasses.walk.facts import Reason

__all__ = ["concat_new_axis", "follows_ort", "position", "stable", "written_back_unloadable"]


def position(ctx: Context, node: ir.Node, index: int) -> tuple[int | None, Reason | None]:
    """The constant position input ``index`` holds (None, None when it is absent)."""
    if len(node.inputs) <= index or node.inputs[index] is None:
        return None, None
    value = node.inputs[index]
    assert value is not None
    return ctx.const_int(value)


def concat_new_axis(node: ir.Node) -> int | Reason:
    """ConcatFromSequence's ``new_axis`` (0 or 1), or why the node stays: another value is
    invalid (ONNX Runtime stacks anyway: no lowering is faithful)."""
    new_axis = node.attributes.get_int("new_axis", 0)
    if new_axis not in (0, 1):
        return Reason("invalid", f"new_axis {new_axis} is not 0 or 1 (the spec allows no other)")
    return new_axis


def follows_ort(node: ir.Node, what: str) -> str:
    """The report's note on a rewrite that squeezed chunks of one of a scalar split with
    ``keepdims=0`` as ONNX Runtime does (the outcome also names the values whose declared
    shapes may follow the spec instead: its ``diverged``)."""
    return (
        f"{label(node)}: {what} (scalar split with keepdims=0 into chunks of one: follows ONNX "
        "Runtime/PyTorch; --strict-spec keeps the axis)"
    )


_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.:]*")
_FUNCTIONS = frozenset({"min", "max", "floor", "ceil"})


def stable(ctx: Context, shape: ir.Shape | None) -> bool:
    """Whether ``shape`` is the same wherever it is met: numbers, the inputs' dim names, such
    a name capped by a number (:func:`~seqpasses.core.dims.capped`), and arithmetic on those
    names alone (``H3*W3+H4*W4``: sizes the inputs decide)."""
    if shape is None:
        return False
    inputs = ctx.facts.input_dims
    return all(
        isinstance(d, int)
        or (
            isinstance(d, ir.SymbolicDim)
            and d.value is not None
            and (
                d.value in inputs
                or (cap_of(d) or ("", 0))[0] in inputs
                or _of_inputs(d.value, inputs)
            )
        )
        for d in shape
    )


def _of_inputs(text: str, inputs: Container[str]) -> bool:
    """Whether ``text`` is arithmetic on the inputs' dim names only (each name it spells one
    of them, or a function the arithmetic writes: ``floor((H-1)/2)+1``, ``min(N,128)``)."""
    names = [m.group(0) for m in _NAME.finditer(text)]
    return bool(names) and all(n in inputs or n in _FUNCTIONS for n in names)


_TERMINAL = frozenset({"SequenceAt", "SequenceLength", "ConcatFromSequence"})


def written_back_unloadable(value: ir.Value, dtype: ir.DataType | None, element: ir.Shape) -> bool:
    """Whether ``value``, a list about to be held as one tensor ``[n, *element]`` in place of
    the list a node rebuilt in its place made, may have to be written back as a sequence, and
    is of a type ONNX Runtime's SplitToSequence has no kernel for: then it is not held so (its
    length is known only at run time: no other write-back is faithful). It may when it (or a
    list made of it by inserting an element of its kind, erasing, Identity) is a graph output
    or read by anything but SequenceAt, SequenceLength and ConcatFromSequence."""
    if dtype in ORT_SPLIT_TO_SEQUENCE_TYPES:
        return False
    work, seen = [value], {value}
    dead: dict[ir.Node, bool] = {}
    while work:
        current = work.pop()
        if current.is_graph_output():
            return True
        for use in current.uses():
            node = use.node
            if is_hold(node):
                return True  # (what inlined copies return: a graph output in all but name)
            if _dead(node, dead, 0):
                continue  # (what nothing reads needs nothing written back)
            if not is_default(node) or use.idx != 0:
                return True
            if node.op_type in _TERMINAL:
                continue
            tensor = node.inputs[1] if len(node.inputs) > 1 else None
            kept = node.op_type in ("SequenceErase", "Identity") or (
                node.op_type == "SequenceInsert"
                and tensor is not None
                and tensor.dtype == dtype
                and same_shape(tensor.shape, element)
            )
            if not kept:
                return True
            if node.outputs[0] not in seen:
                seen.add(node.outputs[0])
                work.append(node.outputs[0])
    return False


def _dead(node: ir.Node, memo: dict[ir.Node, bool], depth: int) -> bool:
    """Whether nothing ``node`` makes reaches a graph output (dead code, removed later); a node
    read from a subgraph, or too far down, counts as live."""
    if node in memo:
        return memo[node]
    if depth > 32:
        return False
    memo[node] = False  # (a cycle is no proof of death)
    result = True
    for out in node.outputs:
        if out.is_graph_output():
            result = False
            break
        for use in out.uses():
            if use.node.graph is not node.graph or not _dead(use.node, memo, depth + 1):
                result = False
                break
        if not result:
            break
    memo[node] = result
    return result

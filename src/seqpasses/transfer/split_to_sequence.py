"""``SplitToSequence(x, split?)`` -> ``Split`` (+ ``Squeeze`` where the op squeezes), whose
outputs are the static sequence; with sizes known only at run time but their number known, a
``Split`` taking them as its input. Nothing is rewritten that cannot be proven: the transfer
leaves with a reason instead."""

from __future__ import annotations

import onnx_ir as ir

from seqpasses.core.graph import is_default
from seqpasses.core.sequence import (
    StackedSequence,
    StaticSequence,
    split_squeezes,
)
from seqpasses.options import Group
from seqpasses.transfer.common import follows_ort
from seqpasses.walk.context import Context, Entry, Scope
from seqpasses.walk.facts import Reason
from seqpasses.walk.outcomes import Build, Fold, Learned, Leave, Outcome, Record, Said

__all__ = ["RULES", "TABLE"]


def _split_sizes(
    ctx: Context, node: ir.Node, dim: int | None
) -> tuple[list[int] | None, bool, Reason | None]:
    """Split sizes for SplitToSequence, whether the chunks are squeezed (a ``Squeeze`` of
    chunks 1 long on the axis: ONNX Runtime's squeeze of empty chunks of another length is a
    reshape, not rewritten), or why not known."""
    keepdims = bool(node.attributes.get_int("keepdims", 1))
    strict = ctx.options.strict_spec
    split = node.inputs[1] if len(node.inputs) > 1 else None
    unknown_dim = Reason(
        "unknown-shape", "split axis dim unknown: the number of chunks is not static"
    )
    empty = Reason("unknown-shape", "split axis has size 0: the sequence is empty")
    if split is None:
        if dim is None:
            return None, False, unknown_dim
        if dim == 0:
            return None, False, empty
        too_many = ctx.too_many_pieces(dim, f"chunks of one of a dim of {dim}")
        if too_many is not None:
            return None, False, too_many
        return [1] * dim, bool(split_squeezes(None, keepdims, True, strict, False)), None
    array = ctx.const_array(split)
    if array is None:
        return (
            None,
            False,
            Reason("run-time-value", f"split '{split.name}' is known only at run time"),
        )
    if array.ndim == 1:
        too_many = ctx.too_many_pieces(array.size, f"{array.size} split sizes")
        if too_many is not None:
            return None, False, too_many
        sizes = [int(s) for s in array]
        if not sizes or any(s < 0 for s in sizes):
            return None, False, Reason("invalid", f"split sizes {sizes} are not valid")
        if dim is None:
            text = "split axis dim unknown: the sizes cannot be proven to sum to it"
            return None, False, Reason("unknown-shape", text)
        if sum(sizes) != dim:
            text = f"split sizes sum to {sum(sizes)}, axis dim is {dim}: left to fail at run time"
            return None, False, Reason("run-time-failure", text)
        return sizes, bool(split_squeezes(1, keepdims, False, strict, False)), None
    if array.ndim != 0:
        return None, False, Reason("invalid", f"split has rank {array.ndim}, not 0 or 1")
    chunk = int(array)
    if chunk <= 0:
        return None, False, Reason("invalid", f"scalar split {chunk} is not positive")
    if dim is None:
        return None, False, unknown_dim
    if dim == 0:
        return None, False, empty
    count = -(-dim // chunk)
    too_many = ctx.too_many_pieces(count, f"chunks of {chunk} of a dim of {dim}")
    if too_many is not None:
        return None, False, too_many
    sizes = [chunk] * (dim // chunk) + ([dim % chunk] if dim % chunk else [])
    squeeze = split_squeezes(0, keepdims, all(s == 1 for s in sizes), strict, False)
    if squeeze is None:
        text = (
            f"a scalar split of {chunk} with keepdims=0 makes chunks {sizes[0]} long on the "
            "axis: ONNX Runtime fails at run time dropping that axis (unless the input has no "
            "element); left as is (--strict-spec follows the spec, which ignores keepdims here)"
        )
        return None, False, Reason("run-time-failure", text)
    return sizes, squeeze, None


def _run_time_split_count(ctx: Context, node: ir.Node, scope: Scope, why: Reason) -> int | Reason:
    """How many chunks a SplitToSequence makes whose split sizes are a run-time 1-D tensor of
    known length; else why not (``why``, what the sizes' own check said, when the split is not
    such a tensor)."""
    split = node.inputs[1] if len(node.inputs) > 1 else None
    if split is None or ctx.const_array(split) is not None:
        return why
    shape = scope.shapes.shape(split)
    if shape is None or len(shape) != 1:
        return why
    if not isinstance(shape[0], int) or shape[0] < 1:
        return Reason(why.kind, f"{why.text} (the number of sizes is not known)")
    too_many = ctx.too_many_pieces(shape[0], f"{shape[0]} run-time split sizes")
    if too_many is not None:
        return too_many
    if scope.opset < 13:
        return Reason(
            why.kind, f"{why.text} (Split takes its sizes as an attribute before opset 13)"
        )
    return shape[0]


_READS = frozenset(
    {
        "SequenceAt",
        "SequenceLength",
        "ConcatFromSequence",
        "SequenceInsert",
        "SequenceErase",
        "SequenceMap",
        "Identity",
        "Optional",
    }
)


def _written_back(ctx: Context, node: ir.Node, scope: Scope) -> Outcome | None:
    """Whether ``node`` is how a list held as one tensor is written back as a sequence
    (``SplitToSequence(S, axis=0, keepdims=0)``) for uses that need a sequence as it is: it is
    then that list, and stays (a second run changes nothing)."""
    data, out = node.inputs[0], node.outputs[0]
    if (
        data is None
        or len(node.inputs) > 1
        or node.attributes.get_int("axis", 0) != 0
        or node.attributes.get_int("keepdims", 1) != 0
    ):
        return None
    shape = scope.shapes.shape(data)
    if shape is None or len(shape) == 0:
        return None
    # no rows: the list is empty whatever reads it, but what makes the tensor may hold a check
    # (a run-time erase of its last element), which an empty static list would drop
    empty = shape[0] == 0
    if not empty and any(use.node.op_type in _READS and is_default(use.node) for use in out.uses()):
        return None
    element = ir.Shape(list(shape)[1:])
    held = StackedSequence(data, shape[0], element, data.dtype, checked=empty)
    return Fold(values={out: held})


Keepdims = list[tuple[ir.Node, ir.Attr]]


def _spec_keepdims(ctx: Context, node: ir.Node) -> tuple[Keepdims, list[Record]]:
    """With ``strict_spec``, a split given with ``keepdims=0`` gets ``keepdims=1``: the spec
    ignores keepdims when a split is given, so this means the same to it, and ONNX Runtime
    (which drops the axis of a scalar split's chunks, or fails) then follows the spec too,
    where the node stays."""
    split = node.inputs[1] if len(node.inputs) > 1 else None
    if not ctx.options.strict_spec or split is None or node.attributes.get_int("keepdims", 1) != 0:
        return [], []
    record = Record("split-to-sequence-spec-keepdims", "keepdims=0 -> 1 (ignored)")
    return [(node, ir.AttrInt64("keepdims", 1))], [record]


def _split_to_sequence(ctx: Context, node: ir.Node, scope: Scope) -> Outcome:
    written = _written_back(ctx, node, scope)
    if written is not None:
        return written
    # (the outcome, whatever it is, gives the node keepdims=1 under --strict-spec)
    keepdims, spec = _spec_keepdims(ctx, node)
    kept = Build(attributes=keepdims) if keepdims else None
    records = list(spec)
    data = node.inputs[0]
    shape = scope.shapes.shape(data) if data is not None else None
    if data is None or shape is None:
        reason = "input rank unknown: the split axis cannot be checked"
        return Leave(reason=Reason("unknown-shape", reason), records=records, build=kept)
    rank = len(shape)
    axis = node.attributes.get_int("axis", 0)
    if not -rank <= axis <= rank - 1:
        reason = f"axis {axis} is outside [-{rank}, {rank - 1}]: left to fail at run time"
        return Leave(reason=Reason("out-of-range", reason), records=records, build=kept)
    axis = axis + rank if axis < 0 else axis
    dim = shape[axis]
    sizes, squeeze, why = _split_sizes(ctx, node, dim if isinstance(dim, int) else None)
    if sizes is None:
        assert why is not None
        count = _run_time_split_count(ctx, node, scope, why)
        if isinstance(count, Reason):
            return Leave(reason=count, records=records, build=kept)
        # split sizes known only at run time, but how many of them: one Split output each (it
        # fails on sizes that do not sum to the dim exactly as SplitToSequence does)
        split = node.inputs[1]
        assert split is not None
        emit = ctx.emitter(scope, node)
        parts = emit.split_by(data, axis, split, count)
        emit.check(parts[0])  # (sizes that do not sum fail, whatever reads the chunks)
        detail = f"{count} chunks on axis {axis}"
        records.append(Record("split-to-sequence-run-time-sizes", detail))
        listed = StaticSequence(tuple(parts), data.dtype)
        return Fold(values={node.outputs[0]: listed}, records=records, build=kept)
    emit = ctx.emitter(scope, node)
    parts = emit.split(data, axis, sizes)
    if squeeze:
        parts = [emit.squeeze(p, axis) for p in parts]
    detail = f"{len(sizes)} chunks on axis {axis}" + (", squeezed" if squeeze else "")
    diverges = squeeze and len(node.inputs) > 1 and node.inputs[1] is not None
    records.append(Record("split-to-sequence", detail))
    return Fold(
        values={node.outputs[0]: StaticSequence(tuple(parts), data.dtype)},
        records=records,
        learned=Learned(diverged=parts) if diverges else None,
        said=Said(notes=[follows_ort(node, detail)]) if diverges else None,
        build=kept,
    )


TABLE: dict[tuple[str, str], Entry] = {
    ("SplitToSequence", "*"): Entry(_split_to_sequence),
}

RULES: dict[str, tuple[str, str]] = {
    "split-to-sequence": (Group.SEQUENCE_OPS, "SplitToSequence -> Split (+ Squeeze)"),
    "split-to-sequence-spec-keepdims": (
        Group.SEQUENCE_OPS,
        "with --strict-spec, SplitToSequence(x, split) with keepdims=0 -> keepdims=1 (the spec "
        "ignores it when a split is given; ONNX Runtime then follows the spec)",
    ),
    "split-to-sequence-run-time-sizes": (
        Group.SEQUENCE_OPS,
        "SplitToSequence(x, sizes) with sizes a run-time int64[k] (or int32[k], cast) -> Split "
        "with k outputs",
    ),
}
"""The rewrites this family applies: id -> (group, one line of doc)."""

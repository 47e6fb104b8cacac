"""Control flow around static sequences.

1. ``If`` with a constant condition: the taken branch is inlined (then walked, so what it
   computes folds like straight-line code).
2. ``If`` with a run-time condition whose branches both yield static sequences of one length:
   the If yields their elements as tensors instead, so what reads them can be lowered.
3. ``SequenceMap`` over static sequences: one copy of the body per element, no SequenceMap
   left (undone when a sequence op would stay in the copies).
Loops are in :mod:`seqpasses.transfer.loops`, optionals in
:mod:`seqpasses.transfer.optionals`. :func:`seqpasses.walk.inline.inline_graph`
copies a graph with its nested subgraphs (onnx_ir's ``Graph.clone``) and walks the copies.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import onnx_ir as ir

from seqpasses.core.dims import merge_shapes, same_shape
from seqpasses.core.graph import subgraph_path
from seqpasses.core.sequence import StackedSequence, StaticSequence, Unknown
from seqpasses.core.shapes import TypeAndShape
from seqpasses.options import Group
from seqpasses.transfer import stacked_map
from seqpasses.transfer.common import written_back_unloadable
from seqpasses.transfer.rows import empty_rows
from seqpasses.transfer.stacked import stacked_of
from seqpasses.walk.budget import cost_of
from seqpasses.walk.context import Context, Entry, Scope
from seqpasses.walk.facts import Reason
from seqpasses.walk.outcomes import (
    AbstractValue,
    BodyForm,
    Build,
    Fold,
    Inline,
    Learned,
    Leave,
    Listed,
    Made,
    Outcome,
    Proposal,
    Rebuild,
    Record,
    Replace,
    Restructure,
    Stacked,
    Trial,
)

__all__ = ["RULES", "TABLE"]


def _outputs_can_move(
    ctx: Context, node: ir.Node, scope: Scope, outputs: list[ir.Value]
) -> Reason | None:
    """Why an If's outputs cannot be replaced by ``outputs`` (None when they can).

    A graph output that must become an Identity of a non-tensor value needs opset 14+.
    """
    for old, new in zip(node.outputs, outputs, strict=True):
        if not old.is_graph_output() or new.producer() in ctx.edits.created:
            continue
        static = ctx.facts.static(new)
        if not isinstance(new.type, ir.TensorType) and static is None and scope.opset < 14:
            text = "a non-tensor graph output would need Identity, which opset < 14 lacks"
            return Reason("opset", text)
    return None


def _stacked_pair(
    ctx: Context, node: ir.Node, scope: Scope, k: int, branches: tuple[ir.Graph, ir.Graph]
) -> tuple[StackedSequence, StackedSequence] | None:
    """Output ``k``'s lists from both branches as one tensor each (lengths may differ), when
    their elements share one dtype and shape; None when they cannot be."""
    if not ctx.options.enabled(Group.STACKED):
        return None
    values = [ctx.facts.values.get(b.outputs[k]) for b in branches]
    if not all(isinstance(v, StaticSequence | StackedSequence) for v in values):
        return None
    scopes = [
        scope.inner(b, subgraph_path(scope.path, node, attr))
        for b, attr in zip(branches, ("then_branch", "else_branch"), strict=True)
    ]
    known = [v for v in values if not (isinstance(v, StaticSequence) and not v.elements)]
    if not known:
        return None  # both empty: nothing says what an element is
    pairs: list[StackedSequence] = []
    for value, branch, inner in zip(values, branches, scopes, strict=True):
        if isinstance(value, StaticSequence) and not value.elements:
            pairs.append(None)  # type: ignore[arg-type]
            continue
        st = stacked_of(ctx, branch.outputs[k], inner, None)
        if isinstance(st, Reason):
            return None
        pairs.append(st)
    model = next(p for p in pairs if p is not None)
    for b, (st, inner) in enumerate(zip(pairs, scopes, strict=True)):
        if st is None:  # the empty branch: no rows of the other's element shape
            emit = ctx.emitter(inner, None)
            outer = _outer_element(values[1 - b], branches[1 - b])
            empty = empty_rows(emit, model.element, model.dtype, outer)
            if empty is None:
                return None
            pairs[b] = StackedSequence(empty, 0, model.element, model.dtype)
    first, second = pairs
    if not same_shape(first.element, second.element) or first.dtype != second.dtype:
        return None
    if written_back_unloadable(node.outputs[k], first.dtype, first.element):
        return None  # (its If's output could only be written back by an unloadable split)
    return first, second


def _outer_element(value: object, branch: ir.Graph) -> ir.Value | None:
    """An element of a static list ``value`` (of ``branch``) made outside ``branch``: the
    other branch can read it."""
    if not isinstance(value, StaticSequence):
        return None
    return next((e for e in value.elements if e.graph is not branch), None)


def _if_static_sequences(ctx: Context, node: ir.Node, scope: Scope) -> Outcome:
    """Run-time condition: sequence outputs static in both branches with one length become
    one tensor output per element, so what reads them can be lowered; lists of one element
    shape but different lengths (or held as one tensor) become one tensor ``[n, *E]``."""
    then_attr, else_attr = node.attributes.get("then_branch"), node.attributes.get("else_branch")
    if then_attr is None or else_attr is None:
        return Leave()
    branches = (then_attr.as_graph(), else_attr.as_graph())
    converted: dict[int, tuple[StaticSequence, StaticSequence]] = {}
    stacked: dict[int, tuple[StackedSequence, StackedSequence]] = {}
    # a list output nothing reads (and no graph output) is dropped from both branches, so that
    # what makes it goes (a failure there stays: dead-code removal keeps what fails); the If
    # keeps at least one output
    dropped = {
        k
        for k, out in enumerate(node.outputs)
        if not out.uses()
        and not out.is_graph_output()
        and any(_is_sequence(ctx, branch.outputs[k]) for branch in branches)
    }
    if dropped and len(dropped) == len(node.outputs):
        dropped.discard(min(dropped))
    for k in range(len(node.outputs)):
        if k in dropped:
            continue
        pair = (ctx.facts.static(branches[0].outputs[k]), ctx.facts.static(branches[1].outputs[k]))
        if pair[0] is None or pair[1] is None or len(pair[0]) != len(pair[1]):
            found = _stacked_pair(ctx, node, scope, k, branches)
            if found is not None:
                stacked[k] = found
            continue
        for value in (*pair[0].elements, *pair[1].elements):
            scope.shapes.shape(value)  # types for the new If outputs
        converted[k] = (pair[0], pair[1])
    if not converted and not stacked and not dropped:
        return Leave()
    outputs_left = [k for k in range(len(node.outputs)) if k not in dropped]
    if all(k in converted and not len(converted[k][0]) for k in outputs_left):
        return Leave()  # (every output an empty list or dropped: an If of no outputs)
    forms: list[BodyForm] = []
    for b, branch in enumerate(branches):
        outputs: list[ir.Value] = []
        for k, out in enumerate(branch.outputs):
            if k in dropped:
                continue
            if k in converted:
                outputs.extend(converted[k][b].elements)
            else:
                outputs.append(stacked[k][b].tensor if k in stacked else out)
        forms.append(BodyForm(outputs=outputs))
    bodies = {
        "then_branch": (branches[0], forms[0]),
        "else_branch": (branches[1], forms[1]),
    }
    count = len(forms[0].outputs or ())
    held, moved = _held(node, dropped, converted, stacked, scope.shapes.seen)
    plan = Rebuild(node, [node.inputs[0]], bodies, count, moved=moved)
    detail = f"{len(converted)} sequence output(s) as tensors" if converted else ""
    if stacked:
        detail += ("; " if detail else "") + f"{len(stacked)} as one [n, *E] tensor each"
    if dropped:
        detail += ("; " if detail else "") + f"{len(dropped)} unread list output(s) dropped"
    rule = (
        "if-static-sequences" if converted else "if-stacked-lists" if stacked else "if-unread-lists"
    )
    return Restructure(plan=plan, held=held, records=[Record(rule, detail)])


def _held(
    node: ir.Node,
    dropped: set[int],
    converted: dict[int, tuple[StaticSequence, StaticSequence]],
    stacked: dict[int, tuple[StackedSequence, StackedSequence]],
    seen: Callable[[ir.Value], TypeAndShape],
) -> tuple[dict[ir.Value, Listed | Stacked], dict[int, int]]:
    """What each output of the If remade with its lists' elements (``converted``) or tensors
    (``stacked``) as outputs stands for: the lists, by the new outputs they are made of; the
    other outputs, the new output each moves to."""
    held: dict[ir.Value, Listed | Stacked] = {}
    moved: dict[int, int] = {}
    index = 0
    for k, old in enumerate(node.outputs):
        if k in dropped:
            continue
        if k in converted:
            first, second = converted[k]
            types = []
            for in_then, in_else in zip(first.elements, second.elements, strict=True):
                (then_type, then_shape), (else_type, else_shape) = seen(in_then), seen(in_else)
                types.append((then_type or else_type, merge_shapes([then_shape, else_shape])))
            indices = range(index, index + len(first))
            held[old] = Listed(indices, types, first.dtype or second.dtype)
            index += len(first)
            continue
        if k in stacked:
            one, other = stacked[k]
            length = one.length if one.length == other.length else ir.SymbolicDim(None)
            least, checked = min(one.least, other.least), one.checked or other.checked
            dtype = one.dtype or other.dtype
            held[old] = Stacked(index, length, one.element, dtype, least, checked)
        else:
            moved[k] = index
        index += 1
    return held, moved


def _if(ctx: Context, node: ir.Node, scope: Scope) -> Outcome:
    cond = node.inputs[0] if node.inputs else None
    if cond is None:
        return Leave()
    array = ctx.constant(cond)  # (an initializer that is also a graph input is not constant)
    if array is None or array.size != 1:
        return _if_static_sequences(ctx, node, scope)
    taken = "then_branch" if bool(array.reshape(-1)[0]) else "else_branch"
    attr = node.attributes.get(taken)
    if attr is None or attr.type != ir.AttributeType.GRAPH:
        return Leave()
    branch = attr.as_graph()
    if len(branch.outputs) != len(node.outputs):
        return Leave()
    over = ctx.budget.afford(*cost_of(branch), f"inlining the {taken}")
    if over is not None:
        return Leave(reason=over)

    def inlined(made: Made) -> Proposal:
        outputs = made.copies[0]
        why = _outputs_can_move(ctx, node, scope, outputs)
        if why is not None:
            return Leave(reason=why)
        return Replace(
            learned=Learned(forget=list(node.outputs)),
            uses=list(zip(node.outputs, outputs, strict=True)),
            build=Build(retire=[node]),
            records=[Record("if-constant-condition", f"inlined {taken}")],
        )

    # (the copy goes in and is walked at once: what it computes folds like straight-line code)
    inline = Inline(branch, 1, lambda i, previous: {})
    return Outcome(build=Build(inline=inline), then=inlined, charge=cost_of(branch))


def _is_sequence(ctx: Context, value: ir.Value) -> bool:
    known = ctx.facts.values.get(value)
    return isinstance(known, StaticSequence | StackedSequence | Unknown) or isinstance(
        value.type, ir.SequenceType
    )


def _sequence_map(ctx: Context, node: ir.Node, scope: Scope) -> Proposal:
    body_attr = node.attributes.get("body")
    if body_attr is None or body_attr.type != ir.AttributeType.GRAPH:
        return Leave()
    body = body_attr.as_graph()
    inputs = list(node.inputs)
    if any(v is None for v in inputs) or len(inputs) != len(body.inputs):
        return Leave(reason=Reason("invalid", "SequenceMap inputs do not match its body"))
    sequences: dict[int, StaticSequence] = {}
    kinds = [i for i, v in enumerate(inputs) if v is not None and (i == 0 or _is_sequence(ctx, v))]
    for index, value in enumerate(inputs):
        assert value is not None
        if index not in kinds and not isinstance(scope.shapes.type(value), ir.TensorType):
            # a sequence would be mapped element by element, a tensor passed whole: which
            # one it is must be known before the body is bound to it
            reason = f"input {index}: not known to be a tensor or a sequence"
            return Leave(reason=Reason("unknown-shape", reason))
    for index, value in enumerate(inputs):
        assert value is not None
        if index in kinds:
            seq = ctx.facts.static(value)
            if seq is None:  # a list of run-time length: a Loop over it, if it is one tensor
                return stacked_map.map_stacked(ctx, node, scope, body, kinds)
            sequences[index] = seq
    lengths = {len(s) for s in sequences.values()}
    if len(lengths) != 1:
        reason = f"sequence inputs have different lengths {sorted(lengths)}: fails at run time"
        return Leave(reason=Reason("run-time-failure", reason))
    length = lengths.pop()
    nodes, size = cost_of(body)
    over = ctx.budget.afford(length * nodes, length * size, f"{length} copies of the body")
    if over is not None:
        return Leave(reason=over)

    def bind(i: int, previous: Sequence[ir.Value]) -> dict[ir.Value, ir.Value]:
        return {
            body.inputs[j]: (sequences[j].elements[i] if j in sequences else value)
            for j, value in enumerate(inputs)
            if value is not None
        }

    def inlined(made: Made) -> Proposal | Reason:
        results = [[copy[k] for copy in made.copies] for k in range(len(node.outputs))]
        left = made.left([v for values in results for v in values])
        if left:  # one copy per element would only multiply what stays
            cause = next((n for n in left if n in ctx.facts.reasons), left[0])
            because = ctx.facts.reasons.get(cause)
            return Reason(
                "copies",
                f"inlining would leave {len(left)} sequence op(s) in the copies "
                f"({cause.op_type}: {because or 'needed as a sequence'})",
            )
        values: dict[ir.Value, AbstractValue] = {}
        for k, out in enumerate(node.outputs):
            dtype = out.type.dtype if out.type is not None else body.outputs[k].dtype
            values[out] = StaticSequence(tuple(results[k]), dtype)
        record = Record("sequence-map-inline", f"{length} copies of the body")
        return Fold(values=values, records=[record])

    charge = (length * nodes, length * size)
    attempt = Outcome(build=Build(inline=Inline(body, length, bind)), then=inlined, charge=charge)
    return Trial(attempt=attempt, otherwise=lambda why: Leave(reason=why))


TABLE: dict[tuple[str, str], Entry] = {
    ("If", "*"): Entry(_if, group=Group.IF_INLINE, dry=False),
    ("SequenceMap", "*"): Entry(_sequence_map, group=Group.SEQUENCE_MAP, dry=False),
}

RULES: dict[str, tuple[str, str]] = {
    "if-unread-lists": (
        Group.IF_INLINE,
        "If(c) with a run-time c: a list output nothing reads -> dropped from both branches",
    ),
    "if-constant-condition": (Group.IF_INLINE, "If with a constant condition -> the taken branch"),
    "if-static-sequences": (
        Group.IF_INLINE,
        "If whose branches yield static sequences of one length -> their elements as tensors",
    ),
    "if-stacked-lists": (
        Group.STACKED,
        "If whose branches yield lists of one element shape but different lengths -> one "
        "[n, *E] tensor from each branch",
    ),
    "sequence-map-inline": (
        Group.SEQUENCE_MAP,
        "SequenceMap over static sequences -> one copy of the body per element",
    ),
}

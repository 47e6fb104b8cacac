"""Unrolling: a Loop with a small constant trip count whose body reads a sequence.

The body is inlined once per iteration (the iteration number a constant of the shape the body
declares, the carried values threaded through), its scan outputs stacked, and the copies
folded as straight-line code. :func:`blocker` says why a loop cannot be unrolled without
touching the graph; :func:`unroll` undoes everything when a sequence op would stay in the
copies (unrolling would only multiply it).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import onnx_ir as ir

from seqpasses.core.dims import same_shape
from seqpasses.core.graph import graph_nodes, is_default, subgraphs
from seqpasses.core.ops import SEQUENCE_OPS
from seqpasses.options import Group
from seqpasses.transfer.common import written_back_unloadable
from seqpasses.transfer.loops.induction import declared_ones, stays_true
from seqpasses.walk.budget import cost_of
from seqpasses.walk.context import Context, Scope
from seqpasses.walk.facts import Reason
from seqpasses.walk.materialize import split_written
from seqpasses.walk.outcomes import (
    Build,
    Inline,
    Learned,
    Made,
    Outcome,
    Proposal,
    Record,
    Replace,
    Trial,
)

__all__ = ["blocker", "length_bound", "plan_unrolling", "unroll"]


def _reads_unlike_elements(ctx: Context, body: ir.Graph) -> bool:
    """Whether the body reads, at a run-time position, a static sequence whose elements are
    not all of one shape."""
    for node in graph_nodes(body):
        if node.op_type != "SequenceAt" or not node.inputs or node.inputs[0] is None:
            continue
        seq = ctx.facts.static(node.inputs[0])
        if seq is None or len(seq) < 2:
            continue
        first = seq.elements[0].shape
        if any(not same_shape(first, e.shape) for e in seq.elements):
            return True
    return False


def _length_test(ctx: Context, value: ir.Value | None) -> tuple[ir.Value, int] | None:
    """``(l, k)`` when ``value`` is ``Less(SequenceLength(l), k)`` with ``k`` a constant."""
    producer = value.producer() if value is not None else None
    if producer is None or producer.op_type != "Less" or not is_default(producer):
        return None
    length, bound = producer.inputs[0], producer.inputs[1]
    reader = length.producer() if length is not None else None
    k = ctx.const_int(bound)[0] if bound is not None else None
    if reader is None or reader.op_type != "SequenceLength" or not is_default(reader):
        return None
    listed = reader.inputs[0]
    return None if listed is None or k is None else (listed, k)


def length_bound(ctx: Context, node: ir.Node, body: ir.Graph) -> int | None:
    """How many iterations a loop runs whose condition is the length of a list it grows by
    one each iteration (TorchScript's ``while len(tokens) < k:``): the body's condition is
    ``Less(SequenceLength(l'), k)``, ``l'`` one ``SequenceInsert`` at the back of the list it
    carries in, which starts statically known; the loop's own condition is true, or the
    same test of the list it starts with. None when it is not such a loop, or when its
    trip count input is known only at run time."""
    test = _length_test(ctx, body.outputs[0] if body.outputs else None)
    outs = list(body.outputs[1 : len(body.inputs) - 1])
    if test is None or test[0] not in outs or sum(o is test[0] for o in body.outputs) != 1:
        return None
    (out, k), j = test, outs.index(test[0])
    insert = out.producer()
    if (
        insert is None
        or insert.op_type != "SequenceInsert"
        or not is_default(insert)
        or len(insert.inputs) != 2
        or insert.inputs[0] is not body.inputs[2 + j]
    ):
        return None
    initial = ctx.facts.static(node.inputs[2 + j])
    if initial is None:
        return None
    count = max(1, k - len(initial))  # (the first iteration runs whatever the length)
    cond = node.inputs[1] if len(node.inputs) > 1 else None
    if cond is not None and not ctx.is_true(cond):
        first = _length_test(ctx, cond)
        if first is None or first[0] is not node.inputs[2 + j]:
            return None
        count = count if len(initial) < first[1] else 0
    trip = node.inputs[0] if node.inputs else None
    if trip is not None:
        most, _ = ctx.const_int(trip, role="trip count")
        if most is None:
            return None
        count = min(count, max(most, 0))
    return count


def _trips(ctx: Context, node: ir.Node, body: ir.Graph) -> tuple[int | None, str, bool]:
    """How many times the loop runs, when known before run time (else why not), and whether
    that count comes from the length of a list it grows (:func:`length_bound`)."""
    bounded = length_bound(ctx, node, body)
    if bounded is not None:
        return bounded, "", True
    trip = node.inputs[0] if node.inputs else None
    if trip is None:
        return None, "no trip count (a while loop)", False
    count, why = ctx.const_int(trip, role="trip count")
    return count, str(why), False


def blocker(ctx: Context, node: ir.Node, body: ir.Graph, opset: int) -> str:
    """Why ``node`` cannot be unrolled (empty when it can)."""
    if not ctx.options.enabled(Group.LOOP_UNROLL):
        return "loop-unroll is switched off"
    count, why, bounded = _trips(ctx, node, body)
    if count is None:
        return why
    if count <= 0:
        return f"trip count {count}: no iteration to unroll"
    if count > ctx.options.max_unroll:
        return f"trip count {count} is above --max-unroll {ctx.options.max_unroll}"
    over = _over_budget(ctx, body, count)
    if over is not None:
        return str(over)
    cond = node.inputs[1] if len(node.inputs) > 1 else None
    if not bounded and cond is not None and not ctx.is_true(cond):
        return "the loop condition is known only at run time"
    if len(body.outputs) > len(node.inputs) - 1 and _reads_unlike_elements(ctx, body):
        return (
            "the body reads elements of different shapes and stacks what it makes into a "
            "scan output (the loop fails at run time)"
        )
    if len(body.inputs) != len(node.inputs) or len(body.outputs) < len(node.inputs) - 1:
        return "the body's inputs and outputs do not match the Loop's"
    if not bounded and not stays_true(ctx, body.outputs[0], body.inputs[1]):
        return "the body's condition output is not provably true (a loop with a break)"
    if opset < 14:
        carried = len(node.inputs) - 2
        for k, out in enumerate(node.outputs[:carried]):
            if not out.is_graph_output() or isinstance(out.type, ir.TensorType):
                continue
            result = body.outputs[1 + k]
            passed = result is body.inputs[2 + k] or result.graph is not body
            if passed and ctx.facts.static(node.inputs[2 + k]) is None:
                # the output would be an outer sequence renamed: Identity, which opset < 14
                # does not have for sequences
                return "a sequence graph output would need Identity, which opset < 14 lacks"
    return ""


def _cost(body: ir.Graph, count: int) -> tuple[int, int]:
    """What ``count`` copies of ``body`` add: nodes, and bytes of constants."""
    nodes, size = cost_of(body)
    return count * (nodes + 1), count * size


def _over_budget(ctx: Context, body: ir.Graph, count: int) -> Reason | None:
    """Why ``count`` copies of ``body`` are more than the run's budget (None: they fit)."""
    return ctx.budget.afford(*_cost(body, count), f"{count} copies")


def _kept_lists(ctx: Context, node: ir.Node, carried: list[ir.Value | None]) -> str:
    """Why a list the copies carry out would keep every copy's sequence ops ('' when none
    does): held as one tensor of a type ONNX Runtime's SplitToSequence lacks, it can only be
    written back as what the copies' ops compute, and what reads it needs a list."""
    for k, value in enumerate(carried):
        st = ctx.facts.stacked(value)
        if (
            st is not None
            and split_written(st, ctx.options.max_split, output=True)
            and written_back_unloadable(node.outputs[k], st.dtype, st.element)
        ):
            return (
                f"the list it carries would keep every copy's sequence ops (a list of "
                f"{st.dtype} read as a list after it, which ONNX Runtime cannot split)"
            )
    return ""


_OUTER_READS = frozenset({"SequenceAt", "SequenceLength", "ConcatFromSequence"})


def reads_outer_lists_only(ctx: Context, node: ir.Node, body: ir.Graph) -> bool:
    """Whether the loop carries no list, its body only reads lists made outside it, and
    copying the body once per iteration would make more nodes than folding those reads in
    place (a position that is the counter becomes a Gather of the stacked list)."""
    if any(
        ctx.facts.values.get(v) is not None or isinstance(v.type, ir.SequenceType)
        for v in node.inputs[2:]
        if v is not None
    ):
        return False
    inner = {id(body), *(id(g) for n in graph_nodes(body) for _, g in subgraphs(n))}
    work = 0  # the body's own nodes: what each copy would repeat
    lists: set[ir.Value] = set()
    for n in graph_nodes(body):
        if n.op_type not in SEQUENCE_OPS or not is_default(n):
            work += n.op_type != "Identity"
            continue
        source = n.inputs[0] if n.inputs else None
        if n.op_type not in _OUTER_READS or source is None or id(source.graph) in inner:
            return False
        lists.add(source)
    trips, _ = ctx.const_int(node.inputs[0]) if node.inputs and node.inputs[0] else (None, None)
    if trips is None:
        return True
    # in place: the body once, and each list stacked (an Unsqueeze per element, a Concat)
    # for the Gathers at the counter
    static = [ctx.facts.static(source) for source in lists]
    in_place = work + sum(len(s) + 2 if s is not None else 2 for s in static)
    return trips * work > in_place


def plan_unrolling(ctx: Context, node: ir.Node, scope: Scope) -> Outcome | None:
    """Before the body is walked: whether this loop will be unrolled (a read at its counter
    is then left for the copies to fold, instead of becoming a Gather). A loop whose body only
    reads lists made outside it is not: its reads fold in place."""
    body = node.attributes.get("body")
    if (
        body is not None
        and body.type == ir.AttributeType.GRAPH
        and not reads_outer_lists_only(ctx, node, body.as_graph())
        and not blocker(ctx, node, body.as_graph(), scope.opset)
    ):
        return Outcome(learned=Learned(unrolling=True))
    return None


def unroll(
    ctx: Context,
    node: ir.Node,
    scope: Scope,
    body: ir.Graph,
    otherwise: Callable[[str], Proposal],
) -> Proposal:
    """Inline the body once per iteration and fold the copies: a trial, undone when a
    sequence op would stay in the copies (then ``otherwise(why)``)."""
    count, _, _ = _trips(ctx, node, body)
    assert count is not None
    over = _over_budget(ctx, body, count)
    if over is not None:
        return otherwise(str(over))
    emit = ctx.emitter(scope, node)
    cond = node.inputs[1] if len(node.inputs) > 1 else None
    # (each copy runs: its condition input is true; a loop bounded by its list's length has
    # a condition only true while it runs, so a true constant stands for it)
    true = cond if cond is not None and ctx.is_true(cond) else emit.true()
    n_carried = len(node.inputs) - 2
    counter_dims = declared_ones(body.inputs[0])  # TorchScript declares it [1] at times
    if len(body.inputs) > 1 and declared_ones(body.inputs[1]) not in ((), None):
        true = emit.constant(np.ones(declared_ones(body.inputs[1]) or (), dtype=np.bool_))
    numbers = [emit.constant(np.full(counter_dims or (), i, dtype=np.int64)) for i in range(count)]

    def bind(i: int, previous: Sequence[ir.Value]) -> dict[ir.Value, ir.Value]:
        carried = list(node.inputs[2:]) if i == 0 else list(previous[1 : 1 + n_carried])
        bound = {body.inputs[0]: numbers[i], body.inputs[1]: true}
        bound.update({body.inputs[2 + j]: v for j, v in enumerate(carried) if v is not None})
        return bound

    def folded(made: Made) -> Proposal | Reason:
        return _folded(ctx, node, scope, made, count, n_carried)

    inline = Inline(body, count, bind)
    return Trial(
        attempt=Outcome(build=Build(inline=inline), then=folded, charge=_cost(body, count)),
        otherwise=lambda why: otherwise(str(why)),
    )


def _folded(
    ctx: Context, node: ir.Node, scope: Scope, made: Made, count: int, n_carried: int
) -> Proposal | Reason:
    """The unrolled copies (``made``), kept: the loop's outputs replaced by the last copy's
    carried values and the scan outputs stacked; the reason to undo them instead."""
    carried: list[ir.Value | None] = list(made.copies[-1][1 : 1 + n_carried])
    n_scans = len(made.copies[-1]) - 1 - n_carried
    scans = [[copy[1 + n_carried + k] for copy in made.copies] for k in range(n_scans)]
    roots = [v for v in carried if v is not None] + [v for values in scans for v in values]
    left = made.left(roots)
    kept = _kept_lists(ctx, node, carried)
    if kept and not left:
        return Reason("copies", kept)
    if left:
        cause = next((n for n in left if n in ctx.facts.reasons), left[0])
        why = ctx.facts.reasons.get(cause) or "needed as a sequence"
        return Reason(
            "copies",
            f"unrolling would leave {len(left)} sequence op(s) in the copies "
            f"({cause.op_type}: {why})",
        )
    emit = ctx.emitter(scope, node)
    finals: list[ir.Value] = [v for v in carried if v is not None]
    for values in scans:
        for value in values:
            scope.shapes.shape(value)  # (the Unsqueeze's type and shape: the emitter sees it)
        parts = [emit.unsqueeze(v, 0) for v in values]
        finals.append(parts[0] if len(parts) == 1 else emit.concat(parts, 0))
    return Replace(
        learned=Learned(forget=list(node.outputs)),
        uses=list(zip(node.outputs, finals, strict=True)),
        build=Build(retire=[node]),
        records=[Record("loop-unroll", f"{count} iterations")],
    )

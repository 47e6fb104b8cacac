"""Loops that carry or read sequences.

For each ``Loop``, in this order:

1. a loop that only appends to lists that start static: each list becomes a scan output
   (:mod:`.scan`; it keeps the graph small);
2. a loop that reads a sequence, with a small constant trip count: unrolled and folded
   (:mod:`.unroll`), unless a sequence op would stay in the copies;
3. otherwise its reads of the list it appends to are lifted into values it has
   (:mod:`.lift`), and its lists become scan outputs where they can;
4. a list read after the loop only whole (ConcatFromSequence along an existing axis,
   SequenceLength) is carried as its running concatenation (:mod:`.running`: ragged rows);
5. a list of one length at every iteration, edited at known positions, is carried as its
   elements (:mod:`.elements`); a list read or edited at run-time positions is carried as
   one tensor (:mod:`.carry`);
6. a loop left as it is gets the shapes induction proves (:mod:`.induction`).

Every way a loop's list stays is recorded as a reason of the Loop, which what reads the list
reports.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import suppress
from dataclasses import dataclass

import onnx_ir as ir

from seqpasses.core.dims import contradicts, fill_shape
from seqpasses.core.graph import graph_nodes, is_default, label
from seqpasses.core.ops import SEQUENCE_OPS
from seqpasses.options import Group
from seqpasses.transfer.loops import carry, elements, lift, running, scan, unroll
from seqpasses.transfer.loops.appends import append_pattern
from seqpasses.transfer.loops.induction import (
    carried_guesses,
    carried_shapes,
    induction,
    scan_shapes,
)
from seqpasses.transfer.loops.lists import carried_lists
from seqpasses.walk.context import Context, Entry, Scope
from seqpasses.walk.driver import Drive, Pattern, drive
from seqpasses.walk.outcomes import (
    Build,
    Declared,
    Fold,
    Learned,
    Leave,
    Next,
    Outcome,
    Proposal,
    Said,
)

__all__ = ["RULES", "TABLE"]


@dataclass(frozen=True)
class _Given:
    """What the Loop's patterns are given: the sequence ops its body runs on lists (not its
    appends), and whether a list it carries starts static."""

    body: ir.Graph
    reads: tuple[ir.Node, ...]
    starts_static: bool


_Drive = Drive[_Given]


def _body(node: ir.Node) -> ir.Graph:
    return node.attributes["body"].as_graph()


def _scan(ctx: Context, node: ir.Node, scope: Scope, at: _Drive) -> Proposal | None:
    """A loop that only appends to lists that start static: each list a scan output."""
    given = at.given
    if given.reads or not given.starts_static or not ctx.options.enabled(Group.LOOP_SCAN):
        return None
    return scan.scan_outputs(ctx, node, scope, _body(node))


def _unroll(ctx: Context, node: ir.Node, scope: Scope, at: _Drive) -> Proposal | None:
    """A loop that reads a sequence, unrolled and folded (a trial); else why not."""
    body, reads, starts_static = at.given.body, at.given.reads, at.given.starts_static
    live = [n for n in reads if n in ctx.facts.reasons or any(o.uses() for o in n.outputs)]
    if not live and not starts_static and node not in ctx.facts.unrolling:
        # (its body read only outer lists, and those reads folded in place)
        return Leave(declare=scan_shapes(ctx, scope, node, body))
    if not reads and not starts_static:
        return None
    why = unroll.blocker(ctx, node, body, scope.opset)
    if why:
        return _not_unrolled(node, body, reads, why, rewalk=False)
    return unroll.unroll(
        ctx, node, scope, body, lambda why: _not_unrolled(node, body, reads, why, rewalk=True)
    )


def _not_unrolled(
    node: ir.Node, body: ir.Graph, reads: Sequence[ir.Node], why: str, rewalk: bool
) -> Proposal:
    """Why the loop is not unrolled, said where it and its reads are reported; a body that was
    walked for an unrolling (reads at the counter left to the copies) is walked again."""
    return Next(
        node=node,
        learned=Learned(unrolling=False) if rewalk else None,
        build=Build(walk=[(body, node, "body")]) if rewalk else None,
        said=Said(
            refused=[(node, "unroll", why)],
            noted=[(read, f"{label(node)} not unrolled: {why}") for read in reads],
        ),
    )


def _lift(ctx: Context, node: ir.Node, scope: Scope, at: _Drive) -> Proposal | None:
    """Reads of the list the loop appends to lifted into values it has."""
    if not (at.given.reads and ctx.options.enabled(Group.LOOP_SCAN)):
        return None
    return lift.lift_reads(ctx, node, scope, _body(node))


def _in_group(
    group: Group,
    strategy: Callable[[Context, ir.Node, Scope, ir.Graph], Proposal | None],
    lifted_only: bool = False,
) -> Callable[[Context, ir.Node, Scope, _Drive], Proposal | None]:
    """A pattern that runs ``strategy`` on the node and its body where ``group`` is on (and,
    with ``lifted_only``, where the body reads lists the lift pattern tried)."""

    def run(ctx: Context, node: ir.Node, scope: Scope, at: _Drive) -> Proposal | None:
        if not ctx.options.enabled(group) or (lifted_only and not at.given.reads):
            return None
        return strategy(ctx, node, scope, _body(node))

    return run


def _left(ctx: Context, node: ir.Node, scope: Scope, at: _Drive) -> Proposal:
    """The loop stays, with the shapes induction proves (a lifted loop whose list a run-time
    read after it keeps from being a scan output is handled: its reads were rewritten)."""
    declare = scan_shapes(ctx, scope, node, _body(node))
    return Fold(declare=declare) if at.changed else Leave(declare=declare)


PATTERNS: tuple[Pattern[_Given], ...] = (
    Pattern("scan", _scan),
    Pattern("unroll", _unroll),
    Pattern("lift", _lift),
    # after the reads were lifted (or tried): each list a scan output
    Pattern("scan-lifted", _in_group(Group.LOOP_SCAN, scan.scan_outputs, lifted_only=True)),
    # lists read after the loop only whole: carried as their running concatenations
    Pattern("running", _in_group(Group.LOOP_SCAN, running.running_concats)),
    # lists of one length edited at known positions: carried as their elements
    Pattern("elements", _in_group(Group.LOOP_SCAN, elements.carry_elements)),
    # lists read or edited at run-time positions: carried as one tensor
    Pattern("stacked", _in_group(Group.STACKED, carry.carry_stacked)),
    Pattern("left", _left),
)
"""A Loop's ways, in the order they are tried (see the module docstring)."""


def _loop(ctx: Context, node: ir.Node, scope: Scope) -> Proposal:
    body_attr = node.attributes.get("body")
    if body_attr is None or body_attr.type != ir.AttributeType.GRAPH:
        return Leave()
    state = Drive(_given(ctx, node), refresh=lambda rebuilt: _given(ctx, rebuilt))
    return drive(ctx, node, scope, PATTERNS, state)


def _given(ctx: Context, node: ir.Node) -> _Given:
    """What the patterns are given of ``node`` (the Loop, or one a pattern rebuilt: each
    rebuild hands the new Loop to every pattern again, a list it turned gone)."""
    body = _body(node)
    carried = len(node.inputs) - 2
    appends = {
        found.insert for j in range(carried) if (found := append_pattern(ctx, body, j)) is not None
    }
    reads = tuple(
        n
        for n in graph_nodes(body)
        if n.op_type in SEQUENCE_OPS and is_default(n) and n not in appends
    )
    starts_static = any(ctx.facts.static(v) is not None for v in node.inputs[2:])
    return _Given(body, reads, starts_static)


def _loop_shapes(ctx: Context, node: ir.Node, scope: Scope) -> Proposal:
    """A dry walk (analysis): what a rewrite would prove, without it: the shapes of the
    carried tensors that keep theirs, and of what concatenates a list the loop would carry as
    its running concatenation; in the main graph, its scan outputs' and the element shape of
    the lists it carries out (induction, :mod:`.lists`), which the walk names as proven.
    Changes no node."""
    body_attr = node.attributes.get("body")
    if body_attr is None or body_attr.type != ir.AttributeType.GRAPH:
        return Leave()
    body = body_attr.as_graph()
    declare: dict[ir.Value, Declared] = {}
    if len(node.inputs) > 2:  # carried tensors that keep their shape, proven by induction
        declare.update(carried_shapes(node, induction(ctx, scope, node, body)[1], body))
    for j in range(len(node.inputs) - 2):
        if not isinstance(body.inputs[2 + j].type, ir.SequenceType | None):
            continue
        found = running.plan(ctx, node, scope, body, j)
        if isinstance(found, str) or found.axis is None:
            continue
        shape = running.free_shape(ctx, scope, found)
        for use in node.outputs[j].uses():
            out = use.node.outputs[0]
            if use.node.op_type == "ConcatFromSequence" and not contradicts(out.shape, shape):
                out_type, out_shape = declare.get(out, (out.type, out.shape))
                out_type = out_type or ir.TensorType(found.dtype)
                declare[out] = (out_type, fill_shape(out_shape, shape, numbers_win=True))
    if scope.path != "main":
        return Leave(declare=declare)
    scans: dict[ir.Value, Declared] = {}
    with suppress(Exception):  # (what induction cannot follow stays unknown)
        scans = scan_shapes(ctx, scope, node, body)
    declare.update(scans)
    proven = _proven_lists(ctx, node, scope, body)
    declare.update(proven)
    kept = [v for v in declare if v.graph is body and v not in proven]  # (carried tensors)
    stacked = [v for v in node.outputs[len(node.inputs) - 2 :] if v in scans and v not in proven]
    proven_all = [*proven, *kept, *stacked]  # (stacked: the scan outputs, onnx's claim aside)
    return Leave(declare=declare, learned=Learned(proven=proven_all) if proven_all else None)


def _proven_lists(
    ctx: Context, node: ir.Node, scope: Scope, body: ir.Graph
) -> dict[ir.Value, Declared]:
    """What the list half of induction (:mod:`.lists`) proves of a main graph's loop: the
    element shape of the lists it carries out and the types and shapes of its body's
    tensors."""
    facts = ctx.facts.values

    def held(value: ir.Value) -> object:
        return facts.get(value) if value.graph is scope.graph else None

    lists, inner = carried_lists(node, held, scope.shapes)
    found: dict[ir.Value, Declared] = {}
    for value, element in lists.items():
        dtype = _list_dtype(ctx, node, body, value)
        type_ = value.type or (ir.SequenceType(ir.TensorType(dtype)) if dtype else None)
        found[value] = (type_, element)
    for value, (type_, shape) in inner.items():
        found[value] = (value.type or type_, shape)
    return found


def _list_dtype(ctx: Context, node: ir.Node, body: ir.Graph, out: ir.Value) -> ir.DataType | None:
    """The dtype of the elements of the list a loop carries out as ``out``: as its initial
    list holds them, or as the body declares its list."""
    j = out.index()
    if j is None or not 0 <= j < len(node.inputs) - 2:
        return None
    initial = node.inputs[2 + j]
    held = ctx.facts.values.get(initial) if initial is not None else None
    dtype = getattr(held, "dtype", None)
    if dtype is not None:
        return dtype  # type: ignore[no-any-return]
    given = body.inputs[2 + j] if 2 + j < len(body.inputs) else None
    back = body.outputs[1 + j] if 1 + j < len(body.outputs) else None
    for value in (initial, given, back):
        type_ = value.type if value is not None else None
        if isinstance(type_, ir.SequenceType) and isinstance(type_.elem_type, ir.TensorType):
            return type_.elem_type.dtype
    return None


def _before(ctx: Context, node: ir.Node, scope: Scope) -> Outcome | None:
    """Before the body is walked: its carried inputs declared as proven (not as the
    exporter guessed), and whether the loop will be unrolled."""
    body_attr = node.attributes.get("body")
    if body_attr is None or body_attr.type != ir.AttributeType.GRAPH:
        return None
    declare = carried_guesses(ctx, scope, node, body_attr.as_graph())
    planned = unroll.plan_unrolling(ctx, node, scope)
    if not declare:
        return planned
    unrolling = planned.learned.unrolling if planned and planned.learned else None
    return Outcome(declare=declare, learned=Learned(unrolling=unrolling))


TABLE: dict[tuple[str, str], Entry] = {
    ("Loop", "*"): Entry(_loop, before=_before, dry=False, analyze=_loop_shapes),
}

RULES: dict[str, tuple[str, str]] = {
    "loop-append-to-scan-output": (
        Group.LOOP_SCAN,
        "a Loop appending to a list that starts static -> a Loop with a scan output",
    ),
    "loop-lift-reads": (
        Group.LOOP_SCAN,
        "len(l), l[-1], l[initial] inside a Loop that appends to l -> values the loop carries",
    ),
    "loop-running-concat": (
        Group.LOOP_SCAN,
        "a Loop appending to a list read after it only by ConcatFromSequence(new_axis=0) and "
        "SequenceLength -> it carries the concatenation (and a count)",
    ),
    "loop-carries-elements": (
        Group.LOOP_SCAN,
        "a Loop carrying a list of one length at every iteration, read and edited at known "
        "positions -> it carries the list's elements, one tensor each",
    ),
    "loop-carries-stacked": (
        Group.STACKED,
        "a Loop carrying a list it reads or edits at run-time positions -> it carries the "
        "list as one [n, *E] tensor",
    ),
    "loop-unroll": (
        Group.LOOP_UNROLL,
        "a Loop with a constant trip count <= --max-unroll that reads a sequence -> its body "
        "once per iteration, folded",
    ),
}

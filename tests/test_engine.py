"""The engine's parts on their own: the budget, the journal and its undo log, the applier
writing proposals a table of test transfers makes (a Leave's tape not placed, a trial undone
whole: its nodes, its records, what the walk learned, what the budget was charged), and the
driver giving a node to ordered patterns."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import onnx
import onnx_ir as ir
import pytest

from seqpasses.core.sequence import Reason, StaticSequence
from seqpasses.options import FoldOptions
from seqpasses.report import Report
from seqpasses.walk.budget import WORK_FACTOR, Budget
from seqpasses.walk.context import Context, Entry, Scope
from seqpasses.walk.driver import Drive, Pattern, drive
from seqpasses.walk.outcomes import Fold, Leave, Next, Outcome, Proposal, Record, Said, Trial
from seqpasses.walk.trial import (
    CreatedNodes,
    Journal,
    Undo,
    UndoableDict,
    UndoableSet,
    checkpoint,
    rollback,
)
from seqpasses.walk.walker import Walker

HEADER = '<ir_version: 8, opset_import: ["" : 18]>\n'

# -- the budget -------------------------------------------------------------------------------


def test_the_budget_is_asked_then_charged_and_gives_back_what_a_rollback_undoes() -> None:
    budget = Budget(nodes=10, bytes=100)
    assert budget.afford(10, 100, "copies") is None
    assert budget.spent_nodes == 0  # (asking takes nothing)
    over = budget.afford(11, 0, "copies")
    assert over is not None and over.kind == "limit" and "11 nodes" in str(over)
    assert budget.afford(1, 101, "copies") is not None
    state = budget.state()
    budget.charge(6, 50)
    assert budget.afford(5, 0, "more") is not None
    budget.restore(state)
    assert budget.afford(10, 100, "copies") is None


def test_what_all_attempts_copy_stays_bounded_when_each_is_given_back() -> None:
    budget = Budget(nodes=10, bytes=100)
    for _ in range(WORK_FACTOR):
        state = budget.state()
        assert budget.afford(10, 0, "an attempt") is None
        budget.charge(10, 0)
        budget.restore(state)
    over = budget.afford(1, 0, "one more")
    assert over is not None and "in all attempts" in str(over)


# -- the journal and its undo log ---------------------------------------------------------


def test_the_undo_log_records_only_while_a_trial_is_open() -> None:
    undo = Undo()
    values, seen = UndoableDict(undo), UndoableSet(undo)
    values["kept"] = 1
    seen.add("kept")
    assert undo.entries == []
    undo.depth += 1
    mark = undo.position()
    values["kept"] = 2
    values["new"] = 3
    values.update({"more": 4})
    values.pop("kept")
    seen.add("new")
    seen.discard("kept")
    undo.back_to(mark)
    assert dict(values) == {"kept": 1} and set(seen) == {"kept"}
    values["again"] = 5
    undo.close()
    assert undo.depth == 0 and undo.entries == []  # (no trial open: nothing to undo to)
    assert values["again"] == 5


def test_a_rollback_undoes_logs_caches_states_and_nodes() -> None:
    journal, created = Journal(), CreatedNodes()
    undone: list[str] = []
    records = journal.log(["before"], undone.append)
    cache: dict[str, ir.Node] = journal.cache({})
    state = {"spent": 1}
    journal.state(lambda: state["spent"], lambda noted: state.update(spent=noted))
    graph = ir.Graph([], [], nodes=[])
    old = ir.node("Relu", [ir.Value(name="x")])
    graph.append(old)
    created.add(old)
    mark = checkpoint(len(created), journal, rewrote=False)
    new = ir.node("Neg", [old.outputs[0]])
    graph.append(new)
    created.add(new)
    records.append("during")
    cache["old"], cache["new"] = old, new
    state["spent"] = 9
    rollback(created, journal, mark)
    assert records == ["before"] and undone == ["during"]
    assert cache == {"old": old} and state == {"spent": 1}
    assert list(graph) == [old] and list(created) == [old]


# -- the applier, through a walk with a table of test transfers ----------------------------------


def _walk(text: str, transfer: Callable[[Context, ir.Node, Scope], Proposal]) -> Walker:
    """A walk of the model ``text`` whose table has one row: ``transfer`` for every Relu."""
    model = ir.serde.deserialize_model(onnx.parser.parse_model(HEADER + text))
    walker = Walker({("Relu", "*"): Entry(transfer)}, FoldOptions(), Report())
    walker.model = model  # type: ignore[attr-defined]
    walker.run_model(model, 18)
    return walker


MODEL = "g (float[2] x) => (float[2] y) {\n  y = Relu(x)\n}"


def test_a_tape_that_a_leave_does_not_read_is_not_placed() -> None:
    def tried(ctx: Context, node: ir.Node, scope: Scope) -> Proposal:
        ctx.emitter(scope, node).constant(np.array([1.0, 2.0], dtype=np.float32))
        return Leave(reason=Reason("run-time-value", "tried, then left"))

    walker = _walk(MODEL, tried)
    model = walker.model  # type: ignore[attr-defined]
    assert [n.op_type for n in model.graph] == ["Relu"]
    assert len(walker.edits.created) == 0
    relu = next(iter(model.graph))
    assert str(walker.facts.reasons[relu]) == "tried, then left"


def test_a_tape_a_leave_declares_is_placed() -> None:
    def declared(ctx: Context, node: ir.Node, scope: Scope) -> Proposal:
        one = ctx.emitter(scope, node).constant(np.array([1.0], dtype=np.float32))
        return Leave(declare={one: (one.type, ir.Shape([1]))})

    model = _walk(MODEL, declared).model  # type: ignore[attr-defined]
    assert [n.op_type for n in model.graph] == ["Constant", "Relu"]


def test_an_outcome_charges_the_budget_as_it_is_written() -> None:
    def charged(ctx: Context, node: ir.Node, scope: Scope) -> Proposal:
        return Outcome(charge=(7, 3))

    walker = _walk(MODEL, charged)
    assert walker.ctx.budget.state() == (7, 3)


def test_a_trial_that_fails_is_undone_whole() -> None:
    """Its nodes go, and with them what the walk learned (a list, a reason), what the report
    recorded and what the budget was charged; then its ``otherwise`` is written."""
    learned: list[bool] = []

    def tried(ctx: Context, node: ir.Node, scope: Scope) -> Proposal:
        made = ctx.emitter(scope, node).constant(np.array([1.0, 2.0], dtype=np.float32))
        attempt = Fold(
            values={node.outputs[0]: StaticSequence((made,), ir.DataType.FLOAT)},
            records=[Record("sequence-length", "tried")],
            charge=(5, 8),
            then=lambda _: Reason("copies", "the attempt fails"),
        )

        def otherwise(why: Reason) -> Proposal:
            learned.append(node.outputs[0] in ctx.facts.values)
            return Leave(reason=why)

        return Trial(attempt=attempt, otherwise=otherwise)

    walker = _walk(MODEL, tried)
    model = walker.model  # type: ignore[attr-defined]
    assert [n.op_type for n in model.graph] == ["Relu"]
    assert learned == [False]  # (undone before the otherwise was asked)
    relu = next(iter(model.graph))
    assert relu.outputs[0] not in walker.facts.values or not isinstance(
        walker.facts.values[relu.outputs[0]], StaticSequence
    )
    assert str(walker.facts.reasons[relu]) == "the attempt fails"
    assert walker.edits.recorder.report.rewrites == []
    assert walker.ctx.budget.state() == (0, 0)
    assert walker.facts.undo.entries == [] and walker.facts.undo.depth == 0


def test_a_trial_that_holds_keeps_what_it_made() -> None:
    def tried(ctx: Context, node: ir.Node, scope: Scope) -> Proposal:
        attempt = Outcome(charge=(2, 0), then=lambda _: Fold(records=[Record("sequence-length")]))
        return Trial(attempt=attempt, otherwise=lambda why: Leave(reason=why))

    walker = _walk(MODEL, tried)
    assert [r.rule for r in walker.edits.recorder.report.rewrites] == ["sequence-length"]
    assert walker.ctx.budget.state() == (2, 0)


@pytest.mark.parametrize("depth", [1, 2])
def test_nested_trials_undo_to_their_own_mark(depth: int) -> None:
    """An inner trial that fails undoes only its own part; the outer one, kept, keeps its."""
    seen: list[str] = []

    def tried(ctx: Context, node: ir.Node, scope: Scope) -> Proposal:
        def inner(_: object) -> Proposal:
            failing = Outcome(charge=(1, 0), then=lambda _: Reason("copies", "inner fails"))
            return Trial(attempt=failing, otherwise=lambda why: Fold(said=Said(notes=[str(why)])))

        def outer(_: object) -> Proposal:
            seen.append("outer")
            return inner(None) if depth > 1 else Fold(said=Said(notes=["outer only"]))

        attempt = Outcome(charge=(3, 0), then=outer)
        return Trial(attempt=attempt, otherwise=lambda why: Leave(reason=why))

    walker = _walk(MODEL, tried)
    assert seen == ["outer"]
    assert walker.ctx.budget.state() == (3, 0)  # (the inner charge given back)
    notes = walker.edits.recorder.report.notes
    assert notes == (["inner fails"] if depth > 1 else ["outer only"])


# -- the driver: ordered patterns, each on the node the ones before it left -------------------


def _driven(patterns: list[Pattern[None]]) -> Walker:
    """A walk whose Relu is given to ``patterns`` in order."""

    def transfer(ctx: Context, node: ir.Node, scope: Scope) -> Proposal:
        return drive(ctx, node, scope, patterns, Drive(None))

    return _walk(MODEL, transfer)


def _noting(name: str, *, passes: bool = False) -> Pattern[None]:
    """A pattern that notes its name and the drive's changes, then ends the drive (or passes
    the node on, changed)."""

    def run(ctx: Context, node: ir.Node, scope: Scope, at: Drive[None]) -> Proposal:
        text = f"{name} after {sorted(at.changed)}"
        if passes:
            return Next(node=node, changed=True, said=Said(notes=[text]))
        return Fold(said=Said(notes=[text]))

    return Pattern(name, run)


def _skipped(name: str, seen: list[str]) -> Pattern[None]:
    def run(ctx: Context, node: ir.Node, scope: Scope, at: Drive[None]) -> Proposal | None:
        seen.append(name)
        return None

    return Pattern(name, run)


def test_the_first_pattern_that_proposes_ends_the_drive_unless_it_passes_the_node_on() -> None:
    seen: list[str] = []
    patterns = [_skipped("a", seen), _noting("b", passes=True), _skipped("c", seen)]
    patterns += [_noting("d"), _skipped("e", seen)]
    walker = _driven(patterns)
    assert seen == ["a", "c"]  # (e is never asked: d ended the drive)
    assert walker.edits.recorder.report.notes == ["b after []", "d after ['b']"]


def test_a_drive_that_no_pattern_takes_leaves_the_node() -> None:
    seen: list[str] = []
    walker = _driven([_skipped("a", seen), _skipped("b", seen)])
    relu = next(iter(walker.model.graph))  # type: ignore[attr-defined]
    assert seen == ["a", "b"]
    assert relu not in walker.facts.reasons and walker.edits.recorder.report.notes == []


def test_the_next_patterns_get_the_node_a_step_names_after_a_rebuild() -> None:
    """A Next given by a pattern's later step (as after a rebuild) hands that step's node on:
    the patterns after it see the node it names, not the one the drive began with."""
    got: list[str] = []

    def rebuilds(ctx: Context, node: ir.Node, scope: Scope, at: Drive[None]) -> Proposal:
        other = ir.node("Neg", [node.inputs[0]], name="rebuilt")
        return Outcome(then=lambda _: Next(node=other, changed=True))

    def reads(ctx: Context, node: ir.Node, scope: Scope, at: Drive[None]) -> Proposal:
        got.append(f"{node.name} after {sorted(at.changed)}")
        return Fold()

    _driven([Pattern("rebuilds", rebuilds), Pattern("reads", reads)])
    assert got == ["rebuilt after ['rebuilds']"]


def test_a_failed_trial_passes_the_node_on_from_its_otherwise() -> None:
    """A pattern's trial that fails is undone whole, and its ``otherwise``'s Next hands the
    node to the patterns after it (their work is kept, the trial's is not)."""

    def tries(ctx: Context, node: ir.Node, scope: Scope, at: Drive[None]) -> Proposal:
        attempt = Outcome(
            records=[Record("sequence-length", "tried")],
            charge=(4, 0),
            then=lambda _: Reason("copies", "the attempt fails"),
        )
        return Trial(
            attempt=attempt, otherwise=lambda why: Next(node=node, said=Said(notes=[str(why)]))
        )

    walker = _driven([Pattern("tries", tries), _noting("after")])
    assert walker.edits.recorder.report.notes == ["the attempt fails", "after after []"]
    assert walker.edits.recorder.report.rewrites == []
    assert walker.ctx.budget.state() == (0, 0)


# -- one table: what a dry walk's Loop row proves ---------------------------------------------


def test_the_dry_walk_proves_a_grown_lists_elements_and_its_body_through_the_loop_row() -> None:
    """The element shape of a list a Loop grows (read at a run-time position) is induction's,
    found by the Loop's row of the dry table (no pass of its own): declared on the loop's
    output and on the body's tensors, and named as proven; the nodes stay."""
    from seqpasses.passes.analysis import analyze

    text = (
        HEADER
        + """
    g (float[2,3] x, int64 n, int64 k) => (int64 length) {
        empty = SequenceEmpty <dtype: int = 1> ()
        out = Loop (n, , empty) <body = step (int64 i, bool c, seq(float) acc) => (bool c2,
                seq(float) acc2) {
            c2 = Identity (c)
            doubled = Add (x, x)
            acc2 = SequenceInsert (acc, doubled)
        }>
        kth = SequenceAt (out, k)
        length = Size (kth)
    }
    """
    )
    model = ir.from_proto(onnx.parser.parse_model(text))
    before = [n.op_type for n in model.graph]
    analysis = analyze(model)
    loop = next(n for n in model.graph if n.op_type == "Loop")
    body = loop.attributes["body"].as_graph()
    doubled = next(n for n in body if n.op_type == "Add").outputs[0]
    assert [n.op_type for n in model.graph] == before
    assert loop.outputs[0] in analysis.proven and doubled in analysis.proven
    assert loop.outputs[0].shape == ir.Shape([2, 3])
    assert doubled.shape == ir.Shape([2, 3])


def test_a_list_whose_elements_differ_in_rank_is_proven_nothing() -> None:
    text = (
        HEADER
        + """
    g (float[2,3] x, float[3] y, int64 n) => (int64 length) {
        start = SequenceConstruct (y)
        out = Loop (n, , start) <body = step (int64 i, bool c, seq(float) acc) => (bool c2,
                seq(float) acc2) {
            c2 = Identity (c)
            acc2 = SequenceInsert (acc, x)
        }>
        length = SequenceLength (out)
    }
    """
    )
    from seqpasses.passes.analysis import analyze

    model = ir.from_proto(onnx.parser.parse_model(text))
    analysis = analyze(model)
    loop = next(n for n in model.graph if n.op_type == "Loop")
    assert loop.outputs[0] not in analysis.proven
    assert loop.outputs[0].shape is None


# -- the shape oracle finds, the applier declares ------------------------------------------


def _untyped_sum() -> tuple[ir.Model, ir.Value]:
    model = ir.from_proto(
        onnx.parser.parse_model(
            HEADER + "g (float[2,3] x) => (float[2,3] y) {\n  s = Add(x, x)\n  y = Relu(s)\n}"
        )
    )
    total = next(n for n in model.graph if n.op_type == "Add").outputs[0]
    total.type, total.shape = None, None
    return model, total


def test_the_shape_oracle_keeps_what_it_finds_and_writes_nothing() -> None:
    from seqpasses.core.shapes import ShapeOracle

    _, total = _untyped_sum()
    oracle = ShapeOracle(18)
    assert oracle.shape(total) == ir.Shape([2, 3])
    assert oracle.type(total) == ir.TensorType(ir.DataType.FLOAT)
    assert total.type is None and total.shape is None  # (nothing written)
    assert oracle.settle() == {total: (ir.TensorType(ir.DataType.FLOAT), ir.Shape([2, 3]))}
    assert oracle.settle() == {}


def test_a_pass_of_its_own_has_what_the_oracle_finds_declared_at_once() -> None:
    from seqpasses.core.shapes import ShapeOracle

    _, total = _untyped_sum()
    oracle = ShapeOracle(18, writes=True)
    oracle.shape(total)
    assert total.shape == ir.Shape([2, 3]) and oracle.settle() == {}


def test_what_a_transfer_asked_the_oracle_is_declared_by_the_applier() -> None:
    model, total = _untyped_sum()
    asked: list[bool] = []

    def ask(ctx: Context, node: ir.Node, scope: Scope) -> Proposal:
        assert scope.shapes.shape(total) == ir.Shape([2, 3])
        asked.append(total.shape is None)  # (not written while the transfer runs)
        return Leave()

    walker = Walker({("Relu", "*"): Entry(ask)}, FoldOptions(), Report())
    walker.run_model(model, 18)
    assert asked == [True]
    assert total.shape == ir.Shape([2, 3])  # (the applier declared it)

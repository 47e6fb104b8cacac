"""Each transfer family on its own: a node and the facts the walk has gathered up to it, the
transfer called once, the Outcome it returns asserted, and the model serialized before and
after the call compared byte for byte (a transfer changes nothing: the applier writes).

The facts come from a real walk of the model up to the node (every node before it walked and
applied as in a run); the node's own transfer is then called directly instead of applied.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import onnx
import onnx_ir as ir
import pytest

from seqpasses.core.sequence import StackedSequence, StaticSequence
from seqpasses.options import FoldOptions
from seqpasses.report import Report
from seqpasses.transfer.table import DRY_TABLE, TABLE
from seqpasses.walk.outcomes import (
    Fold,
    Leave,
    Listed,
    Outcome,
    Proposal,
    Replace,
    Restructure,
    Trial,
)
from seqpasses.walk.scope import Scope
from seqpasses.walk.tape import Tape
from seqpasses.walk.walker import Walker

HEADER = '<ir_version: 8, opset_import: ["" : 18]>\n'


@dataclass
class Called:
    """What one call of a transfer gave: its proposal, the nodes on its tape, and whether
    the model serialized before and after the call is the same."""

    proposal: Proposal
    tape: Tape
    unchanged: bool
    node: ir.Node


class _Probe(Walker):
    """A walk that, at the first node of ``op_type`` (at any depth), calls its transfer once
    and keeps what it gave instead of applying it; every other node is walked as in a run."""

    def __init__(self, model: ir.Model, op_type: str, dry: bool) -> None:
        super().__init__(DRY_TABLE if dry else TABLE, FoldOptions(), Report(), dry=dry)
        self.model = model
        self.op_type = op_type
        self.called: Called | None = None

    def _run(self, transfer: Any, node: ir.Node, scope: Scope) -> bool:
        if node.op_type != self.op_type or self.called is not None:
            return super()._run(transfer, node, scope)
        # (what the shape oracle infers on demand it keeps: the applier declares it, so the
        # model's bytes are compared as they are, nothing inferred first)
        before = ir.serde.serialize_model(self.model).SerializeToString()
        tape = Tape(self.edits)
        self.ctx.owner = tape
        try:
            proposal = transfer(self.ctx, node, scope)
        finally:
            self.ctx.owner = self.edits
        after = ir.serde.serialize_model(self.model).SerializeToString()
        self.called = Called(proposal, tape, before == after, node)
        return True


def call(text: str, op_type: str, dry: bool = False) -> Called:
    """Walk the model ``text`` (ONNX textual syntax, opset 18) to its first ``op_type`` node
    and call that node's transfer."""
    model = ir.serde.deserialize_model(onnx.parser.parse_model(HEADER + text))
    probe = _Probe(model, op_type, dry)
    probe.run_model(model, 18)
    assert probe.called is not None, f"no {op_type} was visited"
    assert probe.called.unchanged, "the transfer changed the model"
    return probe.called


def ops(tape: Tape) -> list[str]:
    return [node.op_type for _, _, node in tape.entries]


def records(outcome: Outcome) -> list[str]:
    return [record.rule for record in outcome.records]


# -- sequence_ops -----------------------------------------------------------------------


def test_sequence_construct_folds_to_its_elements() -> None:
    got = call(
        "g (float[2] x, float[3] y) => (float[5] z) {\n"
        "  s = SequenceConstruct(x, y)\n  z = ConcatFromSequence<axis = 0>(s)\n}",
        "SequenceConstruct",
    )
    assert isinstance(got.proposal, Fold)
    [(out, seq)] = got.proposal.values.items()
    assert isinstance(seq, StaticSequence)
    assert [e.name for e in seq.elements] == ["x", "y"]
    assert got.proposal.learned is not None and got.proposal.learned.canonical == {out: seq}
    assert not got.tape.entries


def test_sequence_at_replaces_its_output_by_the_element() -> None:
    got = call(
        "g (float[2] x, float[3] y) => (float[3] z) {\n"
        "  s = SequenceConstruct(x, y)\n  i = Constant<value = int64 {-1}>()\n"
        "  z = SequenceAt(s, i)\n}",
        "SequenceAt",
    )
    assert isinstance(got.proposal, Replace)
    [(old, new)] = got.proposal.uses
    assert (old.name, new.name) == ("z", "y")
    assert records(got.proposal) == ["sequence-at"]


def test_sequence_at_out_of_range_is_left_with_its_reason() -> None:
    got = call(
        "g (float[2] x) => (float[2] z) {\n"
        "  s = SequenceConstruct(x)\n  i = Constant<value = int64 {3}>()\n"
        "  z = SequenceAt(s, i)\n}",
        "SequenceAt",
    )
    assert isinstance(got.proposal, Leave) and not got.proposal.handled
    assert got.proposal.reason is not None and got.proposal.reason.kind == "out-of-range"


def test_sequence_length_is_a_constant_on_the_tape() -> None:
    got = call(
        "g (float[2] x) => (int64 n) {\n  s = SequenceConstruct(x, x)\n  n = SequenceLength(s)\n}",
        "SequenceLength",
    )
    assert isinstance(got.proposal, Replace)
    [(_, new)] = got.proposal.uses
    assert ops(got.tape) == ["Constant"]
    assert new.producer() is got.tape.entries[0][2]
    assert new.const_value is not None and int(new.const_value.numpy()) == 2


def test_concat_from_sequence_is_a_concat_on_the_tape() -> None:
    got = call(
        "g (float[2] x, float[3] y) => (float[5] z) {\n"
        "  s = SequenceConstruct(x, y)\n  z = ConcatFromSequence<axis = 0>(s)\n}",
        "ConcatFromSequence",
    )
    assert isinstance(got.proposal, Replace)
    assert ops(got.tape) == ["Concat"]
    assert records(got.proposal) == ["concat-from-sequence"]


# -- split_to_sequence, unit_split ------------------------------------------------------


def test_split_to_sequence_folds_to_the_outputs_of_a_split() -> None:
    got = call(
        "g (float[4, 3] x) => (float[3] z) {\n"
        "  s = SplitToSequence<axis = 0, keepdims = 0>(x)\n  i = Constant<value = int64 {0}>()\n"
        "  z = SequenceAt(s, i)\n}",
        "SplitToSequence",
    )
    assert isinstance(got.proposal, Fold)
    [seq] = got.proposal.values.values()
    assert isinstance(seq, StaticSequence) and len(seq) == 4
    assert ops(got.tape).count("Split") == 1 and ops(got.tape).count("Squeeze") == 4
    assert records(got.proposal) == ["split-to-sequence"]


def test_a_run_time_read_of_unbind_is_a_checked_gather() -> None:
    got = call(
        "g (float[N, 3] x, int64 i) => (float[3] z) {\n"
        "  s = SplitToSequence<axis = 0, keepdims = 0>(x)\n  z = SequenceAt(s, i)\n}",
        "SequenceAt",
    )
    assert isinstance(got.proposal, Replace)
    assert ops(got.tape) == ["Gather"]
    assert [v.producer() for v in got.tape.checks] == [got.tape.entries[0][2]]
    assert records(got.proposal) == ["sequence-at-split"]


# -- stacked (lists of run-time length) ---------------------------------------------------


def test_an_insert_at_a_run_time_position_holds_the_list_as_one_tensor() -> None:
    got = call(
        "g (float[3] x, int64 p) => (float[?, 3] z) {\n"
        "  s = SequenceConstruct(x, x)\n  t = SequenceInsert(s, x, p)\n"
        "  z = ConcatFromSequence<axis = 0, new_axis = 1>(t)\n}",
        "SequenceInsert",
    )
    assert isinstance(got.proposal, Fold)
    [held] = got.proposal.values.values()
    assert isinstance(held, StackedSequence) and held.length == 3
    assert [(r.rule, r.computed) for r in got.proposal.records] == [("stacked-insert", True)]
    assert "Gather" in ops(got.tape)  # (the position, checked)


# -- control ------------------------------------------------------------------------------

IF_STATIC = """g (bool c, float[2] x, float[2] y) => (float[4] z) {
  s = If(c) <then_branch = t () => (seq(float[2]) a) { a = SequenceConstruct(x, y) },
             else_branch = e () => (seq(float[2]) b) { b = SequenceConstruct(y, x) }>
  z = ConcatFromSequence<axis = 0>(s)
}"""


def test_an_if_whose_branches_make_lists_of_one_length_is_restructured() -> None:
    got = call(IF_STATIC, "If")
    assert isinstance(got.proposal, Restructure)
    assert got.proposal.plan.num_outputs == 2
    [held] = got.proposal.held.values()
    assert isinstance(held, Listed) and list(held.indices) == [0, 1]
    assert records(got.proposal) == ["if-static-sequences"]


def test_an_if_of_a_constant_condition_asks_for_its_branch_inlined() -> None:
    got = call(
        "g (float[2] x) => (float[2] z) {\n  c = Constant<value = bool {1}>()\n"
        "  z = If(c) <then_branch = t () => (float[2] a) { a = Neg(x) },\n"
        "             else_branch = e () => (float[2] b) { b = Abs(x) }>\n}",
        "If",
    )
    assert isinstance(got.proposal, Outcome)
    build = got.proposal.build
    assert build is not None and build.inline is not None and build.inline.count == 1
    assert got.proposal.then is not None and not got.proposal.uses


def test_optionals_fold_and_has_element_is_a_constant() -> None:
    text = "g (float[2] x) => (bool h) {\n  o = Optional(x)\n  h = OptionalHasElement(o)\n}"
    wrapped = call(text, "Optional")
    assert isinstance(wrapped.proposal, Fold)
    assert wrapped.proposal.learned is not None
    assert [v.name for v in wrapped.proposal.learned.optionals.values()] == ["x"]
    has = call(text, "OptionalHasElement")
    assert isinstance(has.proposal, Replace) and ops(has.tape) == ["Constant"]


def test_a_sequence_map_over_a_static_list_is_a_trial_of_its_copies() -> None:
    got = call(
        "g (float[2] x, float[2] y) => (float[4] z) {\n"
        "  s = SequenceConstruct(x, y)\n"
        "  m = SequenceMap(s) <body = b (float[2] e) => (float[2] f) { f = Neg(e) }>\n"
        "  z = ConcatFromSequence<axis = 0>(m)\n}",
        "SequenceMap",
    )
    assert isinstance(got.proposal, Trial)
    build = got.proposal.attempt.build
    assert build is not None and build.inline is not None and build.inline.count == 2
    assert got.proposal.attempt.then is not None


def test_a_sequence_map_over_a_list_of_run_time_length_is_a_trial_of_a_loop() -> None:
    got = call(
        "g (float[N, 2] x) => (float[M] z) {\n"
        "  s = SplitToSequence<axis = 0, keepdims = 0>(x)\n"
        "  m = SequenceMap(s) <body = b (float[2] e) => (float[2] f) { f = Neg(e) }>\n"
        "  z = ConcatFromSequence<axis = 0>(m)\n}",
        "SequenceMap",
    )
    assert isinstance(got.proposal, Trial)
    assert got.proposal.attempt.build is not None
    [(loop, _)] = got.proposal.attempt.build.add
    assert loop.op_type == "Loop" and loop.graph is None  # (built whole, placed by the applier)
    assert got.proposal.drop  # (the copy, emptied if the trial fails)


# -- loops --------------------------------------------------------------------------------

APPEND_LOOP = """g (float[3] x, int64 n) => (float[?, 3] y) {
  t = Constant<value = bool {1}>()
  e = SequenceEmpty<dtype = 1>()
  f = Loop(n, t, e) <body = body (int64 i, bool c, seq(float[3]) a) => (bool co, seq(float[3]) ao) {
    co = Identity(c)
    v = Neg(x)
    ao = SequenceInsert(a, v)
  }>
  y = ConcatFromSequence<axis = 0, new_axis = 1>(f)
}"""


def test_a_loop_that_appends_is_restructured_with_a_scan_output() -> None:
    got = call(APPEND_LOOP, "Loop")
    assert isinstance(got.proposal, Restructure)
    assert records(got.proposal) == ["loop-append-to-scan-output"]
    assert got.proposal.plan.num_outputs == 1
    assert got.proposal.then is not None  # (the readers, once the Loop is rebuilt)


def test_a_loop_of_a_constant_trip_count_that_reads_a_list_is_a_trial_unrolling() -> None:
    got = call(
        "g (float[3] x) => (float[3] y) {\n"
        "  n = Constant<value = int64 {2}>()\n  t = Constant<value = bool {1}>()\n"
        "  s = SequenceConstruct(x, x)\n"
        "  y = Loop(n, t, x) <body = body (int64 i, bool c, float[3] a) => "
        "(bool co, float[3] ao) {\n"
        "    co = Identity(c)\n    e = SequenceAt(s, i)\n    ao = Add(a, e)\n  }>\n}",
        "Loop",
    )
    assert isinstance(got.proposal, Trial)
    build = got.proposal.attempt.build
    assert build is not None and build.inline is not None and build.inline.count == 2
    assert ops(got.tape).count("Constant") >= 2  # (the iteration numbers)


def test_a_loop_of_a_run_time_trip_count_says_why_it_is_not_unrolled() -> None:
    got = call(
        "g (float[3] x, int64 n) => (int64 k) {\n"
        "  t = Constant<value = bool {1}>()\n  s = SequenceConstruct(x, x)\n"
        "  f, k = Loop(n, t, s) <body = body (int64 i, bool c, seq(float[3]) a) => "
        "(bool co, seq(float[3]) ao, int64 m) {\n"
        "    co = Identity(c)\n    m = SequenceLength(a)\n    ao = SequenceInsert(a, x)\n  }>\n}",
        "Loop",
    )
    assert isinstance(got.proposal, Outcome)
    assert got.proposal.said is not None
    assert [(attempt, why[:12]) for _, attempt, why in got.proposal.said.refused] == [
        ("unroll", "trip count '")
    ]
    assert got.proposal.then is not None  # (the ways that follow, once this is said)


def test_the_dry_walk_of_a_loop_only_declares() -> None:
    got = call(APPEND_LOOP, "Loop", dry=True)
    assert isinstance(got.proposal, Leave)
    assert not got.proposal.uses and not got.tape.entries


@pytest.mark.parametrize("op_type", ["SequenceEmpty", "SequenceInsert", "ConcatFromSequence"])
def test_the_dry_walk_proposes_what_the_real_one_does(op_type: str) -> None:
    """A dry walk (analysis) and a real one call the same transfers; only the applier
    differs."""
    text = (
        "g (float[3] x) => (float[2, 3] z) {\n  e = SequenceEmpty<dtype = 1>()\n"
        "  s = SequenceInsert(e, x)\n  u = SequenceInsert(s, x)\n"
        "  z = ConcatFromSequence<axis = 0, new_axis = 1>(u)\n}"
    )
    real, dry = call(text, op_type), call(text, op_type, dry=True)
    assert type(real.proposal) is type(dry.proposal)
    assert records(real.proposal) == records(dry.proposal)  # type: ignore[arg-type]
    assert ops(real.tape) == ops(dry.tape)

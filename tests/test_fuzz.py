"""Property: on random sequence programs, optimize never changes what the model computes.

CI runs a bounded number of examples; scripts/fuzz.py runs long campaigns.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import onnx
import onnx_ir as ir
from hypothesis import HealthCheck, given, settings

import seqpasses
from fuzz_programs import loop_programs, nested_programs, programs
from fuzz_stacked import StackedProgram, carried_programs, stacked_programs
from helpers import refold_modified, sequence_op_count
from seqpasses.report import Report


def check_program(model: onnx.ModelProto, inputs: list[dict[str, Any]] | None = None) -> None:
    try:
        onnx.checker.check_model(model)
        valid = True
    except Exception:
        valid = False
    # optimize_ir: the passes and the self-check, without the input policy of optimize() (some
    # programs use an op or type at an opset that has none: neither checker nor ORT takes them)
    said = Report()
    held = ir.serde.deserialize_model(model)
    optimized = ir.serde.serialize_model(seqpasses.optimize_ir(held, report=said))
    if valid:
        onnx.checker.check_model(optimized)
    text = onnx.printer.to_text(model)
    assert [o.name for o in optimized.graph.output] == [o.name for o in model.graph.output], text
    assert sequence_op_count(optimized) <= sequence_op_count(model), text
    # a failure at run time must be kept: both fail on it, or both run and agree (a node
    # dead in the model fails as it did: seqpasses removes only what its rewrites made dead)
    report = seqpasses.verify(model, optimized, runs=1, inputs=inputs, failures="must_match")
    assert report.ok, (
        f"{report.mismatch}\n{onnx.printer.to_text(model)}\n{onnx.printer.to_text(optimized)}"
    )
    # a second run changes nothing, where the first changed the model (where it gave it back
    # unchanged, as one whose rewrite onnx's full check would reject, the passes alone would)
    assert said.unchanged or refold_modified(optimized) is False, text


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(programs())
def test_random_programs_keep_their_outputs(model: onnx.ModelProto) -> None:
    check_program(model)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(loop_programs())
def test_random_loops_keep_their_outputs(model: onnx.ModelProto) -> None:
    check_program(model)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(nested_programs())
def test_random_nested_control_flow_keeps_its_outputs(model: onnx.ModelProto) -> None:
    check_program(model)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(stacked_programs())
def test_random_run_time_positions_keep_their_outputs_and_failures(program: StackedProgram) -> None:
    check_program(program.model, program.inputs)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(carried_programs())
def test_random_loops_editing_their_list_at_run_time_keep_their_outputs(
    program: StackedProgram,
) -> None:
    check_program(program.model, program.inputs)


def test_found_length_of_a_map_over_a_list_erased_at_a_run_time_position_keeps_its_check() -> None:
    """Found by scripts/fuzz.py --stacked (seed 12): the length of a SequenceMap's output over a
    list erased at run time was folded to 0, dropping the erase's out-of-range failure."""
    model = onnx.parser.parse_model(
        """
        <ir_version: 8, opset_import: ["" : 17]>
        g (float[1,1] x0, float[1,1] x1, int64 p) => (int64 n) {
            s1 = SequenceConstruct (x0)
            s2 = SequenceErase (s1, p)
            s3 = SequenceMap (s2, x1) <body = b (float[1,1] e, float[1,1] v) => (float[1,1] o) {
                o = Add (e, v)
            }>
            n = SequenceLength (s3)
        }
        """
    )
    x = np.ones((1, 1), np.float32)
    inputs = [{"x0": x, "x1": x, "p": np.array(p, np.int64)} for p in (0, -1, 1, -2)]
    check_program(model, inputs)
    assert sequence_op_count(seqpasses.optimize(model)) == 0


def test_found_what_only_a_dead_branch_node_read_goes_in_one_run() -> None:
    """Found by scripts/fuzz.py --nested (seed 14): after unrolling, a SequenceAt left dead in
    a branch still read the first iteration's list, which kept that iteration's nodes alive
    until a second run removed them (subgraphs are now cleaned before their graph)."""
    model = onnx.parser.parse_model(
        """
        <ir_version: 7, opset_import: ["" : 13]>
        g (float[2,3] x, bool flag) => (float[2,3] r) {
            n = Constant <value = int64 {2}> ()
            t = Constant <value = bool {1}> ()
            init = SequenceConstruct (x)
            final, state = Loop (n, t, init, x) <body = body (int64 i, bool c, seq(float) l,
                                                             float[2,3] h)
                                                     => (bool co, seq(float) lo, float[2,3] ho) {
                fi = Cast <to = 1> (i)
                e = Mul (h, fi)
                ho = Add (h, x)
                b = If (flag) <else_branch = el () => (float[2,3] y) {
                    y = Identity (e)
                }, then_branch = th () => (float[2,3] z) {
                    zero = Constant <value = int64 {0}> ()
                    top = SequenceAt (l, zero)
                    z = Add (top, e)
                }>
                lo = SequenceInsert (l, b)
                co = Identity (c)
            }>
            last = Constant <value = int64 {-1}> ()
            r = SequenceAt (final, last)
        }
        """
    )
    check_program(model)  # includes: a second run changes nothing
    optimized = seqpasses.optimize(model)
    assert sequence_op_count(optimized) == 0
    assert [n.op_type for n in optimized.graph.node].count("Cast") == 1  # one iteration's


def test_found_a_model_given_back_unchanged_is_checked_as_it_was_given() -> None:
    """Found by the default (random) profile of this file: the rewrite of a concatenation at
    an axis its elements lack would be rejected by onnx's full check, so the model goes back
    unchanged; the passes alone, asked again, rewrite it: a second run is compared only where
    the first changed the model."""
    model = onnx.parser.parse_model(
        """
        <ir_version: 6, opset_import: ["" : 11]>
        fuzz (float[1,1] x0) => (int64 n4, float[] y5, seq(float[]) s3) {
            s1 = SequenceConstruct (x0)
            c2 = Constant <value: tensor = int64 c2_v {1}> ()
            s3 = SplitToSequence <axis: int = 0, keepdims: int = 0> (x0, c2)
            n4 = SequenceLength (s3)
            y5 = ConcatFromSequence <axis: int = -2, new_axis: int = 0> (s3)
        }
        """
    )
    said = Report()
    seqpasses.optimize_ir(ir.serde.deserialize_model(model), report=said)
    assert said.unchanged  # (the reason the test above makes room for)
    check_program(model)

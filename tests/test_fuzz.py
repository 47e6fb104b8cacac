"""Property: on random straight-line sequence programs, optimize never changes what the model computes.

CI runs a bounded number of examples; scripts/fuzz.py runs long campaigns.
"""

from __future__ import annotations

import onnx
import onnx_ir as ir
import onnx_ir.passes.common as common_passes
from hypothesis import HealthCheck, given, settings

import seqpasses
from fuzz_programs import loop_programs, nested_programs, programs
from helpers import refold_modified, sequence_op_count


def without_dead_code(model: onnx.ModelProto) -> onnx.ModelProto:
    """The baseline: a node whose result reaches no output is not part of what a model computes."""
    graph = ir.serde.deserialize_model(model)
    common_passes.RemoveUnusedNodesPass()(graph)
    return ir.serde.serialize_model(graph)


def check_program(model: onnx.ModelProto) -> None:
    try:
        onnx.checker.check_model(model)
        valid = True
    except Exception:
        valid = False
    optimized = seqpasses.optimize(model)
    if valid:
        onnx.checker.check_model(optimized)
    text = onnx.printer.to_text(model)
    assert [o.name for o in optimized.graph.output] == [o.name for o in model.graph.output], text
    assert sequence_op_count(optimized) <= sequence_op_count(model), text
    # a failure at run time must be kept: both fail on it, or both run and agree
    report = seqpasses.verify(without_dead_code(model), optimized, runs=1, failures="must_match")
    assert report.ok, (
        f"{report.mismatch}\n{onnx.printer.to_text(model)}\n{onnx.printer.to_text(optimized)}"
    )
    assert refold_modified(optimized) is False, text


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

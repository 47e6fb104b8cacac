"""The shared conformance cases: optimized models still produce the stored outputs.

Reads ../shared/conformance/ when it exists and skips cleanly when it does not.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import onnx
import onnxruntime as ort
import pytest
from onnx.reference import ReferenceEvaluator

import seqpasses
from helpers import conformance_cases, load_case, refold_modified, sequence_op_count
from seqpasses.verification import compare as _compare

CASES = conformance_cases()
pytestmark = pytest.mark.skipif(not CASES, reason="../shared/conformance/ is not present")


def _reference(model: onnx.ModelProto, feeds: dict[str, Any]) -> list[Any] | None:
    try:
        return list(ReferenceEvaluator(model).run(None, feeds))
    except Exception:
        return None


def _ort(model: onnx.ModelProto, feeds: dict[str, Any]) -> list[Any] | None:
    try:
        session = ort.InferenceSession(
            model.SerializeToString(), providers=["CPUExecutionProvider"]
        )
        return list(session.run(None, feeds))
    except Exception:
        return None


def _matches(got: list[Any] | None, expected: list[Any]) -> bool:
    if got is None or len(got) != len(expected):
        return False
    return all(
        not _compare(f"out{i}", g, e) for i, (g, e) in enumerate(zip(got, expected, strict=False))
    )


def _ids() -> list[str]:
    return [f"{p.parent.name}/{p.name}" for p in CASES]


@pytest.mark.parametrize("case", CASES, ids=_ids())
@pytest.mark.parametrize("freeze", [False, True], ids=["default", "freeze-inputs"])
def test_case_keeps_its_outputs(case: Path, freeze: bool) -> None:
    model, feeds, expected, _meta = load_case(case)
    optimized = seqpasses.optimize(model, freeze_inputs=freeze)
    onnx.checker.check_model(optimized, full_check=True)
    assert [o.name for o in optimized.graph.output] == [o.name for o in model.graph.output]
    checked = 0
    for run in (_reference, _ort):
        if _matches(run(model, feeds), expected):
            checked += 1
            assert _matches(run(optimized, feeds), expected), (
                f"{run.__name__} differs after optimizing"
            )
    assert checked, "neither evaluator reproduces the stored outputs of the original model"
    assert refold_modified(optimized, freeze_inputs=freeze) is False


@pytest.mark.parametrize("case", CASES, ids=_ids())
def test_case_reaches_its_expectation(case: Path) -> None:
    model, _, _, meta = load_case(case)
    before = sequence_op_count(model)
    after = sequence_op_count(seqpasses.optimize(model))
    assert after <= before
    if meta["expect"] == "full":
        assert after == 0


FROZEN_FULL = [
    "test_sequence_model1",
    "test_sequence_model2",
    "test_sequence_model3",
    "test_sequence_model7",
]


@pytest.mark.parametrize("name", FROZEN_FULL)
def test_frozen_inputs_remove_every_sequence_op(name: str) -> None:
    case = next((c for c in CASES if c.name == name), None)
    if case is None:
        pytest.skip(f"{name} is not in the conformance set")
    model, _, _, _ = load_case(case)
    assert sequence_op_count(seqpasses.optimize(model, freeze_inputs=True)) == 0

"""Every file in rules/ is a test: structure, numbers, checker, and a second run that changes nothing."""

from __future__ import annotations

from pathlib import Path

import onnx
import pytest

import seqpasses
from helpers import RULES, io_signature, op_counts, parse_rule, refold_modified

RULE_FILES = sorted(RULES.glob("*.rule"))


def test_catalogue_is_not_empty() -> None:
    assert len(RULE_FILES) >= 30


@pytest.mark.parametrize("path", RULE_FILES, ids=[p.stem for p in RULE_FILES])
def test_rule(path: Path) -> None:
    rule = parse_rule(path)
    assert rule.identity, f"{path.name} has no '# identity:' line"
    onnx.checker.check_model(rule.before, full_check=True)
    onnx.checker.check_model(rule.after, full_check=True)

    given = rule.before.SerializeToString(deterministic=True)
    optimized = seqpasses.optimize(rule.before, **rule.options)
    # the caller's ModelProto is not changed (the IR wraps its tensors, it does not copy them)
    assert rule.before.SerializeToString(deterministic=True) == given

    # structure: exactly the ops the catalogue says remain
    assert op_counts(optimized) == op_counts(rule.after)
    # the model is valid and keeps its interface
    onnx.checker.check_model(optimized, full_check=True)
    assert io_signature(optimized) == io_signature(rule.before)
    # numbers: before vs optimized, and the catalogue's after vs optimized
    # (a model that fails at run time must still fail: both fail, or both run and agree)
    strict = rule.options.get("strict_spec", False)
    inputs = [rule.inputs] * 3 if rule.inputs else None
    check = {"strict_spec": strict, "inputs": inputs, "failures": "must_match"}
    report = seqpasses.verify(rule.before, optimized, use_ort=not strict, **check)  # type: ignore[arg-type]
    if rule.runnable:
        assert report.ok, report.mismatch
        report = seqpasses.verify(rule.after, optimized, **check)  # type: ignore[arg-type]
        assert report.ok, report.mismatch
    else:  # the verifier says so, and never calls it agreement
        assert report.status == "not verified" and str(report).startswith("not verified: ")
    # converged: a second run changes nothing
    assert refold_modified(optimized, **rule.options) is False

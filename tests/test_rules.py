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
    strict = rule.options.get("strict_spec", False)
    report = seqpasses.verify(rule.before, optimized, strict_spec=strict, use_ort=not strict)
    assert report.ok, report.mismatch
    report = seqpasses.verify(rule.after, optimized, strict_spec=strict)
    assert report.ok, report.mismatch
    # converged: a second run changes nothing
    assert refold_modified(optimized, **rule.options) is False

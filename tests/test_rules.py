"""Every file in rules/ is a test: structure, numbers, checker, and a second run that changes nothing."""

from __future__ import annotations

from pathlib import Path

import onnx
import pytest

import seqpasses
from helpers import RULES as RULES_DIR
from helpers import io_signature, op_counts, parse_rule, refold_modified
from seqpasses.core.sequence import REASON_KINDS
from seqpasses.transfer.table import RULES

RULE_FILES = sorted(RULES_DIR.glob("*.rule"))


def test_catalogue_is_not_empty() -> None:
    assert len(RULE_FILES) >= 30


def test_the_catalogue_covers_the_registry() -> None:
    # every registered rewrite is shown by some rule file, and every file names a rewrite id
    # or a reason kind that exists
    named = {parse_rule(path).rule for path in RULE_FILES}
    missing = sorted(set(RULES) - named)
    assert not missing, f"registered rewrites with no rules/*.rule file: {missing}"
    unknown = sorted(named - set(RULES) - set(REASON_KINDS) - {"none"})
    assert not unknown, f"rule files naming no known rewrite or reason kind: {unknown}"


@pytest.mark.parametrize("path", RULE_FILES, ids=[p.stem for p in RULE_FILES])
def test_rule(path: Path) -> None:
    rule = parse_rule(path)
    assert rule.identity, f"{path.name} has no '# identity:' line"
    onnx.checker.check_model(rule.before, full_check=True)
    onnx.checker.check_model(rule.after, full_check=True)

    assert rule.rule, f"{path.name} has no '# rule:' line"
    given = rule.before.SerializeToString(deterministic=True)
    report = seqpasses.Report()
    optimized = seqpasses.optimize(rule.before, report=report, **rule.options)
    # the file shows what its header says: that rewrite applied, or a node left for that kind
    applied = {r.rule for r in report.rewrites}
    assert applied <= set(RULES), f"unregistered rewrite ids: {applied - set(RULES)}"
    if rule.rule in RULES:
        assert rule.rule in applied, (rule.rule, applied)
    elif rule.rule != "none":
        assert rule.rule in {r.kind for r in report.left}, [r.kind for r in report.left]
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

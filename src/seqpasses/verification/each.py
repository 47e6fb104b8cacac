"""Each evaluator on its own input sets, whole models: the fuzzers' mode
(``failures="must_match"``), and the fallback when ONNX Runtime is missing or cannot load the
original (see :func:`seqpasses.verification.verify`)."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from seqpasses.verification.engines import (
    Held,
    Runner,
    ort_missing,
    outcome,
    reference,
    runtime,
)
from seqpasses.verification.inputs import DrawError, random_inputs
from seqpasses.verification.report import EngineResult, VerifyReport, scan_outputs
from seqpasses.verification.values import compare

__all__ = ["verify_each"]


def verify_each(
    before: Held,
    after: Held,
    *,
    runs: int,
    seed: int,
    strict_spec: bool,
    use_ort: bool,
    inputs: Sequence[Mapping[str, Any]] | None,
    failures: Literal["skip", "must_match"],
    budget_s: float | None,
) -> VerifyReport:
    """Each evaluator on its own input sets, whole models (the fuzzers' mode, and the
    fallback when ONNX Runtime is missing): an input set the original fails on is drawn again
    (``failures="skip"``) or must fail on the optimized model too (``"must_match"``)."""
    first, second = before, after
    report = VerifyReport(scans=scan_outputs(second.proto))
    names = [out.name for out in first.proto.graph.output]
    engines: list[tuple[EngineResult, Runner | str, Runner | str]] = [
        (
            EngineResult("onnx.reference"),
            reference(first, strict_spec),
            reference(second, strict_spec),
        )
    ]
    if use_ort:
        missing = ort_missing()
        if missing:
            report.results.append(EngineResult("onnxruntime", why=missing))
        else:
            engines.append((EngineResult("onnxruntime"), runtime(first), runtime(second)))
    report.results[:0] = [result for result, _, _ in engines]
    given = list(inputs) if inputs is not None else None
    draws = len(given) if given is not None else max(4 * runs, 1)
    wanted = len(given) if given is not None else runs
    failed_first: dict[str, str] = {}
    stopped: set[str] = set()  # evaluators over their time budget
    for draw in range(draws):
        active = [
            e
            for e in engines
            if e[0].compared < wanted and not isinstance(e[1], str) and e[0].name not in stopped
        ]
        if not active:
            break
        chosen = given[draw] if given is not None else {}
        try:
            feeds = random_inputs(first.proto, seed + draw, given=chosen)
        except DrawError as error:
            for result, _, _ in active:
                failed_first.setdefault(result.name, str(error))
            break
        feeds.update(chosen)
        for result, run_before, run_after in active:
            start = time.perf_counter()
            out_b, err_b = outcome(run_before, feeds)
            out_a, err_a = (
                (None, "") if out_b is None and failures == "skip" else outcome(run_after, feeds)
            )
            result.seconds += time.perf_counter() - start
            where = f"input set {draw}" + ("" if given is not None else f" (seed {seed + draw})")
            if out_b is None:
                result.original_failed += 1
                failed_first.setdefault(result.name, err_b)
                if failures == "skip":
                    continue
                if out_a is not None:
                    report.mismatch = (
                        f"{where}: {result.name}: original failed ({err_b}) but optimized ran"
                    )
                    return report
                result.compared += 1
                continue
            if out_a is None:
                report.mismatch = (
                    f"{where}: {result.name}: optimized failed ({err_a}) but original ran"
                )
                return report
            for name, x, y in zip(names, out_b, out_a, strict=False):
                diff = compare(name, x, y)
                if diff and not report.tolerates(name, x, y):
                    report.mismatch = f"{where}: {result.name}: {diff}"
                    return report
            result.compared += 1
            each = result.seconds / result.compared
            if (
                budget_s is not None
                and result.compared < wanted
                and result.seconds + each > budget_s
            ):
                report.notes.append(
                    f"{result.name}: compared {result.compared} of {wanted} input set(s): "
                    f"one takes {each:.1f} s (budget {budget_s:g} s per evaluator)"
                )
                stopped.add(result.name)
    for result, run_before, _ in engines:
        if isinstance(run_before, str):
            result.why = f"could not load the original ({run_before})"
        elif not result.compared:
            why = failed_first.get(result.name, "no input set")
            result.why = f"could not run the original on any input set ({why})"
        if result.original_failed and failures == "skip" and result.compared:
            report.notes.append(
                f"part of the verdict: {result.original_failed} input set(s) were set aside, "
                f"the original itself fails on them ({result.name}: "
                f"{failed_first[result.name]}); {result.name} compared the others"
            )
    return report

"""Both evaluators on the same input sets, those ONNX Runtime runs the original on: ONNX
Runtime compares the whole models; ``onnx.reference`` the whole models too when they are
small, else only the region the rewrite changed, on the values ONNX Runtime's run of the
original gives its inputs (see :func:`seqpasses.verification.verify`)."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from seqpasses.progress import stage
from seqpasses.verification.each import verify_each
from seqpasses.verification.engines import (
    PAST_BOUND,
    Held,
    Runner,
    outcome,
    reference,
    runtime,
)
from seqpasses.verification.inputs import DrawError, random_inputs
from seqpasses.verification.region import (
    Region,
    changed_region,
    output_positions,
    with_outputs,
)
from seqpasses.verification.report import EngineResult, VerifyReport, scan_outputs
from seqpasses.verification.values import compare

__all__ = ["REGION_MIN_NODES", "verify_shared"]

REGION_MIN_NODES = 200
"""From this many main-graph nodes, onnx.reference interprets only the changed region (its
inputs captured from ONNX Runtime's run of the original) instead of the whole models."""

REGION_MIN_BYTES = 1 << 20
"""From this many bytes of weights, too: a conv net's reference run is seconds per input set
(timm's VoVNet, 26 MB: 4-6 s), and its weights would all be read into memory; the changed
region reads the region's weights only (usually none)."""

_SCALES = (1, 4, 16, 64, 256)
"""How much larger each retry draws the dims the model leaves free, after the original fails
on a draw (a reflect Pad needs a signal longer than its padding)."""

_HINT = "give inputs it runs on: --check-inputs FILE.npz, or --input-shape NAME:D1,D2,..."


@dataclass
class _Draw:
    feeds: dict[str, Any]
    where: str
    outputs: list[Any]  # the original's outputs on ONNX Runtime, then the captured values


def _clip(text: str, width: int = 160) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


def _draws(
    first: Held,
    judge: Runner,
    result: EngineResult,
    *,
    runs: int,
    seed: int,
    given: Sequence[Mapping[str, Any]] | None,
    budget_s: float | None,
) -> tuple[list[_Draw], str]:
    """Input sets the original runs on, judged by ONNX Runtime (failed draws count against its
    budget): the caller's, else seeded random ones, the free dims grown after each failure.
    Returns them and the first failure's message; ``result.why`` says why when no set could
    be drawn at all (shapes too large)."""
    accepted: list[_Draw] = []
    first_error = ""
    attempts = len(given) if given is not None else max(4 * runs, 2 * len(_SCALES))
    scale_index = 0
    began = time.perf_counter()
    for draw in range(attempts):
        if len(accepted) >= (len(given) if given is not None else runs):
            break
        # (the budget counts the drawing too: on a tiny model it is most of the time)
        if budget_s is not None and draw and time.perf_counter() - began > budget_s:
            break
        scale = _SCALES[min(scale_index, len(_SCALES) - 1)]
        chosen = given[draw] if given is not None else {}
        try:
            feeds = random_inputs(first.proto, seed + draw, scale=scale, given=chosen)
        except DrawError as refused:
            result.why = str(refused)
            break
        feeds.update(chosen)
        where = f"input set {draw}" + ("" if given is not None else f" (seed {seed + draw})")
        start = time.perf_counter()
        outputs, error = outcome(judge, feeds)
        seconds = time.perf_counter() - start
        result.seconds += seconds
        if outputs is None:
            result.original_failed += 1
            first_error = first_error or error
            scale_index += 1
            if error.startswith(PAST_BOUND):
                break  # (larger inputs would need more still)
            # (a draw the original fails on is looked for with at most half the budget:
            # the next one's free dims are 4 times larger, and so, near enough, its run)
            spent = time.perf_counter() - began
            if budget_s is not None and not accepted and spent + 4 * seconds > budget_s / 2:
                break
            continue
        accepted.append(_Draw(feeds, where, outputs))
    return accepted, first_error


def verify_shared(
    first: Held,
    second: Held,
    runs: int,
    seed: int,
    strict_spec: bool,
    inputs: Sequence[Mapping[str, Any]] | None,
    budget_s: float | None,
    whole: bool,
) -> VerifyReport:
    """Both evaluators on the input sets ONNX Runtime runs the original on (see :func:`verify`).
    One ONNX Runtime session lives at a time: the original's runs first, then the optimized
    model's (their weights, on disk, are mapped by ONNX Runtime, not copied)."""
    report = VerifyReport(scans=scan_outputs(second.proto))
    ref, ort = EngineResult("onnx.reference"), EngineResult("onnxruntime")
    report.results = [ref, ort]
    names = [out.name for out in first.proto.graph.output]
    region: Region | None = None
    heavy = max(first.initializer_bytes, second.initializer_bytes) > REGION_MIN_BYTES
    large = len(first.proto.graph.node) >= REGION_MIN_NODES or heavy
    if not whole:
        found = changed_region(first.proto, second.proto)
        if isinstance(found, str):
            if large:
                report.notes.append(f"onnx.reference runs the whole models ({found})")
        elif found.empty or large:
            region = found
    captured = region.captured if region is not None else []
    stage("--check: onnxruntime runs the original")
    judge = runtime(first.but(with_outputs(first.proto, captured)) if captured else first)
    if isinstance(judge, str):  # each evaluator on its own (ONNX Runtime says why it cannot)
        return verify_each(
            first,
            second,
            runs=runs,
            seed=seed,
            strict_spec=strict_spec,
            use_ort=True,
            inputs=inputs,
            failures="skip",
            budget_s=budget_s,
        )
    draws, error = _draws(first, judge, ort, runs=runs, seed=seed, given=inputs, budget_s=budget_s)
    del judge  # (the original's session goes before the optimized model's comes)
    if not draws:
        ort.why = ort.why or (
            f"could not run the original on any input set ({_clip(error)}); {_HINT}"
        )
        ref.why = "no input set the original runs on (ONNX Runtime judges)"
        report.details.append(f"onnxruntime: the original's error in full: {error}")
        return report
    if ort.original_failed:
        report.notes.append(
            f"part of the verdict: {ort.original_failed} input set(s) drawn first were set "
            f"aside, the original itself fails on them (onnxruntime: {_clip(error)}); each "
            "next draw made the free dims larger, and the runs above are on those it runs on"
        )
    stage("--check: onnxruntime runs the optimized model")
    optimized = runtime(second)
    for draw in draws:
        start = time.perf_counter()
        after, error = outcome(optimized, draw.feeds)
        ort.seconds += time.perf_counter() - start
        if after is None:
            report.mismatch = (
                f"{draw.where}: onnxruntime: optimized failed ({error}) but original ran"
            )
            return report
        for name, x, y in zip(names, draw.outputs, after, strict=False):
            diff = compare(name, x, y)
            if diff and not report.tolerates(name, x, y):
                report.mismatch = f"{draw.where}: onnxruntime: {diff}"
                return report
        ort.compared += 1
    del optimized
    stage("--check: onnx.reference runs " + ("the changed region" if region else "both models"))
    if region is not None:
        _reference_region(report, ref, region, first, draws, names, strict_spec, budget_s)
    else:
        _reference_whole(report, ref, first, second, draws, names, strict_spec, budget_s)
    return report


def _over_budget(
    result: EngineResult, wanted: int, budget_s: float | None, notes: list[str]
) -> bool:
    """Whether ``result``'s evaluator must stop before one more input set (noted)."""
    if budget_s is None or not result.compared:
        return budget_s is not None and result.seconds > budget_s
    each = result.seconds / result.compared
    if result.seconds + each <= budget_s:
        return False
    notes.append(
        f"{result.name}: compared {result.compared} of {wanted} input set(s): one takes "
        f"{each:.1f} s (budget {budget_s:g} s per evaluator)"
    )
    return True


def _compare_runs(
    report: VerifyReport,
    ref: EngineResult,
    before: Runner,
    after: Runner | str,
    runs: list[tuple[str, dict[str, Any]]],
    names: Sequence[str],
    label: str,
    budget_s: float | None,
) -> tuple[str, bool]:
    """Run ``before`` and ``after`` on each input set (``where`` it comes from, feeds) while the
    budget lasts, and compare their outputs (``names``); the first difference goes to
    ``report.mismatch``. Returns the first error of the original, where it failed, and whether
    a difference was found."""
    failed = ""
    for where, feeds in runs:
        if _over_budget(ref, len(runs), budget_s, report.notes):
            break
        start = time.perf_counter()
        out_b, error = outcome(before, feeds)
        out_a, error_a = (None, "") if out_b is None else outcome(after, feeds)
        ref.seconds += time.perf_counter() - start
        if out_b is None:
            ref.original_failed += 1
            failed = failed or error
            continue
        if out_a is None:
            report.mismatch = f"{where}: {label}: optimized failed ({error_a}) but original ran"
            return failed, True
        for name, x, y in zip(names, out_b, out_a, strict=False):
            diff = compare(name, x, y)
            if diff and not report.tolerates(name, x, y):
                report.mismatch = f"{where}: {label}: {diff}"
                return failed, True
        ref.compared += 1
    return failed, False


def _reference_whole(
    report: VerifyReport,
    ref: EngineResult,
    first: Held,
    second: Held,
    draws: list[_Draw],
    names: list[str],
    strict_spec: bool,
    budget_s: float | None,
) -> None:
    before, after = reference(first, strict_spec), reference(second, strict_spec)
    if isinstance(before, str):
        ref.why = f"could not load the original ({_clip(before)})"
        return
    runs = [(draw.where, draw.feeds) for draw in draws]
    label = "onnx.reference"
    failed, differs = _compare_runs(report, ref, before, after, runs, names, label, budget_s)
    if differs:
        return
    if failed and ref.compared:  # (none compared: the line below says why, alone)
        report.notes.append(
            f"part of the verdict: onnx.reference's run of the original failed on "
            f"{ref.original_failed} input set(s) ONNX Runtime runs ({_clip(failed)}); it "
            "compared the others"
        )
    if not ref.compared and not ref.why:
        ref.why = f"could not run the original on any input set ({_clip(failed or 'over budget')})"


def _reference_region(
    report: VerifyReport,
    ref: EngineResult,
    region: Region,
    first: Held,
    draws: list[_Draw],
    names: list[str],
    strict_spec: bool,
    budget_s: float | None,
) -> None:
    changed, total = region.size
    if region.empty:
        ref.why = "compared nothing: the rewrite changed no node of the main graph"
        return
    before = reference(first.but(region.before), strict_spec)
    after = reference(first.but(region.after), strict_spec)
    if isinstance(before, str):
        ref.why = f"could not load the original's changed region ({_clip(before)})"
        return
    report.notes.append(
        f"onnx.reference compared the changed region ({changed} of {total} nodes of the "
        "original's main graph, and what replaced them) on the values ONNX Runtime's run of "
        "the original gave its inputs; onnxruntime compared the whole models"
    )
    captured_at = output_positions(first.proto, region.captured)
    runs = []
    for draw in draws:
        feeds = {name: draw.feeds[name] for name in region.fed}
        feeds.update({name: draw.outputs[k] for name, k in captured_at.items()})
        runs.append((draw.where, feeds))
    outputs = [name for name, _ in region.outputs]
    label = "onnx.reference (changed region)"
    failed, differs = _compare_runs(report, ref, before, after, runs, outputs, label, budget_s)
    if differs:
        return
    if failed:
        report.notes.append(
            f"onnx.reference: the original's region failed on {ref.original_failed} input "
            f"set(s) ONNX Runtime runs ({_clip(failed)}); those were not compared"
        )
    if not ref.compared and not ref.why:
        ref.why = f"could not run the original's region ({_clip(failed or 'over budget')})"

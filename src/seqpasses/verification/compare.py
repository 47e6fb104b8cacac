"""Differential verification: run the model before and after on the same inputs.

Each evaluator (``onnx.reference.ReferenceEvaluator`` with the spec-exact kernels of
:mod:`seqpasses.verification.kernels`, and ONNX Runtime when it is installed) runs both models on
the same input sets and compares their outputs: dtypes and shapes exactly, floats with
tolerances from the dtype and the outputs' magnitude, sequences element by element. ONNX
Runtime runs with its graph optimizations off, so that the rewrite, not its fusions, is what
is compared (a conv net's float32 logits move by ~1e-5 under different fusions).

The report says exactly what was compared, per evaluator: how many input sets it ran on both
models, or why it compared nothing (not installed, could not load or run the original). An
input set the original fails on is not a comparison: another is drawn (``failures="skip"``,
the CLI's ``--check``), or, for the fuzzers, the optimized model must fail on it too
(``failures="must_match"``). Both failing is never counted as agreement by ``--check``.
"""

from __future__ import annotations

import os
import time
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import onnx
import onnx_ir as ir

from seqpasses.verification.engines import Runner, ort_missing, outcome, reference, runtime
from seqpasses.verification.inputs import random_inputs
from seqpasses.verification.region import Region, changed_region, with_outputs

__all__ = ["EngineResult", "VerifyReport", "compare", "verify"]

# -- the report --------------------------------------------------------------------------


@dataclass
class EngineResult:
    """What one evaluator compared: ``compared`` input sets run on both models, or ``why``
    it compared none."""

    name: str
    compared: int = 0
    original_failed: int = 0  # input sets the original failed on (not comparisons)
    why: str = ""
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "engine": self.name,
            "compared": self.compared,
            "original_failed": self.original_failed,
            "why": self.why,
            "seconds": round(self.seconds, 3),
        }


@dataclass
class VerifyReport:
    """The result of :func:`verify`.

    ``ok``: some evaluator compared outputs and none differed. ``verified``: some evaluator
    compared at least one input set. ``mismatch``: the first difference found.
    """

    mismatch: str = ""
    results: list[EngineResult] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    details: list[str] = field(default_factory=list)  # what -v shows: errors in full

    @property
    def verified(self) -> bool:
        return any(r.compared for r in self.results)

    @property
    def ok(self) -> bool:
        return not self.mismatch and self.verified

    @property
    def engines(self) -> list[str]:
        """The evaluators that compared at least one input set."""
        return [r.name for r in self.results if r.compared]

    @property
    def runs(self) -> int:
        return max((r.compared for r in self.results), default=0)

    @property
    def status(self) -> str:
        """``mismatch``, ``verified`` (every evaluator compared), ``partial`` or
        ``not verified``."""
        if self.mismatch:
            return "mismatch"
        if not self.verified:
            return "not verified"
        return "verified" if all(r.compared for r in self.results) else "partial"

    def __str__(self) -> str:
        if self.mismatch:
            return f"MISMATCH: {self.mismatch}"
        left_out = "; ".join(f"{r.name} {r.why}" for r in self.results if not r.compared)
        if not self.verified:
            return f"not verified: {left_out or 'no evaluator'}"
        done = ", ".join(f"{r.name} ({r.compared} run(s))" for r in self.results if r.compared)
        return f"verified on {done}: outputs agree" + (
            f"; not compared: {left_out}" if left_out else ""
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "status": self.status,
            "result": str(self),
            "mismatch": self.mismatch or None,
            "engines": [r.as_dict() for r in self.results],
            "notes": list(self.notes),
            "details": list(self.details),
        }


# -- comparing -----------------------------------------------------------------------------


def _tolerance(a: np.ndarray) -> tuple[float, float]:
    """rtol and atol for outputs of ``a``'s dtype and magnitude: a few units in the last place
    of the largest value (summation order differs between equivalent graphs)."""
    dtype = a.dtype
    if dtype in (np.float16, np.float32, np.complex64):
        rtol = 1e-3 if dtype == np.float16 else 1e-5
    else:
        rtol = 1e-9
    eps = float(np.finfo(dtype).eps)
    finite = np.abs(a[np.isfinite(a)]) if a.size else np.zeros(0)
    scale = float(finite.max()) if finite.size else 0.0
    base = 1e-3 if dtype == np.float16 else 1e-6 if dtype in (np.float32, np.complex64) else 1e-12
    return rtol, max(base, 16 * eps * scale)


def compare(name: str, a: Any, b: Any) -> str:
    """'' when equal, else what differs."""
    if isinstance(a, list) or isinstance(b, list):
        if not (isinstance(a, list) and isinstance(b, list)):
            return f"{name}: one is a sequence, the other is not"
        if len(a) != len(b):
            return f"{name}: sequence length {len(a)} vs {len(b)}"
        for i, (x, y) in enumerate(zip(a, b, strict=False)):
            diff = compare(f"{name}[{i}]", x, y)
            if diff:
                return diff
        return ""
    if a is None or b is None:
        return "" if a is None and b is None else f"{name}: one is None"
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype != b.dtype:
        return f"{name}: dtype {a.dtype} vs {b.dtype}"
    if a.shape != b.shape:
        return f"{name}: shape {a.shape} vs {b.shape}"
    if a.dtype == object or a.dtype.kind in "biuSU":
        return "" if np.array_equal(a, b) else f"{name}: values differ"
    rtol, atol = _tolerance(a)
    if np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=True):
        return ""
    worst = float(np.max(np.abs(a.astype(np.complex128) - b.astype(np.complex128))))
    return f"{name}: max abs difference {worst:g}"


# -- models and inputs ---------------------------------------------------------------------

ModelLike = onnx.ModelProto | ir.Model | str | os.PathLike[str]


def _proto(model: ModelLike) -> onnx.ModelProto:
    """A ModelProto with its weights in memory (a path's external data is loaded)."""
    if isinstance(model, onnx.ModelProto):
        return model
    if isinstance(model, ir.Model):
        return ir.serde.serialize_model(model)
    return onnx.load(os.fspath(model))


def _verify_each(
    before: onnx.ModelProto,
    after: onnx.ModelProto,
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
    report = VerifyReport()
    names = [out.name for out in first.graph.output]
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
        feeds = random_inputs(first, seed + draw)
        if given is not None:
            feeds.update(given[draw])
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
                if diff:
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
        if result.original_failed and failures == "skip":
            report.notes.append(
                f"{result.name}: the original failed on {result.original_failed} input set(s) "
                f"({failed_first[result.name]}); those were not compared"
            )
    return report


REGION_MIN_NODES = 200
"""From this many main-graph nodes, onnx.reference interprets only the changed region (its
inputs captured from ONNX Runtime's run of the original) instead of the whole models."""

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
    first: onnx.ModelProto,
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
    Returns them and the first failure's message."""
    accepted: list[_Draw] = []
    first_error = ""
    attempts = len(given) if given is not None else max(4 * runs, 2 * len(_SCALES))
    scale_index = 0
    for draw in range(attempts):
        if len(accepted) >= (len(given) if given is not None else runs):
            break
        if budget_s is not None and result.seconds > budget_s and draw:
            break
        scale = _SCALES[min(scale_index, len(_SCALES) - 1)]
        feeds = random_inputs(first, seed + draw, scale=scale)
        if given is not None:
            feeds.update(given[draw])
        where = f"input set {draw}" + ("" if given is not None else f" (seed {seed + draw})")
        start = time.perf_counter()
        outputs, error = outcome(judge, feeds)
        result.seconds += time.perf_counter() - start
        if outputs is None:
            result.original_failed += 1
            first_error = first_error or error
            scale_index += 1
            continue
        accepted.append(_Draw(feeds, where, outputs))
    return accepted, first_error


def verify(
    before: ModelLike,
    after: ModelLike,
    *,
    runs: int = 3,
    seed: int = 0,
    strict_spec: bool = False,
    use_ort: bool = True,
    inputs: Sequence[Mapping[str, Any]] | None = None,
    failures: Literal["skip", "must_match"] = "skip",
    budget_s: float | None = None,
    whole: bool = False,
) -> VerifyReport:
    """Run ``before`` and ``after`` on the same input sets and compare their outputs.

    Input sets are ``inputs`` when given (a set may name some inputs only: the rest are drawn
    at random), else ``runs`` seeded random ones; ONNX Runtime judges whether the original runs
    on a draw, and a draw it fails on is replaced by one whose free dims are larger. ONNX
    Runtime compares the whole models; ``onnx.reference`` the whole models too when they are
    small (or with ``whole``), else only the region the rewrite changed, on the values ONNX
    Runtime's run of the original gives its inputs (:mod:`seqpasses.verification.region`).
    With ``failures="must_match"`` an input set the original fails on counts as a comparison
    the optimized model must fail too (each evaluator on its own, whole models).
    ``budget_s`` bounds the seconds of each evaluator, failed runs included: it compares one
    input set, and more only while one more fits, saying so in the notes.
    """
    first, second = _proto(before), _proto(after)
    names = [out.name for out in first.graph.output]
    if names != [out.name for out in second.graph.output]:
        return VerifyReport(mismatch="graph output names differ")
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")  # (numpy's overflow warnings in reference kernels)
        missing = ort_missing() if use_ort else "not asked for"
        if failures == "must_match" or missing:
            return _verify_each(
                first,
                second,
                runs=runs,
                seed=seed,
                strict_spec=strict_spec,
                use_ort=use_ort,
                inputs=inputs,
                failures=failures,
                budget_s=budget_s,
            )
        return _verify_shared(first, second, runs, seed, strict_spec, inputs, budget_s, whole)


def _verify_shared(
    first: onnx.ModelProto,
    second: onnx.ModelProto,
    runs: int,
    seed: int,
    strict_spec: bool,
    inputs: Sequence[Mapping[str, Any]] | None,
    budget_s: float | None,
    whole: bool,
) -> VerifyReport:
    """Both evaluators on the input sets ONNX Runtime runs the original on (see :func:`verify`)."""
    report = VerifyReport()
    ref, ort = EngineResult("onnx.reference"), EngineResult("onnxruntime")
    report.results = [ref, ort]
    names = [out.name for out in first.graph.output]
    region: Region | None = None
    if not whole:
        found = changed_region(first, second)
        if isinstance(found, str):
            if len(first.graph.node) >= REGION_MIN_NODES:
                report.notes.append(f"onnx.reference runs the whole models ({found})")
        elif found.empty or len(first.graph.node) >= REGION_MIN_NODES:
            region = found
    captured = region.captured if region is not None else []
    judge = runtime(with_outputs(first, captured) if captured else first)
    optimized = runtime(second)
    if isinstance(judge, str):  # each evaluator on its own (ONNX Runtime says why it cannot)
        return _verify_each(
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
    if not draws:
        ort.why = f"could not run the original on any input set ({_clip(error)}); {_HINT}"
        ref.why = "no input set the original runs on (ONNX Runtime judges)"
        report.details.append(f"onnxruntime: the original's error in full: {error}")
        return report
    if ort.original_failed:
        report.notes.append(
            f"onnxruntime: the original failed on {ort.original_failed} input set(s) "
            f"({_clip(error)}); those were not compared, and each next draw made the free "
            "dims larger"
        )
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
            if diff:
                report.mismatch = f"{draw.where}: onnxruntime: {diff}"
                return report
        ort.compared += 1
    if region is not None:
        _reference_region(report, ref, region, draws, names, strict_spec, budget_s)
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


def _reference_whole(
    report: VerifyReport,
    ref: EngineResult,
    first: onnx.ModelProto,
    second: onnx.ModelProto,
    draws: list[_Draw],
    names: list[str],
    strict_spec: bool,
    budget_s: float | None,
) -> None:
    before, after = reference(first, strict_spec), reference(second, strict_spec)
    if isinstance(before, str):
        ref.why = f"could not load the original ({_clip(before)})"
        return
    failed = ""
    for draw in draws:
        if _over_budget(ref, len(draws), budget_s, report.notes):
            break
        start = time.perf_counter()
        out_b, error = outcome(before, draw.feeds)
        out_a, error_a = (None, "") if out_b is None else outcome(after, draw.feeds)
        ref.seconds += time.perf_counter() - start
        if out_b is None:
            ref.original_failed += 1
            failed = failed or error
            continue
        if out_a is None:
            report.mismatch = (
                f"{draw.where}: onnx.reference: optimized failed ({error_a}) but original ran"
            )
            return
        for name, x, y in zip(names, out_b, out_a, strict=False):
            diff = compare(name, x, y)
            if diff:
                report.mismatch = f"{draw.where}: onnx.reference: {diff}"
                return
        ref.compared += 1
    if failed:
        report.notes.append(
            f"onnx.reference: the original failed on {ref.original_failed} input set(s) ONNX "
            f"Runtime runs ({_clip(failed)}); those were not compared"
        )
    if not ref.compared and not ref.why:
        ref.why = f"could not run the original on any input set ({_clip(failed or 'over budget')})"


def _reference_region(
    report: VerifyReport,
    ref: EngineResult,
    region: Region,
    draws: list[_Draw],
    names: list[str],
    strict_spec: bool,
    budget_s: float | None,
) -> None:
    changed, total = region.size
    if region.empty:
        ref.why = "compared nothing: the rewrite changed no node of the main graph"
        return
    before, after = reference(region.before, strict_spec), reference(region.after, strict_spec)
    if isinstance(before, str):
        ref.why = f"could not load the original's changed region ({_clip(before)})"
        return
    report.notes.append(
        f"onnx.reference compared the changed region ({changed} of {total} nodes of the "
        "original's main graph, and what replaced them) on the values ONNX Runtime's run of "
        "the original gave its inputs; onnxruntime compared the whole models"
    )
    captured_at = {name: len(names) + k for k, name in enumerate(region.captured)}
    failed = ""
    for draw in draws:
        if _over_budget(ref, len(draws), budget_s, report.notes):
            break
        feeds = {name: draw.feeds[name] for name in region.fed}
        feeds.update({name: draw.outputs[k] for name, k in captured_at.items()})
        start = time.perf_counter()
        out_b, error = outcome(before, feeds)
        out_a, error_a = (None, "") if out_b is None else outcome(after, feeds)
        ref.seconds += time.perf_counter() - start
        if out_b is None:
            ref.original_failed += 1
            failed = failed or error
            continue
        if out_a is None:
            report.mismatch = (
                f"{draw.where}: onnx.reference (changed region): optimized failed ({error_a}) "
                "but original ran"
            )
            return
        for (name, _), x, y in zip(region.outputs, out_b, out_a, strict=True):
            diff = compare(name, x, y)
            if diff:
                report.mismatch = f"{draw.where}: onnx.reference (changed region): {diff}"
                return
        ref.compared += 1
    if failed:
        report.notes.append(
            f"onnx.reference: the original's region failed on {ref.original_failed} input "
            f"set(s) ONNX Runtime runs ({_clip(failed)}); those were not compared"
        )
    if not ref.compared and not ref.why:
        ref.why = f"could not run the original's region ({_clip(failed or 'over budget')})"

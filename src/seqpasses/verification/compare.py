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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import onnx
import onnx_ir as ir

from seqpasses.verification.engines import Runner, ort_missing, outcome, reference, runtime
from seqpasses.verification.inputs import random_inputs

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
) -> VerifyReport:
    """Run ``before`` and ``after`` on the same input sets and compare their outputs.

    Input sets are ``inputs`` when given (a set may name some inputs only: the rest are drawn
    at random), else ``runs`` seeded random ones per evaluator; an input set the original fails
    on is replaced by a fresh draw (up to ``4 * runs`` draws), or with ``failures="must_match"``
    counts as a comparison that the optimized model must fail too. ``budget_s``: an evaluator
    compares one input set, and more only while one more keeps its time within this many
    seconds (a big conv net on the reference evaluator gets one), saying so in the notes.
    """
    first, second = _proto(before), _proto(after)
    report = VerifyReport()
    names = [out.name for out in first.graph.output]
    if names != [out.name for out in second.graph.output]:
        report.mismatch = "graph output names differ"
        return report
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

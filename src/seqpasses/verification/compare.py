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

This module holds :func:`verify`; the pieces it runs are :mod:`~seqpasses.verification.shared`
(both evaluators on shared input sets), :mod:`~seqpasses.verification.each` (each on its own),
:mod:`~seqpasses.verification.values` (comparing outputs) and
:mod:`~seqpasses.verification.report`.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np
import onnx
import onnx_ir as ir

from seqpasses.io import read_model
from seqpasses.verification.each import verify_each
from seqpasses.verification.engines import Held, ort_missing
from seqpasses.verification.report import EngineResult, VerifyReport
from seqpasses.verification.sampling import random_outputs, without_outputs
from seqpasses.verification.shared import REGION_MIN_NODES, verify_shared
from seqpasses.verification.values import compare

__all__ = [
    "REGION_MIN_NODES",
    "EngineResult",
    "Held",
    "ModelLike",
    "VerifyReport",
    "compare",
    "verify",
]

ModelLike = onnx.ModelProto | ir.Model | str | os.PathLike[str] | Held


def _held(model: ModelLike) -> Held:
    """A model to run: a path is read through the gate every entry passes
    (:func:`seqpasses.io.read_model`), its weights left on disk for ONNX Runtime to map."""
    if isinstance(model, Held):
        return model
    if isinstance(model, onnx.ModelProto):
        return Held(model)
    if isinstance(model, ir.Model):
        return Held(ir.serde.serialize_model(model))
    return Held(*read_model(model))


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
    first, second = _held(before), _held(after)
    names = [out.name for out in first.proto.graph.output]
    if names != [out.name for out in second.proto.graph.output]:
        return VerifyReport(mismatch="graph output names differ")
    drawn, ops = random_outputs(first.proto)
    note = ""
    if drawn:
        note = (
            f"output(s) {', '.join(map(repr, drawn))} depend on a random op "
            f"({'; '.join(ops[:3])}{'; ...' if len(ops) > 3 else ''}): two runs of the "
            "original differ, so they are not compared"
        )
        if len(drawn) == len(names):
            why = "every output depends on a random op"
            results = [
                EngineResult("onnx.reference", why=why),
                EngineResult("onnxruntime", why=why),
            ]
            return VerifyReport(results=results, notes=[note])
        first = first.but(without_outputs(first.proto, drawn))
        second = second.but(without_outputs(second.proto, drawn))
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")  # (numpy's overflow warnings in reference kernels)
        missing = ort_missing() if use_ort else "not asked for"
        if failures == "must_match" or missing:
            report = verify_each(
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
        else:
            report = verify_shared(first, second, runs, seed, strict_spec, inputs, budget_s, whole)
    if note:
        report.notes.insert(0, note)
    return report

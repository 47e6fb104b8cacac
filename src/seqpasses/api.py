"""The public entry point: :func:`optimize` on a ModelProto, an onnx_ir Model or a path."""

from __future__ import annotations

import gc
import os
import time
from collections.abc import Callable, Iterable
from typing import Any, overload

import onnx
import onnx_ir as ir

from seqpasses.passes import FoldSequencesPass
from seqpasses.report import Report, count_ops
from seqpasses.selfcheck import passes_checker, self_check
from seqpasses.transfer.table import select_rewrites
from seqpasses.walk.context import DEFAULT_MAX_UNROLL, FoldOptions

__all__ = ["checked", "optimize", "optimize_ir", "run_passes"]


def run_passes(
    model: ir.Model,
    *,
    freeze_inputs: bool = False,
    strict_spec: bool = False,
    report: Report | None = None,
    skip: Iterable[str] = (),
    only: Iterable[str] | None = None,
    max_unroll: int = DEFAULT_MAX_UNROLL,
) -> Report:
    """Optimize ``model`` in place, with no self-check; return the report."""
    report = report if report is not None else Report()
    report.ops_before = count_ops(model)
    options = FoldOptions(
        freeze_inputs=freeze_inputs,
        strict_spec=strict_spec,
        disabled=select_rewrites(skip, only),
        max_unroll=max_unroll,
    )
    start = time.perf_counter()
    # The walk allocates many small objects and frees none in cycles: the cyclic collector
    # would only rescan the ever larger heap (superlinear on 100k-node graphs).
    collecting = gc.isenabled()
    gc.disable()
    try:
        FoldSequencesPass(options, report)(model)
    finally:
        if collecting:
            gc.enable()
    report.timings["passes"] = time.perf_counter() - start
    report.ops_after = count_ops(model)
    return report


def checked(
    after: onnx.ModelProto, report: Report, original: Callable[[], onnx.ModelProto]
) -> None:
    """The self-check (:mod:`seqpasses.selfcheck`) of a serialized result, timed in ``report``;
    ``original`` gives the input model, asked for only when the result fails the checker."""
    start = time.perf_counter()
    self_check(after, report.sequence_ops_before, lambda: not passes_checker(original()))
    report.timings["self_check"] = time.perf_counter() - start


def optimize_ir(
    model: ir.Model,
    *,
    freeze_inputs: bool = False,
    strict_spec: bool = False,
    report: Report | None = None,
    skip: Iterable[str] = (),
    only: Iterable[str] | None = None,
    max_unroll: int = DEFAULT_MAX_UNROLL,
    self_check: bool = True,
) -> ir.Model:
    """Optimize ``model`` in place and return it; fill ``report`` when given.

    ``skip``/``only`` name rewrite groups of :data:`seqpasses.REWRITES` to switch off / keep;
    ``max_unroll`` is the largest constant trip count a Loop that reads a sequence is
    unrolled for. With ``self_check`` (the default) the result must pass the ONNX checker
    wherever the input did and hold no more sequence ops, else
    :class:`~seqpasses.selfcheck.SelfCheckError` is raised (a bug in seqpasses); this costs
    two serializations of the model.
    """
    original = ir.serde.serialize_model(model) if self_check else None
    report = run_passes(
        model,
        freeze_inputs=freeze_inputs,
        strict_spec=strict_spec,
        report=report,
        skip=skip,
        only=only,
        max_unroll=max_unroll,
    )
    if original is not None:
        checked(ir.serde.serialize_model(model), report, lambda: original)
    return model


@overload
def optimize(
    model: onnx.ModelProto,
    *,
    freeze_inputs: bool = ...,
    strict_spec: bool = ...,
    report: Report | None = ...,
    skip: Iterable[str] = ...,
    only: Iterable[str] | None = ...,
    max_unroll: int = ...,
) -> onnx.ModelProto: ...


@overload
def optimize(
    model: ir.Model,
    *,
    freeze_inputs: bool = ...,
    strict_spec: bool = ...,
    report: Report | None = ...,
    skip: Iterable[str] = ...,
    only: Iterable[str] | None = ...,
    max_unroll: int = ...,
) -> ir.Model: ...


@overload
def optimize(
    model: str | os.PathLike[str],
    *,
    freeze_inputs: bool = ...,
    strict_spec: bool = ...,
    report: Report | None = ...,
    skip: Iterable[str] = ...,
    only: Iterable[str] | None = ...,
    max_unroll: int = ...,
) -> onnx.ModelProto: ...


def optimize(
    model: onnx.ModelProto | ir.Model | str | os.PathLike[str],
    *,
    freeze_inputs: bool = False,
    strict_spec: bool = False,
    report: Report | None = None,
    skip: Iterable[str] = (),
    only: Iterable[str] | None = None,
    max_unroll: int = DEFAULT_MAX_UNROLL,
) -> onnx.ModelProto | ir.Model:
    """Remove every sequence op whose sequence is known before run time.

    - an ``onnx.ModelProto`` gives a new ``ModelProto`` (the argument is not changed);
    - an ``onnx_ir.Model`` is optimized in place and returned;
    - a path is loaded and gives a ``ModelProto``.

    ``freeze_inputs`` treats initializers that are also graph inputs as constants;
    ``strict_spec`` follows the ONNX spec where ONNX Runtime departs from it (see README).
    Pass a :class:`~seqpasses.report.Report` to learn what changed and what was left, and why.
    """
    kwargs: dict[str, Any] = {
        "freeze_inputs": freeze_inputs,
        "strict_spec": strict_spec,
        "report": report,
        "skip": skip,
        "only": only,
        "max_unroll": max_unroll,
    }
    if isinstance(model, ir.Model):
        return optimize_ir(model, **kwargs)
    proto = model if isinstance(model, onnx.ModelProto) else onnx.load(os.fspath(model))
    ir_model = ir.serde.deserialize_model(proto)
    done = run_passes(ir_model, **kwargs)
    result = ir.serde.serialize_model(ir_model)
    checked(result, done, lambda: proto)
    return result

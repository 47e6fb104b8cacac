"""The public entry point: :func:`optimize` on a ModelProto, an onnx_ir Model or a path."""

from __future__ import annotations

import gc
import os
import time
from collections.abc import Iterable
from typing import Any, overload

import onnx
import onnx_ir as ir

from seqpasses.passes.fold import FoldOptions, FoldSequencesPass, select_rewrites
from seqpasses.report import Report, count_ops

__all__ = ["optimize", "optimize_ir"]


def optimize_ir(
    model: ir.Model,
    *,
    freeze_inputs: bool = False,
    strict_spec: bool = False,
    report: Report | None = None,
    skip: Iterable[str] = (),
    only: Iterable[str] | None = None,
    max_unroll: int = 64,
) -> ir.Model:
    """Optimize ``model`` in place and return it; fill ``report`` when given.

    ``skip``/``only`` name rewrite groups of :data:`seqpasses.REWRITES` to switch off / keep;
    ``max_unroll`` is the largest constant trip count a Loop that reads a sequence is
    unrolled for.
    """
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
    max_unroll: int = 64,
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
    if isinstance(model, onnx.ModelProto):
        return ir.serde.serialize_model(optimize_ir(ir.serde.deserialize_model(model), **kwargs))
    return ir.serde.serialize_model(optimize_ir(ir.load(os.fspath(model)), **kwargs))

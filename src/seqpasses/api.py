"""The public entry points: :func:`optimize` on a ModelProto, an onnx_ir Model or a path, and
:func:`optimize_ir`. Both run the one path of :mod:`seqpasses.pipeline`."""

from __future__ import annotations

import os
import time
import warnings
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, TypedDict, overload

import onnx
import onnx_ir as ir

from seqpasses.core.pause import no_cycle_collection
from seqpasses.errors import InputWarning
from seqpasses.io import with_external_data
from seqpasses.options import DEFAULT_MAX_SPLIT, DEFAULT_MAX_UNROLL, Options
from seqpasses.pipeline import Result, load, optimize_loaded
from seqpasses.report import Report

if TYPE_CHECKING:
    from typing import Unpack  # (Python 3.11; only read by type checkers)

__all__ = ["InputWarning", "OptimizeOptions", "optimize", "optimize_ir"]


class OptimizeOptions(TypedDict, total=False):
    freeze_inputs: bool
    strict_spec: bool
    report: Report | None
    skip: Iterable[str] | str
    only: Iterable[str] | str | None
    max_unroll: int
    max_split: int
    node_budget: int | None
    strict_input: bool
    input_shapes: Mapping[str, Sequence[int]] | None
    inline_functions: bool
    infer_shapes: bool


def _options(**given: object) -> Options:
    """The one options object (ValueError, as before, for a value that makes no sense)."""
    return Options.of(**given)


def _warned(result: Result) -> Result:
    for line in result.report.warnings:
        warnings.warn(line, InputWarning, stacklevel=3)
    return result


@overload
def optimize(model: ir.Model, **options: Unpack[OptimizeOptions]) -> ir.Model: ...


@overload
def optimize(
    model: onnx.ModelProto | str | os.PathLike[str], **options: Unpack[OptimizeOptions]
) -> onnx.ModelProto: ...


def optimize(
    model: onnx.ModelProto | ir.Model | str | os.PathLike[str],
    *,
    freeze_inputs: bool = False,
    strict_spec: bool = False,
    report: Report | None = None,
    skip: Iterable[str] | str = (),
    only: Iterable[str] | str | None = None,
    max_unroll: int = DEFAULT_MAX_UNROLL,
    max_split: int = DEFAULT_MAX_SPLIT,
    node_budget: int | None = None,
    strict_input: bool = False,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
    inline_functions: bool = False,
    infer_shapes: bool = False,
) -> onnx.ModelProto | ir.Model:
    """Remove every sequence op whose sequence is known before run time.

    - an ``onnx.ModelProto`` gives a new ``ModelProto`` (the argument is not changed);
    - an ``onnx_ir.Model`` is optimized in place and returned;
    - a path is loaded (external data included: the result can be saved anywhere) and gives a
      ``ModelProto``.

    ``freeze_inputs`` treats initializers that are also graph inputs as constants;
    ``strict_spec`` follows the ONNX spec where ONNX Runtime departs from it (see README);
    ``input_shapes`` fixes graph input shapes (``{"x": [1, 3, 224, 224]}``), which may make
    lists static; ``inline_functions`` inlines model-local functions (``onnx.inliner``) for
    back ends that reject them; ``infer_shapes`` fills in value types and shapes;
    ``max_unroll``, ``max_split`` and ``node_budget`` bound the work (README, "Security and
    limits"). A model that fails the ONNX checker is taken when ONNX Runtime loads it (an
    :class:`InputWarning`; ``strict_input`` refuses it), else
    :class:`~seqpasses.errors.BadInputError` is raised; one with types onnx_ir cannot hold is
    handed back unchanged (``report.unchanged`` says why). Pass a
    :class:`~seqpasses.report.Report` to learn what changed and what was left, and why.
    """
    options = _options(
        freeze_inputs=freeze_inputs,
        strict_spec=strict_spec,
        skip=skip,
        only=only,
        max_unroll=max_unroll,
        max_split=max_split,
        node_budget=node_budget,
        strict_input=strict_input,
        input_shapes=input_shapes,
        inline_functions=inline_functions,
        infer_shapes=infer_shapes,
    )
    with no_cycle_collection():  # (from loading to the result: see core.pause)
        start = time.perf_counter()
        loaded = load(model, options)
        taken = time.perf_counter() - start
        result = _warned(optimize_loaded(loaded, options, report))
    if report is not None:
        report.timings["load"] = taken
    if isinstance(model, ir.Model):
        _adopt(model, result)
        if inline_functions and model.functions:  # the inlined form, in place
            model.graph = ir.serde.deserialize_model(result.proto).graph
            model.functions.clear()
        return model
    if loaded.folder is None:  # (a ModelProto, or a pipe: its data gate refused external data)
        return result.proto
    # a path: its external data read into the result, so that it can be saved anywhere
    return with_external_data(result.proto, loaded.folder)


def optimize_ir(
    model: ir.Model,
    *,
    freeze_inputs: bool = False,
    strict_spec: bool = False,
    report: Report | None = None,
    skip: Iterable[str] = (),
    only: Iterable[str] | None = None,
    max_unroll: int = DEFAULT_MAX_UNROLL,
    max_split: int = DEFAULT_MAX_SPLIT,
    node_budget: int | None = None,
    self_check: bool = True,
) -> ir.Model:
    """Optimize ``model`` in place and return it; fill ``report`` when given.

    ``skip``/``only`` name rewrite groups of :data:`seqpasses.REWRITES` to switch off / keep;
    ``max_unroll`` is the largest constant trip count a Loop that reads a sequence is
    unrolled for. With ``self_check`` (the default) the result must pass the ONNX checker
    wherever the input did and hold no more sequence ops, else
    :class:`~seqpasses.errors.SelfCheckError` is raised (a bug in seqpasses).
    """
    options = _options(
        freeze_inputs=freeze_inputs,
        strict_spec=strict_spec,
        skip=skip,
        only=only,
        max_unroll=max_unroll,
        max_split=max_split,
        node_budget=node_budget,
    )
    with no_cycle_collection():  # (from loading to the result: see core.pause)
        loaded = load(model, options, admission=False)
        result = optimize_loaded(loaded, options, report, self_check_result=self_check)
    _adopt(model, result)
    return model


def _adopt(model: ir.Model, result: Result) -> None:
    """The caller's onnx_ir model, optimized in place, holds ``result``: it is the model the
    passes ran on, unless the result was made again on a fresh copy (lists left as sequences)
    or the input went back unchanged (then what it was, from the protobuf taken at load)."""
    if result.model is model:
        return
    source = result.model if result.model is not None else ir.serde.deserialize_model(result.proto)
    model.graph = source.graph
    model.functions.clear()
    model.functions.update(source.functions)

"""The public entry point: :func:`optimize` on a ModelProto, an onnx_ir Model or a path."""

from __future__ import annotations

import os
import time
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict, overload

import onnx
import onnx.inliner
import onnx_ir as ir

from seqpasses.admit import BadInputError, admit, to_ir
from seqpasses.core.pause import no_cycle_collection
from seqpasses.overrides import fix_input_shapes
from seqpasses.passes import FoldSequencesPass
from seqpasses.report import Report, count_ops
from seqpasses.selfcheck import passes_checker, self_check
from seqpasses.transfer.table import select_rewrites
from seqpasses.walk.context import DEFAULT_MAX_UNROLL, FoldOptions

if TYPE_CHECKING:
    from typing import Unpack  # (Python 3.11; only read by type checkers)

__all__ = [
    "InputWarning",
    "OptimizeOptions",
    "checked",
    "inline_local_functions",
    "optimize",
    "optimize_ir",
    "run_passes",
]


def run_passes(
    model: ir.Model,
    *,
    freeze_inputs: bool = False,
    strict_spec: bool = False,
    report: Report | None = None,
    skip: Iterable[str] = (),
    only: Iterable[str] | None = None,
    max_unroll: int = DEFAULT_MAX_UNROLL,
    original: Callable[[], ir.Model] | None = None,
) -> Report:
    """Optimize ``model`` in place, with no self-check; return the report. ``original``, when
    given, makes a fresh copy of ``model`` as it is now (see :class:`FoldSequencesPass`)."""
    report = report if report is not None else Report()
    report.ops_before = count_ops(model)
    options = FoldOptions(
        freeze_inputs=freeze_inputs,
        strict_spec=strict_spec,
        disabled=select_rewrites(skip, only),
        max_unroll=max_unroll,
    )
    start = time.perf_counter()
    with no_cycle_collection():
        FoldSequencesPass(options, report, original)(model)
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
    with no_cycle_collection():
        original = ir.serde.serialize_model(model) if self_check else None
        report = run_passes(
            model,
            freeze_inputs=freeze_inputs,
            strict_spec=strict_spec,
            report=report,
            skip=skip,
            only=only,
            max_unroll=max_unroll,
            original=_reloader(original),
        )
        if original is not None:
            checked(ir.serde.serialize_model(model), report, lambda: original)
    return model


class OptimizeOptions(TypedDict, total=False):
    freeze_inputs: bool
    strict_spec: bool
    report: Report | None
    skip: Iterable[str] | str
    only: Iterable[str] | str | None
    max_unroll: int
    strict_input: bool
    input_shapes: Mapping[str, Sequence[int]] | None
    inline_functions: bool


class InputWarning(UserWarning):
    """The input fails the ONNX checker, but ONNX Runtime loads it (see seqpasses.admit)."""


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
    strict_input: bool = False,
    input_shapes: Mapping[str, Sequence[int]] | None = None,
    inline_functions: bool = False,
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
    back ends that reject them. A model that fails the ONNX checker is taken when ONNX Runtime
    loads it (an :class:`InputWarning`; ``strict_input`` refuses it), else
    :class:`~seqpasses.admit.BadInputError` is raised; one with types onnx_ir cannot hold is
    handed back unchanged (``report.unchanged`` says why). Pass a
    :class:`~seqpasses.report.Report` to learn what changed and what was left, and why.
    """
    report = report if report is not None else Report()
    kwargs: dict[str, Any] = {
        "freeze_inputs": freeze_inputs,
        "strict_spec": strict_spec,
        "report": report,
        "skip": skip,
        "only": only,
        "max_unroll": max_unroll,
    }
    if isinstance(model, ir.Model):
        original = ir.serde.serialize_model(model)
        _admitted(original, "model", strict_input, report)
        result = _fold_and_check(model, original, kwargs, input_shapes, inline_functions)
        if inline_functions and model.functions:  # the inlined form, in place
            model.graph = ir.serde.deserialize_model(result).graph
            model.functions.clear()
        return model
    if isinstance(model, onnx.ModelProto):
        proto, name = model, "model"
        _admitted(proto, name, strict_input, report)
    else:
        path = Path(os.fspath(model))
        if not path.is_file():
            raise BadInputError(f"{path}: no such file")
        _admitted(path, str(path), strict_input, report)
        proto = onnx.load(path)
    held = to_ir(proto)
    if isinstance(held, str):
        report.ops_before = report.ops_after = count_ops(proto)
        report.unchanged = held
        report.notes.append(f"handed back unchanged: {held}")
        copy = onnx.ModelProto()
        copy.CopyFrom(proto)
        return copy
    return _fold_and_check(held, proto, kwargs, input_shapes, inline_functions)


def _fold_and_check(
    model: ir.Model,
    original: onnx.ModelProto,
    kwargs: dict[str, Any],
    input_shapes: Mapping[str, Sequence[int]] | None,
    inline: bool,
) -> onnx.ModelProto:
    """Optimize ``model`` in place; its serialized, self-checked result (see :func:`checked`)."""
    with no_cycle_collection():
        report: Report = kwargs["report"]
        if input_shapes:
            report.notes.extend(fix_input_shapes(model, input_shapes))
        run_passes(model, **kwargs, original=None if input_shapes else _reloader(original))
        result = ir.serde.serialize_model(model)
        if inline:
            result = inline_local_functions(result, report)
        checked(result, report, lambda: original)
    return result


def _reloader(proto: onnx.ModelProto | None) -> Callable[[], ir.Model] | None:
    """A fresh model from the ``proto`` the model being optimized was loaded from."""
    if proto is None:
        return None
    return lambda: ir.serde.deserialize_model(proto)


def _admitted(model: onnx.ModelProto | Path, name: str, strict: bool, report: Report) -> None:
    for line in admit(model, name, strict=strict):
        report.warnings.append(line)
        warnings.warn(line, InputWarning, stacklevel=3)


def inline_local_functions(proto: onnx.ModelProto, report: Report) -> onnx.ModelProto:
    """``proto`` with its model-local functions inlined at their call sites (``onnx.inliner``),
    for back ends that reject them (OpenVINO: "No conversion rule found")."""
    if not proto.functions:
        return proto
    count = len(proto.functions)
    inlined: onnx.ModelProto = onnx.inliner.inline_local_functions(proto)
    report.ops_after = count_ops(inlined)
    report.notes.append(f"inlined {count} model-local function(s) at their call sites")
    return inlined

"""The two evaluators, one way each to get a runner: ONNX Runtime (graph optimizations off)
and ``onnx.reference`` with the spec-exact kernels of :mod:`seqpasses.verification.kernels`.
Admission (:mod:`seqpasses.checks.admission`) asks :func:`ort_session` too."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import onnx

__all__ = ["Runner", "error_line", "ort_missing", "ort_session", "outcome", "reference", "runtime"]

Runner = Callable[[dict[str, Any]], list[Any]]


def error_line(error: BaseException) -> str:
    """``Type: first line of the message``."""
    text = str(error).strip()
    return f"{type(error).__name__}: {text.splitlines()[0] if text else ''}".rstrip(": ")


def ort_session(model: onnx.ModelProto | Path) -> Any:
    """An ONNX Runtime session on the CPU with graph optimizations off (a path is loaded as a
    file, external data and all). Raises what ONNX Runtime raises."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = 4
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    source = os.fspath(model) if isinstance(model, Path) else model.SerializeToString()
    return ort.InferenceSession(source, options, providers=["CPUExecutionProvider"])


def runtime(model: onnx.ModelProto) -> Runner | str:
    """A runner on ONNX Runtime, or why there is none."""
    try:
        session = ort_session(model)
    except Exception as error:
        return error_line(error)
    return lambda feeds: list(session.run(None, feeds))


def reference(model: onnx.ModelProto, strict_spec: bool) -> Runner | str:
    """A runner on ``onnx.reference`` with seqpasses' kernel overrides, or why there is none."""
    from onnx.reference import ReferenceEvaluator

    from seqpasses.verification.kernels import overrides

    try:
        evaluator = ReferenceEvaluator(model, new_ops=overrides(strict_spec))
    except Exception as error:
        return error_line(error)
    return lambda feeds: list(evaluator.run(None, feeds))


def ort_missing() -> str:
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        return "ONNX Runtime is not installed (pip install onnxruntime)"
    return ""


def outcome(runner: Runner | str, feeds: dict[str, Any]) -> tuple[list[Any] | None, str]:
    """The outputs of one run, or None and why it failed."""
    if isinstance(runner, str):
        return None, f"cannot load: {runner}"
    try:
        return runner(feeds), ""
    except Exception as error:
        return None, error_line(error)

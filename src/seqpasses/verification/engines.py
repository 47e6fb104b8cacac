"""The two evaluators, one way each to get a runner: ONNX Runtime (graph optimizations off)
and ``onnx.reference`` with the spec-exact kernels of :mod:`seqpasses.verification.kernels`.
Admission (:mod:`seqpasses.checks.admission`) asks :func:`ort_session` too."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import onnx

__all__ = [
    "Held",
    "Runner",
    "error_line",
    "ort_missing",
    "ort_session",
    "outcome",
    "reference",
    "runtime",
]

Runner = Callable[[dict[str, Any]], list[Any]]

_TWO_GB = 2**31

REFERENCE_MAX_BYTES = 256 << 20
"""The most bytes of weights ``onnx.reference`` is given a model whole with (it holds each as
a numpy array): above, it runs only the region a rewrite changed."""


@dataclass(frozen=True)
class Held:
    """A model to run: its protobuf, whose large weights may stay on disk (external data,
    the model file's own bytes: :mod:`seqpasses.wire`), and the folder they lie in."""

    proto: onnx.ModelProto
    folder: Path | None = None

    def but(self, proto: onnx.ModelProto) -> Held:
        """Another model whose weights lie in the same folder (a part, more outputs)."""
        return Held(proto, self.folder)

    @property
    def weight_bytes(self) -> int:
        """The bytes of the weights the protobuf does not hold (0 when it holds them all)."""
        total = 0
        for tensor in self.proto.graph.initializer:
            if tensor.data_location == onnx.TensorProto.EXTERNAL:
                entries = {e.key: e.value for e in tensor.external_data}
                total += int(entries.get("length", "0") or 0)
        return total

    @property
    def initializer_bytes(self) -> int:
        """The bytes of all the main graph's initializers, in memory or on disk."""
        inline = sum(len(t.raw_data) for t in self.proto.graph.initializer)
        return inline + self.weight_bytes

    def whole(self) -> onnx.ModelProto:
        """The protobuf with every weight in memory (a copy when any lies on disk)."""
        from seqpasses.io import with_external_data

        return with_external_data(self.proto, self.folder)


def error_line(error: BaseException) -> str:
    """``Type: first line of the message``."""
    text = str(error).strip()
    return f"{type(error).__name__}: {text.splitlines()[0] if text else ''}".rstrip(": ")


def ort_session(model: onnx.ModelProto | Path | Held, load_only: bool = False) -> Any:
    """An ONNX Runtime session on the CPU with graph optimizations off. A path is loaded as a
    file; a held model from memory, its weights on disk read (mapped) by ONNX Runtime from
    the model's folder, never copied by seqpasses. Raises what ONNX Runtime raises, and
    ValueError for a model protobuf cannot hand over (2 GB or more in memory)."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = 4
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    if load_only:  # (a session only loaded runs nothing: no thread pool to start)
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
    if isinstance(model, Path):
        return ort.InferenceSession(os.fspath(model), options, providers=["CPUExecutionProvider"])
    held = model if isinstance(model, Held) else Held(model)
    try:
        size = held.proto.ByteSize()
    except Exception:  # (protobuf's EncodeError: a message past 2 GB has no size)
        size = _TWO_GB
    if size >= _TWO_GB:
        raise ValueError(
            "the model holds 2 GB or more in memory, which protobuf cannot hand to ONNX "
            "Runtime (give it as a file, its weights in external data)"
        )
    if held.folder is not None:
        options.add_session_config_entry(
            "session.model_external_initializers_file_folder_path", os.fspath(held.folder)
        )
    source = held.proto.SerializeToString()
    return ort.InferenceSession(source, options, providers=["CPUExecutionProvider"])


def runtime(model: Held) -> Runner | str:
    """A runner on ONNX Runtime, or why there is none."""
    try:
        session = ort_session(model)
    except Exception as error:
        return error_line(error)
    return lambda feeds: list(session.run(None, feeds))


def reference(model: Held, strict_spec: bool) -> Runner | str:
    """A runner on ``onnx.reference`` with seqpasses' kernel overrides, or why there is none
    (its weights read into memory: at most :data:`REFERENCE_MAX_BYTES` of them)."""
    from seqpasses.verification.kernels import overrides

    size = model.weight_bytes
    if size > REFERENCE_MAX_BYTES:
        return (
            f"its weights on disk ({size / 2**30:.1f} GiB) are more than onnx.reference is "
            f"given whole ({REFERENCE_MAX_BYTES >> 20} MiB)"
        )
    try:
        evaluator = _evaluator(model.whole(), overrides(strict_spec))
    except Exception as error:
        return error_line(error)
    return lambda feeds: list(evaluator.run(None, feeds))


def _evaluator(proto: onnx.ModelProto, new_ops: list[type[Any]]) -> Any:
    """``onnx.reference`` on ``proto``, each model-local function given only the functions it
    calls (onnx's own constructor gives each every function before it: memory that grows with
    the square of their count, a GB for 2,000 small ones), and those the graph never calls
    left out."""
    from onnx.reference import ReferenceEvaluator

    if not proto.functions:
        return ReferenceEvaluator(proto, new_ops=new_ops)
    from seqpasses.checks.wellformed import calls

    functions = {(f.domain, f.name): f for f in proto.functions}
    built: dict[tuple[str, str], Any] = {}

    def build(key: tuple[str, str]) -> Any:
        if key not in built:
            callees = [build(c) for c in sorted(set(calls(functions[key]))) if c in functions]
            built[key] = ReferenceEvaluator(functions[key], functions=callees)
        return built[key]

    used = [build(c) for c in sorted(set(calls(proto.graph))) if c in functions]
    opsets = {op.domain: op.version for op in proto.opset_import}
    return ReferenceEvaluator(proto.graph, opsets=opsets, functions=used, new_ops=new_ops)


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

"""A model as ONNX Runtime runs it: held with its weights where they lie, and a session of it
(graph optimizations off). Admission asks whether ONNX Runtime loads a model; the self-check
whether it loads the result; ``--check`` runs both."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import onnx

from seqpasses.checks.external import with_external_data

__all__ = ["Held", "ort_session"]

_TWO_GB = 2**31


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
        return with_external_data(self.proto, self.folder)


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

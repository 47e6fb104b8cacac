"""What seqpasses accepts: a model ONNX Runtime loads is a model we take.

The ONNX checker is stricter than the runtimes: a graph output without a ``shape`` field, an
IR version older than the opsets expect, partial ``value_info`` ... fail it, yet ONNX Runtime
loads and runs such models, and exporters write them. So a model that fails the checker is
still optimized when ONNX Runtime can load it, with one warning that names what the checker
said (``strict=True``, the CLI's ``--strict-input``, refuses it as before). A model that
neither accepts is refused with one line. The self-check then holds the output to what the
input was: it must pass the checker wherever the input did.

Some models use types onnx_ir cannot hold (``map`` and ``seq(map)`` of scikit-learn's
``ZipMap``, sparse tensors): :func:`to_ir` says why, and such a model is written unchanged.
"""

from __future__ import annotations

import os
from pathlib import Path

import onnx
import onnx_ir as ir

from seqpasses.core.pause import no_cycle_collection
from seqpasses.report import all_proto_graphs

__all__ = ["BadInputError", "admit", "checker_says", "to_ir"]


class BadInputError(Exception):
    """The input cannot be optimized; the message is one line for the user."""


def first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def checker_says(model: onnx.ModelProto | Path) -> str:
    """'' when the model passes ``onnx.checker.check_model``, else the checker's first line
    (a path is checked as a file, so that models over 2 GB and external data work)."""
    try:
        onnx.checker.check_model(os.fspath(model) if isinstance(model, Path) else model)
    except Exception as error:
        return first_line(error)
    return ""


def runtime_says(model: onnx.ModelProto | Path) -> str:
    """'' when ONNX Runtime can load the model (a session on the CPU), else its first line."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.log_severity_level = 4
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    source = os.fspath(model) if isinstance(model, Path) else model.SerializeToString()
    try:
        ort.InferenceSession(source, options, providers=["CPUExecutionProvider"])
    except Exception as error:
        return first_line(error)
    return ""


def admit(model: onnx.ModelProto | Path, name: str, *, strict: bool = False) -> list[str]:
    """Whether seqpasses takes ``model``: the warnings to show when it does, else
    :class:`BadInputError` (see the module docstring)."""
    complaint = checker_says(model)
    if not complaint:
        return []
    if strict:
        raise BadInputError(f"{name}: the model fails the ONNX checker: {complaint}")
    refusal = runtime_says(model)
    if refusal:
        raise BadInputError(
            f"{name}: the model fails the ONNX checker ({complaint}) and ONNX Runtime cannot "
            f"load it either ({refusal})"
        )
    return [
        f"{name}: the ONNX checker says: {complaint}; ONNX Runtime loads the model, so it is "
        "optimized anyway (--strict-input refuses it)"
    ]


def to_ir(proto: onnx.ModelProto) -> ir.Model | str:
    """The model in onnx_ir, or why onnx_ir cannot hold it (a type it has no class for)."""
    with no_cycle_collection():
        try:
            return ir.serde.deserialize_model(proto)
        except Exception as error:
            return _why_not_held(proto, error)


def _why_not_held(proto: onnx.ModelProto, error: Exception) -> str:
    kinds = sorted(_unheld_types(proto))
    if kinds:
        return f"onnx_ir cannot hold its {' and '.join(kinds)} values"
    cause: BaseException = error
    while cause.__cause__ is not None:
        cause = cause.__cause__
    return f"onnx_ir cannot read it ({type(cause).__name__}: {first_line(cause)})"


def _unheld_types(proto: onnx.ModelProto) -> set[str]:
    """The kinds of types in the model that onnx_ir has no class for."""
    found: set[str] = set()

    def visit(t: onnx.TypeProto, outer: str = "") -> None:
        kind = t.WhichOneof("value")
        if kind == "map_type":
            found.add(f"{outer}map")
        elif kind == "sparse_tensor_type":
            found.add(f"{outer}sparse tensor")
        elif kind == "sequence_type":
            visit(t.sequence_type.elem_type, outer or "sequence-of-")
        elif kind == "optional_type":
            visit(t.optional_type.elem_type, outer or "optional-")

    sparse = (onnx.AttributeProto.SPARSE_TENSOR, onnx.AttributeProto.SPARSE_TENSORS)
    for graph in all_proto_graphs(proto):
        if isinstance(graph, onnx.GraphProto):
            for info in (*graph.input, *graph.output, *graph.value_info):
                visit(info.type)
            if graph.sparse_initializer:
                found.add("sparse tensor")
        for node in graph.node:
            if any(attr.type in sparse for attr in node.attribute):
                found.add("sparse tensor")
    return found

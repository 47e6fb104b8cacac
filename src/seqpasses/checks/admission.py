"""What seqpasses accepts: a model ONNX Runtime loads is a model we take.

The ONNX checker is stricter than the runtimes: a graph output without a ``shape`` field, an
IR version older than the opsets expect, partial ``value_info`` ... fail it, yet ONNX Runtime
loads and runs such models, and exporters write them. So a model that fails the checker is
still optimized when ONNX Runtime can load it, with one warning that lists what the checker
said (``strict=True``, the CLI's ``--strict-input``, refuses it). A model that neither
accepts is refused with one line. ONNX Runtime is asked once: a model whose only fault is
graph values declared without a shape field (which the checker takes once the fields are
there) is then a model like one the checker passes, and its result is checked as such; a
model taken for ONNX Runtime's word on other faults has its result loaded there too.
Model-local functions are checked one by one, whatever the IR version (the checker skips them
below IR 8) and whether or not the graph calls them.

Some models use types onnx_ir cannot hold (``map`` and ``seq(map)`` of scikit-learn's
``ZipMap``, sparse tensors): :func:`to_ir` says why, and such a model is handed back
unchanged. So is a model whose ONNX opset is newer than the installed ``onnx`` defines:
seqpasses does not know what its ops mean (:func:`unknown_opset`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import onnx
import onnx_ir as ir

from seqpasses.checks.external import external_tensors
from seqpasses.core.pause import no_cycle_collection
from seqpasses.core.proto import all_proto_graphs
from seqpasses.core.skeleton import proto_skeleton
from seqpasses.errors import BadInputError, first_line

__all__ = ["Admitted", "admit", "checker_complaints", "runtime_says", "to_ir", "unknown_opset"]

_LISTED = 3
"""Complaints a warning spells out; more are counted."""


def checker_complaints(model: onnx.ModelProto, path: Path | None = None) -> list[str]:
    """What ``onnx.checker`` says of the model (empty when it passes), one line each: the
    model as a whole, then each model-local function on its own. The checker reads the
    model's skeleton (:mod:`seqpasses.core.skeleton`): the weights' dims and dtypes, never
    their bytes, whatever the model's size (the data gate checked where they lie); a model
    with external data elsewhere than in its main graph's initializers (a Constant's value)
    is checked as a file, so that the checker looks for it in the model's folder."""
    complaints: list[str] = []
    skeleton = proto_skeleton(model).proto
    try:
        if path is not None and external_tensors(skeleton):
            onnx.checker.check_model(os.fspath(path))
        else:
            onnx.checker.check_model(skeleton)
    except Exception as error:
        complaints.append(_named(first_line(error), model))
    if model.functions:
        context = onnx.checker.C.CheckerContext()
        context.ir_version = max(model.ir_version, 8)
        context.opset_imports = {op.domain: op.version for op in model.opset_import}
        for function in model.functions:
            try:
                onnx.checker.check_function(_data_checked(function), context)
            except Exception as error:
                line = f"function {function.domain}::{function.name}: {first_line(error)}"
                if not any(first_line(error) in c for c in complaints):
                    complaints.append(line)
    return complaints


_NO_SHAPE = "Field 'shape' of 'type' is required but missing."


def _named(line: str, model: onnx.ModelProto) -> str:
    """The checker's line, with the values it is about where it does not name them (a graph
    input or output declared without a shape field says only which field is missing)."""
    if _NO_SHAPE not in line:
        return line
    graph = model.graph
    named = [
        f"{role} {value.name!r}"
        for role, values in (("input", graph.input), ("output", graph.output))
        for value in values
        if value.type.HasField("tensor_type") and not value.type.tensor_type.HasField("shape")
    ]
    if not named:
        return line
    more = f" and {len(named) - 3} more" if len(named) > 3 else ""
    return line.replace(_NO_SHAPE, f"{_NO_SHAPE[:-1]} (graph {', '.join(named[:3])}{more})")


def _data_checked(function: onnx.FunctionProto) -> onnx.FunctionProto:
    """``function`` with its external tensors emptied: the data gate checked them against the
    model's folder already, and the checker would look for them in the working folder."""
    if not any(
        attr.type == onnx.AttributeProto.TENSOR
        and attr.t.data_location == onnx.TensorProto.EXTERNAL
        for node in function.node
        for attr in node.attribute
    ):
        return function
    copy = onnx.FunctionProto()
    copy.CopyFrom(function)
    for node in copy.node:
        for attr in node.attribute:
            if (
                attr.type == onnx.AttributeProto.TENSOR
                and attr.t.data_location == onnx.TensorProto.EXTERNAL
            ):
                attr.t.data_location = onnx.TensorProto.DEFAULT
                del attr.t.external_data[:]
                del attr.t.dims[:]
                attr.t.dims.append(0)
    return copy


def runtime_says(model: onnx.ModelProto | Path) -> str:
    """'' when ONNX Runtime can load the model (a session on the CPU), else its first line."""
    from seqpasses.checks.runtime import ort_session

    try:
        ort_session(model, load_only=True)
    except Exception as error:
        return first_line(error)
    return ""


def _listed(complaints: list[str]) -> str:
    shown = "; ".join(complaints[:_LISTED])
    more = len(complaints) - _LISTED
    return shown + (f" (and {more} more)" if more > 0 else "")


@dataclass(frozen=True)
class Admitted:
    """A model taken in: the warnings to show, and whether it was taken because ONNX Runtime
    loads it (the self-check then asks ONNX Runtime whether it loads the result too)."""

    warnings: list[str] = field(default_factory=list)
    by_runtime: bool = False


def admit(
    model: onnx.ModelProto, name: str, *, strict: bool = False, path: Path | None = None
) -> Admitted:
    """Whether seqpasses takes ``model`` (read from ``path`` when given): the warnings to show
    when it does, else :class:`BadInputError` (see the module docstring)."""
    complaints = checker_complaints(model, path)
    if not complaints:
        return Admitted()
    said = _listed(complaints)
    count = f" ({len(complaints)} complaints)" if len(complaints) > 1 else ""
    if strict:
        raise BadInputError(f"{name}: the model fails the ONNX checker{count}: {said}")
    refusal = runtime_says(path if path is not None else model)
    if refusal:
        raise BadInputError(
            f"{name}: the model fails the ONNX checker ({said}) and ONNX Runtime cannot "
            f"load it either ({refusal})"
        )
    return Admitted(
        [
            f"{name}: the ONNX checker says{count}: {said}; ONNX Runtime loads the model, so "
            "it is optimized anyway (--strict-input refuses it)"
        ],
        by_runtime=not _only_shape_fields(model),
    )


def _only_shape_fields(model: onnx.ModelProto) -> bool:
    """Whether the checker's only complaint of ``model`` is its main graph's inputs or outputs
    declared without a shape field: it passes a copy that has them (rank 0: the checker reads
    no shape unless it infers them). The copy is the model's skeleton, without the weights; a
    model with data on disk the skeleton keeps (a Constant's) is not asked about."""
    skeleton = proto_skeleton(model).proto
    if external_tensors(skeleton):
        return False
    graph = model.graph
    bare = [
        k
        for k, value in enumerate([*graph.input, *graph.output])
        if value.type.HasField("tensor_type") and not value.type.tensor_type.HasField("shape")
    ]
    if not bare:
        return False
    copy = onnx.ModelProto()
    copy.CopyFrom(skeleton)
    values = [*copy.graph.input, *copy.graph.output]
    for k in bare:
        values[k].type.tensor_type.shape.SetInParent()
    return not checker_complaints(copy)


def unknown_opset(model: onnx.ModelProto) -> str:
    """Why seqpasses does not know the model's ONNX opset ('' when it does)."""
    newest = onnx.defs.onnx_opset_version()
    for op in model.opset_import:
        if op.domain in ("", "ai.onnx") and op.version > newest:
            return (
                f"its ONNX opset {op.version} is newer than the newest this onnx "
                f"{onnx.__version__} defines ({newest}): what its ops mean is not known"
            )
    return ""


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

"""Taking a model in: read it, pass it through the gates (the data gate, the gate of
invariants, admission), and hold it in onnx_ir, or say why it is handed back unchanged.

:func:`load` is the first step of the one optimize path (:mod:`seqpasses.pipeline`), which
``optimize()``, the CLI and ``inspect`` all run.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import onnx
import onnx_ir as ir

from seqpasses.checks.admission import admit, to_ir, unknown_opset
from seqpasses.checks.external import check_external_data
from seqpasses.checks.functions import expanded_nodes
from seqpasses.core.arithmetic import opaque_labels
from seqpasses.core.graph import number_nodes
from seqpasses.core.pause import no_cycle_collection
from seqpasses.core.proto import all_proto_nodes
from seqpasses.core.skeleton import Skeleton, proto_skeleton
from seqpasses.errors import BadInputError
from seqpasses.io import check_structure, read_model
from seqpasses.options import Options
from seqpasses.passes.guesses import forget_guesses
from seqpasses.progress import stage

__all__ = ["EXPANSION_FACTOR", "EXPANSION_FLOOR", "Loaded", "Source", "load"]


Source = onnx.ModelProto | ir.Model | str | os.PathLike[str]


@dataclass
class Loaded:
    """A model as taken in: its protobuf as read (external data left on disk), the onnx_ir
    model to optimize (None when it is handed back unchanged: ``unheld`` says why), where its
    external data lives, and the warnings admission gave."""

    proto: onnx.ModelProto
    model: ir.Model | None
    name: str
    folder: Path | None = None
    unheld: str = ""
    warnings: list[str] = field(default_factory=list)
    unheld_kind: str = "invalid"  # the reason kind of the ops it leaves (core.sequence)
    file: Path | None = None  # the model file it was read from (a pipe: None)
    by_runtime: bool = False  # taken because ONNX Runtime loads it (the checker refused it)
    _skeleton: Skeleton | None = field(default=None, repr=False)

    def skeleton(self) -> Skeleton:
        """The input's protobuf without its weights' data (made once, when first asked)."""
        if self._skeleton is None:
            self._skeleton = proto_skeleton(self.proto)
        return self._skeleton

    def fresh(self) -> ir.Model:
        """A new onnx_ir model of the input (for a trial on a copy)."""
        model = ir.serde.deserialize_model(self.proto)
        _set_base_dirs(model, self.folder)
        _unknown_dims(model)
        forget_guesses(model)
        number_nodes(model)
        return model


def _set_base_dirs(model: ir.Model, folder: Path | None) -> None:
    """External tensors of the graph and of every function read from ``folder`` (onnx_ir's
    ``set_base_dir`` covers one graph: functions would read from the working folder)."""
    if folder is None:
        return
    base = folder.resolve()
    ir.external_data.set_base_dir(model.graph, base)
    for function in model.functions.values():
        ir.external_data.set_base_dir(function.graph, base)


def _unknown_dims(model: ir.Model) -> None:
    """A declared negative dim means nothing (ONNX Runtime runs such an input on any size):
    it becomes unknown, in every graph."""
    from seqpasses.core.graph import graphs

    for _, graph in graphs(model):
        values = [*graph.inputs, *graph.outputs]
        values.extend(out for node in graph for out in node.outputs)
        for value in values:
            shape = value.shape
            if shape is not None and any(isinstance(d, int) and d < 0 for d in shape):
                value.shape = ir.Shape(
                    [ir.SymbolicDim(None) if isinstance(d, int) and d < 0 else d for d in shape]
                )


def _ir_external_paths(model: ir.Model, name: str) -> None:
    """The data gate for an onnx_ir model a caller built: each external tensor's file must lie
    inside its own base folder."""
    from seqpasses.core.graph import graphs

    for _, graph in graphs(model):
        tensors: list[ir.TensorProtocol | None] = []
        if isinstance(graph, ir.Graph):
            tensors.extend(v.const_value for v in graph.initializers.values())
        for node in graph:
            for attr in node.attributes.values():
                if attr.type == ir.AttributeType.TENSOR:
                    tensors.append(attr.value)
                elif attr.type == ir.AttributeType.TENSORS:
                    tensors.extend(attr.value)
        for tensor in tensors:
            if not isinstance(tensor, ir.ExternalTensor):
                continue
            base = Path(tensor.base_dir or ".").resolve()
            target = (base / tensor.location).resolve()
            if Path(tensor.location).is_absolute() or not target.is_relative_to(base):
                raise BadInputError(
                    f"{name}: tensor {tensor.name!r} has external data at {tensor.location!r}, "
                    "outside its base folder; refused, nothing read"
                )


EXPANSION_FACTOR = 100


EXPANSION_FLOOR = 20_000
"""A model whose function calls, inlined, would make more than ``max(EXPANSION_FLOOR,
EXPANSION_FACTOR x its nodes)`` nodes is handed back unchanged: onnx's inference and ONNX
Runtime work through every call (a function calling another twice, twenty levels deep, is a
million nodes in under 2 KB)."""


def _too_wide(proto: onnx.ModelProto, max_split: int) -> str:
    """Why the model is handed back unchanged before anything is built from it: a node with
    more inputs or outputs than ``max_split`` (a Split into 10^6 pieces gathered by one
    SequenceConstruct: every step after, the checker included, is proportional to them), or
    function calls that multiply its nodes past :data:`EXPANSION_FLOOR`."""
    if proto.functions:
        written, inlined = expanded_nodes(proto)
        if inlined > max(EXPANSION_FLOOR, EXPANSION_FACTOR * written):
            return (
                f"its function calls, inlined, make {inlined:,} nodes of its {written:,}, more "
                f"than max({EXPANSION_FLOOR:,}, {EXPANSION_FACTOR} x its nodes) "
                "(no node of the model was changed, checked or held)"
            )
    for node in all_proto_nodes(proto):
        count = max(len(node.input), len(node.output))
        if count > max_split:
            where = f"{node.op_type} '{node.name}'" if node.name else node.op_type
            side = "inputs" if len(node.input) >= len(node.output) else "outputs"
            return (
                f"{where} has {count:,} {side}, more than --max-split {max_split} allows "
                "(no node of the model was changed, checked or held)"
            )
    return ""


def load(
    source: Source, options: Options, name: str | None = None, *, admission: bool = True
) -> Loaded:
    """Take a model in (see the module docstring): a path, a ``ModelProto`` (not changed) or
    an ``onnx_ir`` model (optimized in place later). Raises
    :class:`~seqpasses.errors.BadInputError` with one line when it cannot be taken. Without
    ``admission`` (``optimize_ir``: the caller built the model in onnx_ir) the ONNX checker
    is not asked; the data gate always is."""
    folder: Path | None = None
    given: ir.Model | None = None
    path: Path | None = None
    stage("loading")
    if isinstance(source, ir.Model):
        name = name or "model"
        _ir_external_paths(source, name)
        with no_cycle_collection():
            proto = ir.serde.serialize_model(source)
        check_structure(proto, name)
        given = source
    elif isinstance(source, onnx.ModelProto):
        name = name or "model"
        proto = source
        check_structure(proto, name)
        check_external_data(proto, None, name)
    else:
        path = Path(os.fspath(source))
        name = name or str(path)
        proto, folder = read_model(path, name)
        if folder is None:  # (a pipe, read once: no second read by the checker)
            path = None
    opaque_labels(
        dim.dim_param
        for value in proto.graph.input
        if value.type.HasField("tensor_type")
        for dim in value.type.tensor_type.shape.dim
        if dim.dim_param
    )
    why = _too_wide(proto, options.max_split)
    if why:  # (before admission: onnx's checker alone walks every one of its outputs)
        return Loaded(proto, None, name, folder, why, [], "limit", file=path)
    admitted = admit(proto, name, strict=options.strict_input, path=path) if admission else None
    warnings = admitted.warnings if admitted is not None else []
    by_runtime = admitted is not None and admitted.by_runtime
    why = unknown_opset(proto)
    if why:
        return Loaded(
            proto, None, name, folder, why, warnings, "opset", file=path, by_runtime=by_runtime
        )
    # (one pause for the model's taking in: a collection between its steps would scan every
    # object the pause let through)
    with no_cycle_collection():
        model = given if given is not None else to_ir(proto)
        if isinstance(model, str):
            return Loaded(
                proto,
                None,
                name,
                folder,
                model,
                warnings,
                "unknown-sequence",
                file=path,
                by_runtime=by_runtime,
            )
        _set_base_dirs(model, folder)
        _unknown_dims(model)
        forget_guesses(model)
        number_nodes(model)
    return Loaded(proto, model, name, folder, "", warnings, file=path, by_runtime=by_runtime)

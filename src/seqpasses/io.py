"""Reading and writing model files with one-line errors.

Reading: :func:`read_model`, the one way a model file comes in. Writing: the ``write_*``
functions write a model into a staged file of a :class:`~seqpasses.transaction.Transaction`
(its external data beside it, in the same staging folder), which puts every file of a run in
place together, or none.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import onnx
import onnx_ir as ir
from google.protobuf.message import DecodeError  # type: ignore[import-untyped]

from seqpasses.checks.external import check_external_data, external_tensors, with_external_data
from seqpasses.checks.wellformed import check_wellformed
from seqpasses.core.graph import DEFAULT_DOMAINS
from seqpasses.core.skeleton import LIGHT_BYTES, Skeleton
from seqpasses.errors import BadInputError, first_line
from seqpasses.wire import FileRegion, Initializer, read_without_weights, write_model

__all__ = [
    "external_data_files",
    "is_stream",
    "read_model",
    "read_proto",
    "with_external_data",
    "write_ir",
    "write_proto",
    "write_streamed",
]


def is_stream(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` names a pipe or a character device (``/dev/stdin``, a FIFO): read
    once, it has no folder for external data."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISCHR(mode)


def read_proto(path: str | os.PathLike[str]) -> onnx.ModelProto:
    """Read a model file (its external data stays on disk), or a pipe's bytes, or say in one
    line why not."""
    file = Path(path)
    if not file.exists():
        hint = " (standard input is /dev/stdin)" if str(path) == "-" else ""
        raise BadInputError(f"{file}: no such file{hint}")
    if file.is_dir():
        raise BadInputError(f"{file}: is a directory, not a model file")
    stream = is_stream(file)
    if not stream and not file.is_file():
        raise BadInputError(f"{file}: not a regular file, a pipe or a character device")
    if not stream and file.stat().st_size == 0:
        raise BadInputError(f"{file}: the file is empty")
    try:
        if stream:
            with open(file, "rb") as handle:
                data = handle.read()
            if not data:
                raise BadInputError(f"{file}: nothing came through the pipe (no model)")
            proto = onnx.load_model_from_string(data)
        else:
            proto = onnx.load(os.fspath(file), load_external_data=False)
    except (DecodeError, ValueError, RuntimeError, OSError) as error:
        raise BadInputError(f"{file}: not an ONNX model ({first_line(error)})") from None
    check_structure(proto, str(file))
    return proto


LAZY_FILE_BYTES = 16 << 20
"""From this size a model file's large initializers are not read (:mod:`seqpasses.wire`):
each is a reference into the file itself, read only where its bytes are needed."""


def read_model(
    path: str | os.PathLike[str], name: str | None = None
) -> tuple[onnx.ModelProto, Path | None]:
    """The one way a model file comes in, for every entry (optimize, infer_shapes,
    shape_facts, verify, the CLI): :func:`read_proto`, then the data gate
    (:func:`~seqpasses.checks.external.check_external_data`). Returns the protobuf (external
    data left on disk) and the folder its data lies in (None for a pipe). A file of
    :data:`LAZY_FILE_BYTES` or more keeps its large initializers' bytes on disk too: they
    are references into the file itself (:func:`seqpasses.wire.read_without_weights`)."""
    file = Path(os.fspath(path))
    stream = is_stream(file)
    proto = None
    if not stream and file.is_file() and file.stat().st_size >= LAZY_FILE_BYTES:
        try:
            proto = read_without_weights(file, LIGHT_BYTES)
        except (ValueError, IndexError, DecodeError):
            proto = None  # (read_proto says what is wrong with it)
        if proto is not None:
            check_structure(proto, str(file))
    if proto is None:
        proto = read_proto(file)
    folder = None if stream else file.parent
    check_external_data(proto, folder, name or str(file))
    return proto, folder


def check_structure(proto: onnx.ModelProto, name: str) -> None:
    """The least a model must have to be read at all: a graph and an ONNX opset; then the
    gate of every invariant the rest relies on (:mod:`seqpasses.checks.wellformed`)."""
    if not proto.HasField("graph") or (not proto.graph.node and not proto.graph.output):
        raise BadInputError(f"{name}: not an ONNX model (no graph)")
    if not any(op.domain in DEFAULT_DOMAINS for op in proto.opset_import):
        raise BadInputError(f"{name}: the model imports no ONNX opset (opset_import is empty)")
    check_wellformed(proto, name)


_TWO_GB = 2**31


def external_data_files(
    proto: onnx.ModelProto, folder: Path, model_file: Path | None = None
) -> set[Path]:
    """The files a model's external tensors live in, resolved against ``folder``; not the
    model's own file (``model_file``), where :func:`read_model` leaves its inline weights."""
    files: set[Path] = set()
    own = model_file.resolve() if model_file is not None else None
    for _, tensor in external_tensors(proto):
        for entry in tensor.external_data:
            if entry.key == "location":
                found = (folder / entry.value).resolve()
                if found != own:
                    files.add(found)
    return files


def _protobuf(proto: onnx.ModelProto, target: Path) -> bytes:
    if proto.ByteSize() >= _TWO_GB:
        raise BadInputError(
            f"{target}: the model is larger than 2 GB; write its weights with --external-data"
        )
    data: bytes = proto.SerializeToString(deterministic=True)
    return data


def _attribute_data_in_memory(model: ir.Model) -> None:
    """External data held by node attributes (a Constant's value, in any graph or function)
    read into memory: onnx_ir writes the initializers' data to the new file, and an attribute
    would still point at the input's file, which is not beside the output."""
    from seqpasses.core.graph import all_nodes

    for node in all_nodes(model):
        for name, attr in list(node.attributes.items()):
            if attr.is_ref() or attr.type != ir.AttributeType.TENSOR:
                continue
            if isinstance(attr.value, ir.ExternalTensor):
                tensor = ir.Tensor(attr.value.numpy(), name=attr.value.name)
                node.attributes[name] = ir.AttrTensor(name, tensor)


def write_ir(model: ir.Model, staged: Path, external_data: str | None, shown: Path) -> None:
    """Write ``model`` to ``staged``; with ``external_data`` (a file name) every initializer's
    data goes to that file beside it instead of into the protobuf (which cannot exceed 2 GB).
    ``shown``: the output's name, for messages."""
    if external_data is not None:
        _attribute_data_in_memory(model)
        ir.save(model, staged, format="protobuf", external_data=external_data)
    else:
        staged.write_bytes(_protobuf(ir.serde.serialize_model(model), shown))


def _initializer(value: ir.Value) -> Initializer:
    """What :func:`seqpasses.wire.write_model` writes for an initializer: a region of a file
    for a weight on disk (copied in chunks), else its protobuf (one weight in memory)."""
    tensor = value.const_value
    name = value.name or ""
    assert tensor is not None
    if isinstance(tensor, ir.ExternalTensor):
        header = onnx.TensorProto(name=name, data_type=int(tensor.dtype))
        header.dims.extend(int(d) for d in tensor.shape.numpy())
        if tensor.doc_string:
            header.doc_string = tensor.doc_string
        file = Path(tensor.base_dir or ".") / tensor.location
        return FileRegion(header, file, tensor.offset or 0, tensor.length or file.stat().st_size)
    if isinstance(tensor, ir.TensorProtoTensor) and tensor.raw.name == name:
        raw: onnx.TensorProto = tensor.raw
        return raw
    return ir.serde.serialize_tensor(tensor)


def write_streamed(skeleton: Skeleton, model: ir.Model, staged: Path, shown: Path) -> None:
    """Write the model ``skeleton`` was made of to ``staged``, its weights inline: one weight
    in memory at a time, a weight on disk copied in chunks (:func:`seqpasses.wire.write_model`);
    the protobuf limit of 2 GB holds as for any inline model."""
    frame = skeleton.frame()
    small = {tensor.name: tensor for tensor in skeleton.proto.graph.initializer}
    initializers = model.graph.initializers
    tensors = [
        small[name] if name in small else _initializer(initializers[name])
        for name in skeleton.order
    ]
    write_model(frame, tensors, staged)
    if staged.stat().st_size >= _TWO_GB:
        raise BadInputError(
            f"{shown}: the model is larger than 2 GB; write its weights with --external-data"
        )


def write_proto(
    proto: onnx.ModelProto, staged: Path, external_data: str | None, shown: Path
) -> None:
    """Write ``proto`` (its data in memory) to ``staged``, its weights in ``external_data``
    beside it when given."""
    if external_data is not None:
        onnx.save_model(proto, staged, save_as_external_data=True, location=external_data)
    else:
        staged.write_bytes(_protobuf(proto, shown))

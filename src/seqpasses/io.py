"""Reading and writing model files with one-line errors and no half-written files.

Where a file goes is decided by what the path names (:func:`destination`): a regular file or
nothing is written atomically (a temporary file beside it, then a rename); a symlink is
followed (its target gets the file, atomically, and the link stays a link); a pipe or a
character device (``/dev/null``, ``/dev/stdout``, a FIFO) gets the bytes written into it, as
``cp`` and ``cat >`` do; anything else (a folder, a block device, a socket) is refused with one
line. An entry that is not ours to replace is never replaced.
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import onnx
import onnx_ir as ir
from google.protobuf.message import DecodeError  # type: ignore[import-untyped]

from seqpasses.checks.external import check_external_data, external_tensors
from seqpasses.core.graph import DEFAULT_DOMAINS
from seqpasses.core.skeleton import LIGHT_BYTES, Skeleton
from seqpasses.errors import BadInputError, first_line
from seqpasses.interrupts import held_back, record_written
from seqpasses.wire import FileRegion, Initializer, read_without_weights, write_model

__all__ = [
    "Destination",
    "copy_model",
    "destination",
    "external_data_files",
    "is_stream",
    "read_model",
    "read_proto",
    "save_ir",
    "save_proto",
    "save_streamed",
    "with_external_data",
    "write_text",
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


def with_external_data(proto: onnx.ModelProto, folder: Path | None) -> onnx.ModelProto:
    """A copy of ``proto`` with its external data read from ``folder`` (through the data gate
    already), or ``proto`` itself when it has none."""
    if not external_tensors(proto):
        return proto
    copy = onnx.ModelProto()
    copy.CopyFrom(proto)
    assert folder is not None  # (the gate refuses external data without a folder)
    onnx.external_data_helper.load_external_data_for_model(copy, os.fspath(folder.resolve()))
    return copy


def check_structure(proto: onnx.ModelProto, name: str) -> None:
    """The least a model must have to be read at all: a graph and an ONNX opset."""
    if not proto.HasField("graph") or (not proto.graph.node and not proto.graph.output):
        raise BadInputError(f"{name}: not an ONNX model (no graph)")
    if not any(op.domain in DEFAULT_DOMAINS for op in proto.opset_import):
        raise BadInputError(f"{name}: the model imports no ONNX opset (opset_import is empty)")


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


@dataclass(frozen=True)
class Destination:
    """Where a written file's bytes go: ``path`` (symlinks followed), replaced atomically,
    or, for a pipe or a character device (``stream``), written into."""

    given: Path
    path: Path
    stream: bool = False

    @property
    def folder(self) -> Path:
        return self.path.parent


def destination(path: str | os.PathLike[str]) -> Destination:
    """What writing to ``path`` means (see the module docstring); one line when it is refused."""
    given = Path(path)
    real = Path(os.path.realpath(given))
    try:
        mode = os.stat(given).st_mode  # (symlinks followed)
    except FileNotFoundError:
        return Destination(given, real)
    except OSError as error:
        raise BadInputError(f"{given}: cannot write ({error.strerror or error})") from None
    if stat.S_ISREG(mode):
        return Destination(given, real)
    if stat.S_ISDIR(mode):
        raise BadInputError(f"{given}: is a folder, not a file")
    if stat.S_ISFIFO(mode) or stat.S_ISCHR(mode):
        # opened by the name given: /dev/stdout resolves to a pipe's pseudo-name
        return Destination(given, given, stream=True)
    kind = "a block device" if stat.S_ISBLK(mode) else "not a regular file"
    raise BadInputError(f"{given}: is {kind}; refusing to write into it or replace it")


def _stream_into(source: Path, target: Destination) -> None:
    """Copy the file ``source`` into the pipe or device ``target`` (not truncated, not
    replaced: as ``cat source > target``)."""
    try:
        with open(source, "rb") as reader, open(target.path, "wb") as writer:
            shutil.copyfileobj(reader, writer, 1 << 20)
    except OSError as error:
        raise BadInputError(f"{target.given}: cannot write ({error.strerror or error})") from None


def _file_mode() -> int:
    """What a new file's mode would be under the current umask (temporary files are 0600)."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


def _replace(source: Path, target: Path) -> None:
    try:
        os.chmod(source, _file_mode())
        os.replace(source, target)
    except OSError as error:
        raise BadInputError(f"{target}: cannot write ({error.strerror or error})") from None


def write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` (see :func:`destination`): atomically for a file."""

    def write(staged: Path) -> None:
        staged.write_text(text, encoding="utf-8")

    _staged(path, write)


def _staged(path: str | os.PathLike[str], write: Callable[[Path], None]) -> None:
    """Run ``write(staged_file)`` in a temporary folder, then move what it wrote into place
    (see :func:`destination`): a failure leaves no half-written file. A stream (a pipe, a
    device) gets the one file written into it; files beside it (external data) need a real
    folder."""
    target = destination(path)
    if not target.stream and not target.folder.is_dir():
        raise BadInputError(f"{target.folder}: output folder does not exist")
    try:
        staging = Path(
            tempfile.mkdtemp(
                prefix=f".{target.path.name}.", dir=None if target.stream else target.folder
            )
        )
    except OSError as error:
        raise BadInputError(f"{target.given}: cannot write ({error.strerror or error})") from None
    try:
        staged = staging / target.path.name
        write(staged)
        if target.stream and any(made != staged for made in staging.iterdir()):
            raise BadInputError(
                f"{target.given}: a pipe or a device cannot hold a model's external data "
                "beside it; write to a file"
            )
        with held_back():  # (a model and its data go in place together, or not at all)
            if target.stream:
                _stream_into(staged, target)
            else:
                for made in staging.iterdir():
                    if made != staged:
                        _replace(made, destination(target.folder / made.name).path)
                _replace(staged, target.path)
            record_written(target.given)
    except OSError as error:
        raise BadInputError(f"{target.given}: cannot write ({error.strerror or error})") from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)


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


def save_ir(model: ir.Model, path: str | os.PathLike[str], external_data: str | None) -> None:
    """Write ``model`` atomically; with ``external_data`` (a file name beside the output)
    every initializer's data goes there instead of into the protobuf (which cannot exceed
    2 GB)."""

    def write(staged: Path) -> None:
        if external_data is not None:
            _attribute_data_in_memory(model)
            ir.save(model, staged, format="protobuf", external_data=external_data)
        else:
            staged.write_bytes(_protobuf(ir.serde.serialize_model(model), Path(path)))

    _staged(path, write)


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


def save_streamed(skeleton: Skeleton, model: ir.Model, path: str | os.PathLike[str]) -> None:
    """Write the model ``skeleton`` was made of, its weights inline, atomically: one weight in
    memory at a time, a weight on disk copied in chunks (:func:`seqpasses.wire.write_model`);
    the protobuf limit of 2 GB holds as for any inline model."""
    frame = skeleton.frame()
    small = {tensor.name: tensor for tensor in skeleton.proto.graph.initializer}
    initializers = model.graph.initializers
    tensors = [
        small[name] if name in small else _initializer(initializers[name])
        for name in skeleton.order
    ]

    def write(staged: Path) -> None:
        write_model(frame, tensors, staged)
        if staged.stat().st_size >= _TWO_GB:
            raise BadInputError(
                f"{path}: the model is larger than 2 GB; write its weights with --external-data"
            )

    _staged(path, write)


def copy_model(source: Path, path: str | os.PathLike[str]) -> None:
    """Write the model file ``source`` as it is to ``path`` (atomically, in chunks)."""

    def write(staged: Path) -> None:
        shutil.copyfile(source, staged)

    _staged(path, write)


def save_proto(
    proto: onnx.ModelProto, path: str | os.PathLike[str], external_data: str | None
) -> None:
    """Write ``proto`` (its data in memory) atomically, its weights in ``external_data``
    beside it when given."""

    def write(staged: Path) -> None:
        if external_data is not None:
            onnx.save_model(proto, staged, save_as_external_data=True, location=external_data)
        else:
            staged.write_bytes(_protobuf(proto, Path(path)))

    _staged(path, write)

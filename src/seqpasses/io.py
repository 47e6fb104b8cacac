"""Reading and writing model files with one-line errors and no half-written files."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

import onnx
import onnx_ir as ir
from google.protobuf.message import DecodeError  # type: ignore[import-untyped]

from seqpasses.checks.external import external_tensors
from seqpasses.core.graph import DEFAULT_DOMAINS
from seqpasses.errors import BadInputError, first_line

__all__ = ["external_data_files", "read_proto", "save_ir", "save_proto", "write_text"]


def read_proto(path: str | os.PathLike[str]) -> onnx.ModelProto:
    """Read a model file (its external data stays on disk), or say in one line why not."""
    file = Path(path)
    if not file.exists():
        raise BadInputError(f"{file}: no such file")
    if file.is_dir():
        raise BadInputError(f"{file}: is a directory, not a model file")
    if file.stat().st_size == 0:
        raise BadInputError(f"{file}: the file is empty")
    try:
        proto = onnx.load(os.fspath(file), load_external_data=False)
    except (DecodeError, ValueError, RuntimeError, OSError) as error:
        raise BadInputError(f"{file}: not an ONNX model ({first_line(error)})") from None
    check_structure(proto, str(file))
    return proto


def check_structure(proto: onnx.ModelProto, name: str) -> None:
    """The least a model must have to be read at all: a graph and an ONNX opset."""
    if not proto.HasField("graph") or (not proto.graph.node and not proto.graph.output):
        raise BadInputError(f"{name}: not an ONNX model (no graph)")
    if not any(op.domain in DEFAULT_DOMAINS for op in proto.opset_import):
        raise BadInputError(f"{name}: the model imports no ONNX opset (opset_import is empty)")


_TWO_GB = 2**31


def external_data_files(proto: onnx.ModelProto, folder: Path) -> set[Path]:
    """The files a model's external tensors live in, resolved against ``folder``."""
    files: set[Path] = set()
    for _, tensor in external_tensors(proto):
        for entry in tensor.external_data:
            if entry.key == "location":
                files.add((folder / entry.value).resolve())
    return files


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
    """Write ``text`` to ``path`` atomically (a temporary file beside it, then a rename)."""
    try:
        descriptor, temporary = tempfile.mkstemp(
            prefix=f".{path.name}.", suffix=".tmp", dir=path.parent
        )
    except OSError as error:
        raise BadInputError(f"{path}: cannot write ({error.strerror or error})") from None
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
            handle.write(text)
        _replace(Path(temporary), path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _staged(path: str | os.PathLike[str], write: Callable[[Path], None]) -> None:
    """Run ``write(staged_file)`` in a temporary folder beside ``path``, then move what it
    wrote into place: a failure leaves no half-written file."""
    target = Path(path)
    if not target.parent.is_dir():
        raise BadInputError(f"{target.parent}: output folder does not exist")
    if target.is_dir():
        raise BadInputError(f"{target}: is a directory")
    try:
        staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    except OSError as error:
        raise BadInputError(f"{target}: cannot write ({error.strerror or error})") from None
    try:
        staged = staging / target.name
        write(staged)
        for made in staging.iterdir():
            if made != staged:
                _replace(made, target.parent / made.name)
        _replace(staged, target)
    except OSError as error:
        raise BadInputError(f"{target}: cannot write ({error.strerror or error})") from None
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

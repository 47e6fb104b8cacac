"""The one gate for every byte read from outside the model file.

A tensor may keep its data in another file (``data_location: EXTERNAL``), in the main graph,
a subgraph, a node attribute, a model-local function's body or a function's attribute
default. Before anything is read, every such tensor must name a relative ``location`` that,
resolved against the model's own folder (``..`` and symlinks followed), stays inside that
folder and is a regular file, with ``offset`` and ``length`` inside the file and matching the
tensor's size. Anything else is refused with one line naming the tensor and the location
(:class:`~seqpasses.errors.BadInputError`): nothing is read, nothing is written. This is the
rule ONNX itself adopted for graphs (CVE-2022-25882, CVE-2024-27318), applied everywhere.
"""

from __future__ import annotations

import math
import os
from pathlib import Path, PurePosixPath, PureWindowsPath

import onnx

from seqpasses.core.proto import Site, all_proto_tensors
from seqpasses.errors import BadInputError

__all__ = ["check_external_data", "external_tensors", "with_external_data"]


_NAME_MAX = 255
_PATH_MAX = 4096
"""The longest file name and path most file systems take (bytes)."""


def external_tensors(proto: onnx.ModelProto) -> list[tuple[Site, onnx.TensorProto]]:
    """Every tensor of ``proto`` whose data lives in another file, with where it sits."""
    return [
        (where, tensor)
        for where, tensor in all_proto_tensors(proto)
        if tensor.data_location == onnx.TensorProto.EXTERNAL
    ]


def _nbytes(tensor: onnx.TensorProto) -> int | None:
    """The bytes the tensor's data takes, when its dtype has a fixed size."""
    try:
        itemsize = onnx.helper.tensor_dtype_to_np_dtype(tensor.data_type).itemsize
    except Exception:
        return None
    if tensor.data_type == onnx.TensorProto.STRING or itemsize == 0:
        return None
    count = math.prod(int(d) for d in tensor.dims)
    if tensor.data_type in (onnx.TensorProto.INT4, onnx.TensorProto.UINT4):  # two per byte
        return (count + 1) // 2
    return count * int(itemsize)


def _refuse(name: str, where: Site, tensor: onnx.TensorProto, location: str, why: str) -> None:
    raise BadInputError(
        f"{name}: tensor {tensor.name!r} ({where}) has external data at {location!r}: {why}; "
        "refused, nothing read"
    )


def _number(text: str) -> int | None:
    try:
        value = int(text)
    except ValueError:
        return None
    return value if value >= 0 else None


def check_external_data(proto: onnx.ModelProto, folder: Path | None, name: str) -> None:
    """Refuse ``proto`` unless every external tensor's data lies inside ``folder`` (the
    model file's own folder; None when the model came without one) within its file."""
    found = external_tensors(proto)
    if not found:
        return
    base = folder.resolve() if folder is not None else None
    for where, tensor in found:
        entries = {entry.key: entry.value for entry in tensor.external_data}
        location = entries.get("location", "")
        if not location:
            _refuse(name, where, tensor, location, "no location is given")
        if base is None:
            _refuse(
                name,
                where,
                tensor,
                location,
                "the model was given without the folder it was loaded from (pass its path, "
                "or load it with onnx.load(path), which reads the data)",
            )
            return
        if (
            PurePosixPath(location).is_absolute()
            or PureWindowsPath(location).is_absolute()
            or PureWindowsPath(location).drive
            or location.startswith("\\")
        ):
            _refuse(name, where, tensor, location, "an absolute path (it must be relative)")
        if "\0" in location:
            _refuse(name, where, tensor, location, "it holds a NUL byte")
        if len(location.encode("utf-8")) > _PATH_MAX or any(
            len(part.encode("utf-8")) > _NAME_MAX for part in PurePosixPath(location).parts
        ):
            _refuse(name, where, tensor, location, "the name is too long for a file")
        try:
            target = (base / location).resolve()
            exists = target.is_relative_to(base) and target.is_file()
        except (OSError, RuntimeError, ValueError) as error:  # (a symlink loop, say)
            why = error.strerror if isinstance(error, OSError) and error.strerror else error
            _refuse(name, where, tensor, location, f"it cannot be resolved ({why})")
            return
        if not target.is_relative_to(base):
            _refuse(
                name,
                where,
                tensor,
                location,
                f"it resolves to {os.fspath(target)!r}, outside the model's folder",
            )
        if not exists:
            _refuse(name, where, tensor, location, "no such file in the model's folder")
        size = target.stat().st_size
        offset = _number(entries.get("offset", "0"))
        if offset is None:
            _refuse(name, where, tensor, location, f"offset {entries['offset']!r} is not valid")
            return
        length = _number(entries["length"]) if "length" in entries else None
        if "length" in entries and length is None:
            _refuse(name, where, tensor, location, f"length {entries['length']!r} is not valid")
        needed = _nbytes(tensor)
        if length is not None and needed is not None and length != needed:
            _refuse(
                name, where, tensor, location, f"length {length} is not the tensor's {needed} bytes"
            )
        span = length if length is not None else needed
        if offset > size or (span is not None and offset + span > size):
            _refuse(
                name,
                where,
                tensor,
                location,
                f"offset {offset} and {span} bytes reach past the end of the file ({size} bytes)",
            )


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

"""Weights are bytes to carry, not to copy: a model file read without its weights, and one
written a weight at a time.

ONNX files are protobuf, and protobuf's wire format lets a reader skip a field it does not
want by its length. :func:`read_without_weights` walks a model file's bytes (mapped, not
read) down to the main graph's initializers, and hands protobuf the model without the
``raw_data`` of every large one: each such tensor says instead where its bytes lie *in the
model file itself* (``data_location: EXTERNAL``, ``location`` the file's own name, ``offset``
and ``length`` of its ``raw_data``). onnx_ir, onnx's checker (through a skeleton) and ONNX
Runtime (``session.model_external_initializers_file_folder_path``) all read such a tensor
from the file when they need it: nothing holds a second copy of the weights.

:func:`write_model` writes a model whose graph's initializers are given one by one (a
protobuf message, or a header and a region of a file to copy in chunks): the graph field's
length is summed first, then each initializer is written as it comes. The file is the same
protobuf message ``onnx.save`` would write (fields of the model in another order, which
every parser accepts), and no more than one weight is ever in memory.
"""

from __future__ import annotations

import mmap
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

import onnx

__all__ = ["FileRegion", "Initializer", "read_without_weights", "write_model"]

_MODEL_GRAPH = 7
_GRAPH_INITIALIZER = 5
_TENSOR_RAW_DATA = 9
_TENSOR_DATA_LOCATION = 14
_VARINT, _I64, _LEN, _I32 = 0, 1, 2, 5


def _varint(data: bytes | mmap.mmap, at: int) -> tuple[int, int]:
    value, shift = 0, 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, at
        shift += 7
        if shift > 63:
            raise ValueError("a varint longer than 10 bytes")


def _encode_varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _fields(
    data: bytes | mmap.mmap, start: int, end: int
) -> Iterable[tuple[int, int, int, int, int]]:
    """The fields of the message in ``data[start:end]``: (number, wire type, where the field
    starts, where its payload starts, where it ends)."""
    at = start
    while at < end:
        begin = at
        key, at = _varint(data, at)
        number, kind = key >> 3, key & 7
        if kind == _VARINT:
            _, at = _varint(data, at)
            yield number, kind, begin, begin, at
        elif kind == _I64:
            at += 8
            yield number, kind, begin, begin, at
        elif kind == _I32:
            at += 4
            yield number, kind, begin, begin, at
        elif kind == _LEN:
            length, payload = _varint(data, at)
            at = payload + length
            yield number, kind, begin, payload, at
        else:
            raise ValueError(f"wire type {kind} is not used by ONNX")
        if at > end:
            raise ValueError("a field runs past the end of its message")


def _len_field(number: int, payload: bytes) -> bytes:
    return _encode_varint(number << 3 | _LEN) + _encode_varint(len(payload)) + payload


def _tensor_without_data(
    data: mmap.mmap, start: int, end: int, location: str, least: int
) -> bytes | None:
    """The initializer ``data[start:end]`` with its ``raw_data`` replaced by a reference to
    where it lies in the file, or None when it is small, already external, or has none."""
    raw: tuple[int, int, int] | None = None
    for number, kind, begin, payload, stop in _fields(data, start, end):
        if number == _TENSOR_RAW_DATA and kind == _LEN:
            raw = (begin, payload, stop)
        elif number == _TENSOR_DATA_LOCATION and kind == _VARINT:
            value, _ = _varint(data, begin + 1)
            if value == onnx.TensorProto.EXTERNAL:
                return None
    if raw is None or raw[2] - raw[1] < least:
        return None
    begin, payload, stop = raw
    header = onnx.TensorProto()
    header.ParseFromString(bytes(data[start:begin]) + bytes(data[stop:end]))
    header.data_location = onnx.TensorProto.EXTERNAL
    del header.external_data[:]
    for key, text in (
        ("location", location),
        ("offset", str(payload)),
        ("length", str(stop - payload)),
    ):
        entry = header.external_data.add()
        entry.key, entry.value = key, text
    serialized: bytes = header.SerializeToString()
    return serialized


def read_without_weights(path: Path, least: int) -> onnx.ModelProto | None:
    """The model in the file ``path`` with every main-graph initializer of ``least`` bytes or
    more of ``raw_data`` read as a reference into the file itself (see the module docstring);
    None when there is none (the caller reads the file as usual). ValueError when the file is
    not a protobuf message."""
    with open(path, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        if size < least:
            return None
        data = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
    try:
        pieces: list[bytes] = []
        changed = False
        for number, kind, begin, payload, stop in _fields(data, 0, size):
            if number != _MODEL_GRAPH or kind != _LEN:
                pieces.append(bytes(data[begin:stop]))
                continue
            graph: list[bytes] = []
            for inner, inner_kind, at, inner_payload, inner_stop in _fields(data, payload, stop):
                tensor = None
                if inner == _GRAPH_INITIALIZER and inner_kind == _LEN:
                    tensor = _tensor_without_data(data, inner_payload, inner_stop, path.name, least)
                if tensor is None:
                    graph.append(bytes(data[at:inner_stop]))
                else:
                    graph.append(_len_field(_GRAPH_INITIALIZER, tensor))
                    changed = True
            pieces.append(_len_field(_MODEL_GRAPH, b"".join(graph)))
        if not changed:
            return None
        model = onnx.ModelProto()
        model.ParseFromString(b"".join(pieces))
        return model
    finally:
        data.close()


@dataclass(frozen=True)
class FileRegion:
    """A tensor's data as ``length`` bytes at ``offset`` of ``path``, with its ``header`` (the
    TensorProto without data: name, dtype, dims)."""

    header: onnx.TensorProto
    path: Path
    offset: int
    length: int


Initializer = onnx.TensorProto | FileRegion


def _size(tensor: Initializer) -> int:
    if isinstance(tensor, onnx.TensorProto):
        return int(tensor.ByteSize())
    raw = 1 + len(_encode_varint(tensor.length)) + tensor.length
    return int(tensor.header.ByteSize()) + raw


def _write_tensor(out: BinaryIO, tensor: Initializer) -> None:
    if isinstance(tensor, onnx.TensorProto):
        out.write(tensor.SerializeToString())
        return
    out.write(tensor.header.SerializeToString())
    out.write(_encode_varint(_TENSOR_RAW_DATA << 3 | _LEN) + _encode_varint(tensor.length))
    with open(tensor.path, "rb") as source:
        source.seek(tensor.offset)
        left = tensor.length
        while left:
            chunk = source.read(min(left, 16 << 20))
            if not chunk:
                raise OSError(f"{tensor.path}: shorter than its tensor's data")
            out.write(chunk)
            left -= len(chunk)


def write_model(model: onnx.ModelProto, initializers: list[Initializer], target: Path) -> None:
    """Write ``model`` (its main graph holds no initializer) with ``initializers`` as its
    graph's, in their order, to the file ``target``: one weight in memory at a time."""
    graph = model.graph
    assert not graph.initializer
    head = onnx.ModelProto()
    head.CopyFrom(model)
    head.ClearField("graph")
    graph_bytes = graph.SerializeToString()
    sizes = [_size(tensor) for tensor in initializers]
    key = _encode_varint(_GRAPH_INITIALIZER << 3 | _LEN)
    length = len(graph_bytes) + sum(len(key) + len(_encode_varint(n)) + n for n in sizes)
    with open(target, "wb") as out:
        out.write(head.SerializeToString())
        out.write(_encode_varint(_MODEL_GRAPH << 3 | _LEN) + _encode_varint(length))
        out.write(graph_bytes)
        for tensor, size in zip(initializers, sizes, strict=True):
            out.write(key + _encode_varint(size))
            _write_tensor(out, tensor)

"""The gate's word on data types and tensors: the types onnx and onnx_ir know, a tensor's
bits per element, and whether a tensor held in the model holds what its dims say."""

from __future__ import annotations

from collections.abc import Callable
from functools import cache

import onnx

__all__ = ["Refusal", "bits", "holds_its_data", "known_dtypes", "tensor_dtypes"]


class Refusal(Exception):
    """What is wrong with a model, in words (the gate adds the model's name)."""


@cache
def known_dtypes() -> frozenset[int]:
    """The data types both onnx and onnx_ir know (UNDEFINED excluded)."""
    import onnx_ir as ir

    held = {int(member) for member in ir.DataType}
    return frozenset(v for v in onnx.TensorProto.DataType.values() if v and v in held)


_PER_ELEMENT: dict[int, int] = {onnx.TensorProto.COMPLEX64: 2, onnx.TensorProto.COMPLEX128: 2}
"""Values of a typed data field per element, where not one."""


def holds_its_data(tensor: onnx.TensorProto, count: int, where: Callable[[], str]) -> None:
    """A tensor held in the model holds as many values as its dims say (a Constant whose data
    type or dims were changed alone is read as an array of another shape)."""
    dtype = tensor.data_type
    if tensor.HasField("raw_data"):
        if dtype == onnx.TensorProto.STRING:
            raise Refusal(f"{where()} is a tensor of strings with raw data")
        held = len(tensor.raw_data)
        wanted = [(count * bits(dtype) + 7) // 8]
        what = "bytes"
    else:
        field = onnx.helper.tensor_dtype_to_field(dtype)
        held = len(getattr(tensor, field))
        width = bits(dtype)
        wanted = [count * _PER_ELEMENT.get(dtype, 1)]
        if width < 8:  # (sub-byte values are packed, a byte's worth to each)
            wanted.append((count * width + 7) // 8)
        what = "values"
    if held not in wanted:
        raise Refusal(
            f"{where()} holds {held} {what} of data; its dims {list(tensor.dims)} and data "
            f"type {onnx.TensorProto.DataType.Name(dtype)} need {wanted[0]}"
        )


@cache
def bits(dtype: int) -> int:
    """Bits per element (a string counts one byte: its data is not counted here)."""
    import onnx_ir as ir

    try:
        return int(ir.DataType(dtype).bitwidth)
    except (TypeError, ValueError):
        return 8


@cache
def tensor_dtypes() -> frozenset[int]:
    """The data types onnx_ir reads and writes tensors of (onnx_ir 1.1 cannot write the
    6-bit floats it reads)."""
    import onnx_ir as ir

    held = set()
    for dtype in known_dtypes():
        tensor = onnx.TensorProto(name="t", data_type=dtype, dims=[2])
        if dtype == onnx.TensorProto.STRING:
            tensor.string_data.extend([b"a", b"b"])
        else:
            tensor.raw_data = bytes(16)
        try:
            ir.serde.serialize_tensor(ir.serde.deserialize_tensor(tensor))
        except Exception:
            continue
        held.add(dtype)
    return frozenset(held)

"""The input sets verification runs on: seeded random ones, or the caller's from an ``.npz``."""

from __future__ import annotations

import math
import os
import zipfile
from collections.abc import Collection
from pathlib import Path
from typing import Any

import numpy as np
import onnx

from seqpasses.errors import BadInputError
from seqpasses.verification.engines import ort_session

__all__ = [
    "MAX_DRAWN_BYTES",
    "DrawError",
    "check_inputs",
    "inputs_that_run",
    "load_inputs",
    "random_inputs",
]

MAX_DRAWN_BYTES = 1 << 30
"""The most bytes one drawn input set may take: a declared shape is a claim, not a fact, and
``float[100000,100000]`` would ask for 40 GB."""


class DrawError(ValueError):
    """No input set can be drawn from what the model declares (too large): one line."""


def _random_tensor(
    tensor_type: onnx.TypeProto.Tensor,
    sizes: dict[str, int],
    rng: np.random.Generator,
    scale: int,
    budget: list[int],
) -> np.ndarray:
    shape: list[int] = []
    if tensor_type.HasField("shape"):
        for dim in tensor_type.shape.dim:
            if dim.HasField("dim_value") and dim.dim_value >= 0:
                shape.append(dim.dim_value)
            else:
                # (unnamed dims, and the negative ones ONNX Runtime runs on any size, share
                # one size, as before)
                name = dim.dim_param if dim.HasField("dim_param") else ""
                if name not in sizes:
                    sizes[name] = int(rng.integers(2, 4)) * scale
                shape.append(sizes[name])
    try:
        dtype = onnx.helper.tensor_dtype_to_np_dtype(tensor_type.elem_type)
    except (KeyError, ValueError):
        raise DrawError(
            f"an input's element type ({tensor_type.elem_type}) is not one a value can be "
            "drawn of; give inputs: --check-inputs FILE.npz"
        ) from None
    size = math.prod(shape) * max(np.dtype(dtype).itemsize, 8 if dtype == np.object_ else 1)
    budget[0] -= size
    if budget[0] < 0:
        raise DrawError(
            f"the declared input shapes ask for more than {MAX_DRAWN_BYTES >> 30} GiB per input "
            f"set ({np.dtype(dtype).name}{shape}); give inputs: --check-inputs FILE.npz, "
            "or --input-shape NAME:D1,D2,..."
        )
    if dtype == np.bool_:
        return rng.integers(0, 2, size=shape).astype(np.bool_)
    if np.issubdtype(dtype, np.integer):
        return rng.integers(-3, 4, size=shape).astype(dtype)
    if np.issubdtype(dtype, np.complexfloating):
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    if dtype == np.object_:
        return np.array(
            [f"s{int(v)}" for v in rng.integers(0, 9, size=shape).reshape(-1)], dtype=object
        ).reshape(shape)
    return rng.standard_normal(shape).astype(dtype)


def _random_value(
    type_proto: onnx.TypeProto,
    sizes: dict[str, int],
    rng: np.random.Generator,
    scale: int,
    budget: list[int],
) -> Any:
    kind = type_proto.WhichOneof("value")
    if kind == "tensor_type":
        return _random_tensor(type_proto.tensor_type, sizes, rng, scale, budget)
    if kind == "sequence_type":
        element = type_proto.sequence_type.elem_type
        return [_random_value(element, sizes, rng, scale, budget) for _ in range(3)]
    if kind == "optional_type":
        return _random_value(type_proto.optional_type.elem_type, sizes, rng, scale, budget)
    raise ValueError(f"cannot make a random input of type {kind}")


def random_inputs(
    model: onnx.ModelProto, seed: int = 0, scale: int = 1, given: Collection[str] = ()
) -> dict[str, Any]:
    """Seeded random feeds for the graph inputs that are not initializers.

    Symbolic dims are bound to one small size each (2 or 3, times ``scale``), shared by every
    input that names them; a negative declared dim is free too. Inputs named in ``given``
    (the caller's) are not drawn. :class:`DrawError` when the declared shapes ask for more
    than :data:`MAX_DRAWN_BYTES`.
    """
    rng = np.random.default_rng(seed)
    initializers = {init.name for init in model.graph.initializer}
    sizes: dict[str, int] = {}
    budget = [MAX_DRAWN_BYTES]
    return {
        inp.name: _random_value(inp.type, sizes, rng, scale, budget)
        for inp in model.graph.input
        if inp.name not in initializers and inp.name not in given
    }


def _arrays_hold_their_bytes(path: str | os.PathLike[str]) -> None:
    """Each array of an ``.npz`` holds the bytes its header claims (read before any array:
    a header may claim 10^12 elements in a file of a few hundred bytes). ValueError if not."""
    with zipfile.ZipFile(os.fspath(path)) as archive:
        for info in archive.infolist():
            if not info.filename.endswith(".npy"):
                continue
            with archive.open(info) as member:
                version = np.lib.format.read_magic(member)
                if version == (1, 0):
                    shape, _, dtype = np.lib.format.read_array_header_1_0(member)
                else:
                    shape, _, dtype = np.lib.format.read_array_header_2_0(member)
                header = member.tell()
            claimed = math.prod(shape) * dtype.itemsize
            if dtype.hasobject or claimed > info.file_size - header:
                raise ValueError(
                    f"array {info.filename[:-4]!r} claims {shape} of {dtype} "
                    f"({claimed:,} bytes) but holds {info.file_size - header:,}"
                )


def load_inputs(path: str | os.PathLike[str]) -> list[dict[str, np.ndarray]]:
    """Input sets from an ``.npz``: arrays named after graph inputs (one set), or
    ``run<k>.input:<name>`` (one set per ``k``, as the committed PyTorch exports hold)."""
    _arrays_hold_their_bytes(path)
    with np.load(os.fspath(path), allow_pickle=False) as data:
        keyed: dict[str, dict[str, np.ndarray]] = {}
        for key in data.files:
            if ".input:" in key:
                run, name = key.split(".input:", 1)
                keyed.setdefault(run, {})[name] = data[key]
            elif ".output:" not in key:
                keyed.setdefault("", {})[key] = data[key]
    return [keyed[k] for k in sorted(keyed, key=lambda k: (len(k), k))]


def check_inputs(path: Path, model: onnx.ModelProto) -> list[dict[str, np.ndarray]]:
    """``--check-inputs``: the input sets of an ``.npz`` (:func:`load_inputs`), each array
    named after a graph input of the declared dtype and rank; one line and exit 2 when not
    (inputs a set leaves out are drawn at random)."""
    try:
        sets = load_inputs(path)
    except (OSError, ValueError, EOFError, KeyError, zipfile.BadZipFile) as error:
        text = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        raise BadInputError(
            f"{path}: not an .npz of input arrays ({text}) (--check-inputs)"
        ) from None
    initializers = {init.name for init in model.graph.initializer}
    declared = {i.name: i.type for i in model.graph.input if i.name not in initializers}
    if not sets or not any(sets):
        raise BadInputError(f"{path}: holds no input arrays (--check-inputs)")
    for number, feeds in enumerate(sets):
        where = f"{path}" + (f" (set {number})" if len(sets) > 1 else "")
        for name, array in feeds.items():
            if name not in declared:
                known = ", ".join(sorted(declared)) or "none"
                raise BadInputError(
                    f"{where}: array {name!r} names no graph input (inputs: {known}) "
                    "(--check-inputs)"
                )
            kind = declared[name].WhichOneof("value")
            if kind != "tensor_type":
                continue
            tensor = declared[name].tensor_type
            expected = onnx.helper.tensor_dtype_to_np_dtype(tensor.elem_type)
            if np.dtype(array.dtype) != np.dtype(expected) and not (
                expected == np.object_ and array.dtype.kind in "US"
            ):
                raise BadInputError(
                    f"{where}: array {name!r} is {array.dtype}, the input is {np.dtype(expected)} "
                    "(--check-inputs)"
                )
            if tensor.HasField("shape") and len(tensor.shape.dim) != array.ndim:
                raise BadInputError(
                    f"{where}: array {name!r} has rank {array.ndim}, the input "
                    f"{len(tensor.shape.dim)} (--check-inputs)"
                )
    return sets


def inputs_that_run(path: Path) -> dict[str, np.ndarray] | None:
    """Input arrays the model at ``path`` runs on: the first set stored beside it
    (``<name>.npz``), else seeded random ones whose free dims grow (x1, x4, x16, x64) until
    ONNX Runtime runs the model; None when no draw does (it always fails)."""
    stored = path.with_suffix(".npz")
    if stored.exists():
        return {k: np.asarray(v) for k, v in load_inputs(stored)[0].items()}
    model = onnx.load(path, load_external_data=False)
    session = ort_session(path)
    for scale in (1, 4, 16, 64):
        feeds = {k: np.asarray(v) for k, v in random_inputs(model, 0, scale=scale).items()}
        try:
            session.run(None, feeds)
        except Exception:
            continue
        return feeds
    return None

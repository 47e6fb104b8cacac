"""Loading and saving models with one-line errors and no half-written files."""

from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import onnx
import onnx_ir as ir
from google.protobuf.message import DecodeError  # type: ignore[import-untyped]

from seqpasses.admit import BadInputError, admit, first_line, to_ir
from seqpasses.core.graph import DEFAULT_DOMAINS

__all__ = [
    "BadInputError",
    "Loaded",
    "external_data_files",
    "load_model",
    "read_model",
    "save_model",
    "write_text",
]


@dataclass
class Loaded:
    """A model file as read: its protobuf (external data not loaded), the onnx_ir model (None
    when onnx_ir cannot hold it: ``unheld`` says why) and the warnings to show."""

    proto: onnx.ModelProto
    model: ir.Model | None
    unheld: str = ""
    warnings: list[str] = field(default_factory=list)


def load_model(path: str | os.PathLike[str], *, strict: bool = False) -> ir.Model:
    """Load a model file, raising :class:`BadInputError` with a one-line reason when it
    cannot be taken (see :mod:`seqpasses.admit`) or onnx_ir cannot hold it."""
    loaded = read_model(path, strict=strict)
    if loaded.model is None:
        raise BadInputError(f"{path}: {loaded.unheld}")
    return loaded.model


def read_model(path: str | os.PathLike[str], *, strict: bool = False) -> Loaded:
    """Read, admit (:func:`seqpasses.admit.admit`) and deserialize a model file."""
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
    if not proto.HasField("graph") or (not proto.graph.node and not proto.graph.output):
        raise BadInputError(f"{file}: not an ONNX model (no graph)")
    if not any(op.domain in DEFAULT_DOMAINS for op in proto.opset_import):
        raise BadInputError(f"{file}: the model imports no ONNX opset (opset_import is empty)")
    warnings = admit(file, str(file), strict=strict)
    model = to_ir(proto)
    if isinstance(model, str):
        return Loaded(proto, None, model, warnings)
    # External weights stay on disk until something reads them.
    ir.external_data.set_base_dir(model.graph, file.resolve().parent)
    return Loaded(proto, model, "", warnings)


_TWO_GB = 2**31


def external_data_files(proto: onnx.ModelProto, folder: Path) -> set[Path]:
    """The files a model's external initializers live in, resolved against ``folder``."""
    files: set[Path] = set()
    for tensor in onnx.external_data_helper._get_all_tensors(proto):
        if tensor.data_location != onnx.TensorProto.EXTERNAL:
            continue
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


def save_model(
    model: ir.Model | None,
    path: str | os.PathLike[str],
    external_data: str | None = None,
    proto: onnx.ModelProto | None = None,
) -> None:
    """Write ``model`` to ``path`` atomically, with the file mode the umask gives.

    Everything is written into a temporary folder beside ``path`` and renamed into place, so
    a failure leaves no half-written file. With ``external_data`` (a file name beside the
    output) every initializer's data goes there instead of into the protobuf, which cannot
    exceed 2 GB. ``proto``: ``model`` already serialized (written as it is when no external
    data is asked for); with ``model`` None, ``proto`` is written (its external data loaded).
    """
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
        if external_data is not None:
            if model is not None:
                ir.save(model, staged, format="protobuf", external_data=external_data)
            else:
                assert proto is not None
                onnx.save_model(proto, staged, save_as_external_data=True, location=external_data)
            data = staging / external_data
            if data.exists():
                _replace(data, target.parent / external_data)
        else:
            if proto is None:
                assert model is not None
                proto = ir.serde.serialize_model(model)
            if proto.ByteSize() >= _TWO_GB:
                raise BadInputError(
                    f"{target}: the model is larger than 2 GB; write its weights with --external-data"
                )
            staged.write_bytes(proto.SerializeToString(deterministic=True))
        _replace(staged, target)
    except OSError as error:
        raise BadInputError(f"{target}: cannot write ({error.strerror or error})") from None
    finally:
        shutil.rmtree(staging, ignore_errors=True)

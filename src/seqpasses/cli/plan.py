"""Every path a run will write, planned and checked before the first byte.

A run writes models, their external data files and a JSON report (in a folder run, one model
and one data file per input model, and one report). Before anything is written, each path
is checked:

- it is distinct from every other path of the run and from every input (the input model,
  its external data, ``--check-inputs``; in a folder run, every file under the input folder
  and the folder of every input model), after ``..`` and symlinks are resolved: an output
  tree that reaches into the input tree through a symlink is refused;
- its folder exists and is writable (in a folder run: or is one the run makes);
- an external data file lies beside its model, under a plain file name, and is not a symlink
  (onnx refuses to read external data through one); an existing one must be the data of the
  model being replaced (ours), never another file;
- an existing report must be a JSON file (ours), never a model or anything else.

A refusal is a :class:`~seqpasses.errors.BadInputError` (one line, exit 2), with nothing
written. The files are then written through one :class:`~seqpasses.transaction.Transaction`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from seqpasses.errors import BadInputError
from seqpasses.transaction import Destination, destination, resolved

__all__ = [
    "Planned",
    "check_data_name",
    "check_report",
    "data_of",
    "plan_batch",
    "plan_job",
    "writable",
]

_NAME_MAX = 255
"""The longest file name most file systems take (bytes of UTF-8)."""


@dataclass(frozen=True)
class Planned:
    """What one model's run writes: the output, and the external data file beside it when
    one may be written (its name, and the file a previous output of ours left there)."""

    output: Destination
    data: Destination | None = None
    data_name: str | None = None
    old_data: bool = False  # data exists at ``data`` and is the replaced output's own


def _inside(path: Path, folder: Path) -> bool:
    return path == folder or path.is_relative_to(folder)


def writable(path: Path, what: str, folders: Iterable[Path] = ()) -> Destination:
    """Where writing ``path`` goes (:func:`~seqpasses.transaction.destination`), when it can
    be written: a stream must be writable, a file's folder must exist (or be one of
    ``folders``, which the run makes) and be writable."""
    made = {resolved(folder) for folder in folders}
    folder = path.parent
    if resolved(folder) not in made:
        if not folder.exists():
            raise BadInputError(f"{folder}: {what} folder does not exist")
        if not folder.is_dir():
            raise BadInputError(f"{folder}: {what} folder is a file, not a folder")
    target = destination(path)
    if target.stream:
        if not os.access(target.path, os.W_OK):
            raise BadInputError(f"{path}: is not writable")
        return target
    if target.folder in made:
        return target
    if not target.folder.is_dir():
        raise BadInputError(f"{target.folder}: {what} folder does not exist")
    if not os.access(target.folder, os.W_OK | os.X_OK):
        raise BadInputError(f"{target.folder}: {what} folder is not writable")
    return target


def check_data_name(name: str) -> None:
    """``--external-data NAME`` must be a plain file name."""
    if (
        not name
        or Path(name).name != name
        or name in (".", "..")
        or "\0" in name
        or "/" in name
        or "\\" in name
    ):
        raise BadInputError(f"{name!r}: --external-data takes a file name, not a path")
    if len(name.encode("utf-8", "surrogateescape")) > _NAME_MAX:
        raise BadInputError(f"--external-data: the name is longer than {_NAME_MAX} bytes")


def _is_json(path: Path) -> bool:
    try:
        json.loads(path.read_text(encoding="utf-8"))
    except Exception:
        return False
    return True


def check_report(
    report: Path, folders: Iterable[Path] = (), taken: dict[Path, str] | None = None
) -> Destination:
    """The report's folder must be writable (or one the run makes), it must not be a path
    the run reads or writes otherwise (``taken``: what each is), and an existing file there
    must be a JSON one (ours); a pipe or a device (``/dev/stdout``) is written into."""
    target = writable(report, "report", folders)
    if target.stream:
        return target
    found = (taken or {}).get(target.path)
    if found is not None:
        raise BadInputError(f"{report}: the report would overwrite {found}")
    if target.path.exists() and not _is_json(target.path):
        raise BadInputError(f"{report}: exists and is not a JSON report; refusing to overwrite it")
    return target


def data_of(model_path: Path) -> set[Path]:
    """The external data files an existing model refers to (empty when it cannot be read)."""
    import onnx

    from seqpasses.io import external_data_files

    try:
        proto = onnx.load(os.fspath(model_path), load_external_data=False)
        return external_data_files(proto, model_path.parent)
    except Exception:
        return set()


def _refuse_inputs(path: Path, what: str, inputs: dict[Path, str]) -> None:
    found = inputs.get(path)
    if found is not None:
        raise BadInputError(f"{what}: refusing to overwrite {found}")


def plan_job(
    source: Path,
    target: Path,
    external: str | None,
    report: Path | None,
    input_data: set[Path],
    check_inputs: Path | None = None,
) -> tuple[Planned, Destination | None]:
    """Check every path one model's run writes (see the module docstring): what it writes,
    and where the report goes. ``input_data``: the input's own external data files."""
    output = writable(target, "output")
    inputs = {resolved(source): "the input"}
    for input_file in input_data:
        inputs.setdefault(resolved(input_file), "the input's external data")
    if check_inputs is not None:
        inputs.setdefault(resolved(check_inputs), "the --check-inputs file")
    _refuse_inputs(output.path, f"{target}", inputs)
    data: Destination | None = None
    old_data = False
    if external is not None:
        check_data_name(external)
        if output.stream:
            raise BadInputError(
                f"{target}: is a pipe or a device; a model with external data ({external}) "
                "needs a file: give a file path"
            )
        if output.folder != resolved(target.parent):
            raise BadInputError(
                f"{target}: is a symlink into another folder; the external data ({external}) "
                "would not lie beside the link: give the link's target"
            )
        given = target.parent / external
        if given.is_symlink():
            raise BadInputError(
                f"{given}: is a symlink; external data must be a plain file beside the model "
                "(onnx does not read it through a link)"
            )
        data = Destination(given, output.folder / external)
        if data.path in (output.path, resolved(source)):
            raise BadInputError(f"{given}: the external data would overwrite a model")
        if inputs.get(data.path) == "the input's external data":
            raise BadInputError(f"{given}: would overwrite the input's own external data")
        _refuse_inputs(data.path, f"{given}", inputs)
        if data.path.exists():
            if not data.path.is_file():
                raise BadInputError(f"{given}: exists and is not a file")
            ours = data_of(output.path) if output.path.is_file() else set()
            if data.path not in {resolved(p) for p in ours}:
                raise BadInputError(
                    f"{given}: exists and is not the external data of {target.name}; "
                    "remove it or give --external-data another name"
                )
            old_data = True
    written: Destination | None = None
    if report is not None:
        taken = dict(inputs)
        for other, what in ((output, "the output"), (data, "the external data")):
            if other is not None and not other.stream:
                taken[other.path] = what
        written = check_report(report, (), taken)
    return Planned(output, data, external, old_data), written


@dataclass(frozen=True)
class BatchPlan:
    """A folder run's paths: each model's output (relative path, where it goes), the folders
    the run makes, and where the report goes."""

    outputs: list[tuple[Path, Path]]  # (input model, output path)
    folders: list[Path]  # the output folders the run makes (those missing now)
    report: Destination | None


def _overlap(source: Path, target: Path) -> str:
    """Why the input and output trees overlap ('' when they do not)."""
    inside, outside = resolved(source), resolved(target)
    if inside == outside:
        return "the output folder is the input folder"
    if outside.is_relative_to(inside):
        return "the output folder must not be inside the input folder"
    if inside.is_relative_to(outside):
        return "the output folder must not hold the input folder (outputs would overwrite inputs)"
    return ""


def plan_batch(
    source: Path,
    target: Path,
    models: list[Path],
    external: str | None,
    report: Path | None,
) -> BatchPlan:
    """Check every path a folder run writes (see the module docstring), before it starts."""
    if target.exists() and not target.is_dir():
        raise BadInputError(f"{target}: the input is a folder, so the output must be one too")
    if not target.exists() and not target.parent.is_dir():
        # (one rule for every run: the folder that holds what -o names must exist; a folder
        # run makes the folder it is given and the tree under it)
        raise BadInputError(f"{target.parent}: output folder does not exist")
    overlap = _overlap(source, target)
    if overlap:
        raise BadInputError(f"{target}: {overlap}")
    if external:
        check_data_name(external)
    protected = [resolved(source), *{resolved(model.parent) for model in models}]
    inputs = {resolved(model): f"the input {model}" for model in models}
    taken: dict[Path, str] = {}  # every planned path, resolved: what writes it
    outputs: list[tuple[Path, Path]] = []
    folders: list[Path] = []
    for model in models:
        relative = model.relative_to(source)
        output = target / relative
        where = resolved(output)
        _refuse_inputs(where, f"{output}", inputs)
        for folder in protected:
            if _inside(where, folder):
                raise BadInputError(
                    f"{output}: resolves to {where}, inside the input folder {folder} "
                    "(through a symlink); refusing to write into the input tree"
                )
        if where in taken:
            raise BadInputError(f"{output}: written twice (by {taken[where]} and {relative})")
        taken[where] = f"the output of {relative}"
        if external:
            data = where.parent / external
            if data in taken:
                raise BadInputError(
                    f"--external-data {external}: {taken[data]} and the data of {relative} "
                    f"would both be {data}; without a name each model's data gets a name of "
                    "its own (OUT.data)"
                )
            taken[data] = f"the data of {relative}"
        outputs.append((model, output))
        at = output.parent
        while not at.exists() and at not in folders:
            folders.append(at)
            if at == target or at == at.parent:
                break
            at = at.parent
    written: Destination | None = None
    if report is not None:
        made = [resolved(folder) for folder in folders]
        if resolved(report) in made or (target.is_dir() and resolved(report) == resolved(target)):
            raise BadInputError(f"{report}: the report would be written where an output folder is")
        written = check_report(report, folders, {**inputs, **taken})
    return BatchPlan(outputs, sorted(set(folders), key=lambda p: len(p.parts)), written)

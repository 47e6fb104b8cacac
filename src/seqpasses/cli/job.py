"""One job of the command line: the one optimize path (:mod:`seqpasses.pipeline`), then
``--check``, then the write; and where it may write.

Both the single-model CLI and the folder mode (:mod:`seqpasses.cli.batch`) run
:func:`run_job`. Before anything is written, :func:`plan_writes` checks every path the job
will write: the output, its external data file and the JSON report. None may be the input,
the input's external data, another path of the same job, or an existing file that is not
ours (a model, the external data of another model); a folder must exist and be writable. A
symlink is followed and a pipe or a character device is written into, never replaced
(:func:`seqpasses.io.destination`); a model with external data needs a real file. A refusal
is a :class:`~seqpasses.errors.BadInputError` (one line, exit 2), with nothing written.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import onnx
import onnx_ir as ir

from seqpasses.core.pause import no_cycle_collection
from seqpasses.core.skeleton import Skeleton, skeleton
from seqpasses.errors import BadInputError
from seqpasses.io import (
    Destination,
    copy_model,
    destination,
    external_data_files,
    save_ir,
    save_proto,
    save_streamed,
    with_external_data,
    write_text,
)
from seqpasses.options import Options
from seqpasses.passes.input_shapes import with_input_shapes
from seqpasses.pipeline import Loaded, load, optimize_loaded
from seqpasses.progress import stage
from seqpasses.report import Report
from seqpasses.verification import VerifyReport, verify
from seqpasses.verification.engines import Held
from seqpasses.verification.inputs import check_inputs

__all__ = [
    "CHECK_BUDGET_S",
    "Job",
    "Outcome",
    "check_report_path",
    "plan_writes",
    "run_job",
    "save_model",
]

CHECK_BUDGET_S = 10.0
"""Seconds an evaluator may spend on --check's input sets: it compares one, and more only while
they fit (the reference evaluator on a large conv net compares one, ONNX Runtime all)."""


@dataclass(frozen=True)
class Job:
    """One model to optimize and the settings to do it with (picklable for worker processes)."""

    input: Path
    output: Path
    options: Options = field(default_factory=lambda: Options(infer_shapes=True))
    check: bool = False
    check_runs: int = 3
    check_inputs: Path | None = None
    check_whole: bool = False  # onnx.reference on the whole models, not the changed region
    external_data: str | None = None
    report: Path | None = None  # the JSON report this job's CLI run writes (checked here)


@dataclass
class Outcome:
    """What one job gives: the optimize path's report (which the job only reads), the check's
    verdict, and the job's own notes and timings (loading, checking, saving)."""

    report: Report
    verdict: VerifyReport | None  # None when --check was not asked for
    notes: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def written(self) -> bool:
        return self.verdict is None or self.verdict.status != "mismatch"

    @property
    def all_notes(self) -> list[str]:
        """The report's notes, then the job's."""
        return [*self.report.notes, *self.notes]

    def as_dict(self) -> dict[str, Any]:
        """The report as JSON data, with the job's notes and timings added and the check's
        verdict."""
        data = self.report.as_dict()
        data["notes"] = self.all_notes
        data["timings_s"] = {**self.report.timings, **self.timings}
        data["check"] = None if self.verdict is None else self.verdict.as_dict()
        return data


def _same(a: Path, b: Path) -> bool:
    return a.resolve() == b.resolve()


def _writable(path: Path, what: str) -> Destination:
    """Where writing ``path`` goes (:func:`~seqpasses.io.destination`), when it can be
    written: a stream must be writable, a file's folder must exist and be writable."""
    folder = path.parent
    if not folder.exists():
        raise BadInputError(f"{folder}: {what} folder does not exist")
    if not folder.is_dir():
        raise BadInputError(f"{folder}: {what} folder is a file, not a folder")
    target = destination(path)
    if target.stream:
        if not os.access(target.path, os.W_OK):
            raise BadInputError(f"{path}: is not writable")
        return target
    if not target.folder.is_dir():
        raise BadInputError(f"{target.folder}: {what} folder does not exist")
    if not os.access(target.folder, os.W_OK | os.X_OK):
        raise BadInputError(f"{target.folder}: {what} folder is not writable")
    return target


def _is_json(path: Path) -> bool:
    try:
        json.loads(path.read_text(encoding="utf-8"))
    except Exception:
        return False
    return True


def plan_writes(
    source: Path, target: Path, external: str | None, report: Path | None, input_data: set[Path]
) -> Path | None:
    """Check every path a job will write (see the module docstring); the external data file's
    path when there is one. ``input_data``: the input's own external data files."""
    written = _writable(target, "output")
    if _same(source, target):
        raise BadInputError(f"{target}: refusing to overwrite the input")
    if any(_same(target, data) for data in input_data):
        raise BadInputError(f"{target}: refusing to overwrite the input's external data")
    data_path = None
    if external is not None:
        if not external or Path(external).name != external:
            raise BadInputError(f"{external!r}: --external-data takes a file name, not a path")
        if written.stream:
            raise BadInputError(
                f"{target}: is a pipe or a device; a model with external data ({external}) "
                "needs a file: give a file path"
            )
        if written.folder.resolve() != target.parent.resolve():
            raise BadInputError(
                f"{target}: is a symlink into another folder; the external data ({external}) "
                "would not lie beside the link: give the link's target"
            )
        data_path = target.parent / external
        ours = _data_of(target) if target.is_file() else set()
        if _same(data_path, source) or _same(data_path, target):
            raise BadInputError(f"{data_path}: the external data would overwrite a model")
        if any(_same(data_path, data) for data in input_data):
            raise BadInputError(f"{data_path}: would overwrite the input's own external data")
        if report is not None and _same(data_path, report):
            raise BadInputError(f"{data_path}: the external data and the report are one file")
        if data_path.exists() and not any(_same(data_path, p) for p in ours):
            raise BadInputError(
                f"{data_path}: exists and is not the external data of {target.name}; "
                "remove it or give --external-data another name"
            )
    if report is not None:
        for other, what in ((source, "the input"), (target, "the output")):
            if _same(report, other):
                raise BadInputError(f"{report}: the report would overwrite {what}")
        if any(_same(report, data) for data in input_data):
            raise BadInputError(f"{report}: the report would overwrite the input's external data")
        check_report_path(report)
    return data_path


def check_report_path(report: Path) -> None:
    """The report's folder must be writable, and an existing file there a JSON one (ours);
    a pipe or a device (``/dev/stdout``) is written into."""
    written = _writable(report, "report")
    if not written.stream and written.path.exists() and not _is_json(written.path):
        raise BadInputError(f"{report}: exists and is not a JSON report; refusing to overwrite it")


def _data_of(model_path: Path) -> set[Path]:
    """The external data files an existing model refers to (empty when it cannot be read)."""
    try:
        proto = onnx.load(os.fspath(model_path), load_external_data=False)
    except Exception:
        return set()
    return external_data_files(proto, model_path.parent)


def run_job(job: Job) -> Outcome:
    """The one optimize path, optionally ``--check``, and (unless the check found a
    difference) the write of one model. Raises :class:`BadInputError` with a one-line
    message for anything wrong with the input or the paths."""
    start = time.perf_counter()
    report = Report()
    timings: dict[str, float] = {}
    with no_cycle_collection():  # (from loading to the result: see core.pause)
        loaded = load(job.input, job.options)
        timings["load"] = time.perf_counter() - start
        input_data = external_data_files(loaded.proto, job.input.parent, loaded.file)
        external = job.external_data
        if external is None and input_data:
            external = ""
        if external == "":
            external = f"{job.output.name}.data"
        plan_writes(job.input, job.output, external, job.report, input_data)
        given = job.check_inputs
        inputs = check_inputs(given, loaded.proto) if given is not None else None
        result = optimize_loaded(loaded, job.options, report)
    if result.model is None:
        notes = [f"written unchanged: {report.unchanged}"]
        if job.check:
            notes.append("not checked: the model is written unchanged")
        start = time.perf_counter()
        _write_as_given(loaded, job.output, external, bool(input_data))
        timings["save"] = time.perf_counter() - start
        return Outcome(report, None, notes, timings)
    verdict = None
    if job.check:
        start = time.perf_counter()
        folder = job.input.parent
        before = Held(loaded.proto, folder)
        shapes = job.options.shapes()
        if shapes:  # the original, run on inputs of the fixed shapes
            before = before.but(with_input_shapes(loaded.proto, shapes))
        verdict = verify(
            before,
            Held(result.proto, folder),  # (weights on disk stay there: ONNX Runtime maps them)
            runs=job.check_runs,
            strict_spec=job.options.strict_spec,
            inputs=inputs,
            budget_s=CHECK_BUDGET_S,
            whole=job.check_whole,
        )
        timings["check"] = time.perf_counter() - start
        if verdict.status == "mismatch":
            return Outcome(report, verdict, [], timings)
    start = time.perf_counter()
    stage("saving")
    assert result.model is not None
    if job.options.inline_functions:
        proto = with_external_data(result.proto, job.input.parent) if input_data else result.proto
        save_proto(proto, job.output, external)
    else:
        save_model(result.model, job.output, external, result.skeleton)
    timings["save"] = time.perf_counter() - start
    return Outcome(report, verdict, [], timings)


def save_model(
    model: ir.Model, output: Path, external: str | None, frame: Skeleton | None = None
) -> None:
    """Write an onnx_ir model as seqpasses writes every model: its weights in ``external``
    (a file beside the output, through onnx_ir, a weight at a time) or inline, streamed from
    where they lie (``frame``: the model's skeleton, when the caller has it)."""
    if external is not None:
        save_ir(model, output, external)
    else:
        save_streamed(frame if frame is not None else skeleton(model), model, output)


def _write_as_given(loaded: Loaded, output: Path, external: str | None, data: bool) -> None:
    """Write the input as it was: its file's bytes; with external data (the input's own, or
    asked for), through onnx_ir, a weight at a time; a model onnx_ir cannot hold, whole."""
    if not data and external is None and loaded.file is not None:
        copy_model(loaded.file, output)
    elif loaded.model is not None and external is not None:
        save_ir(loaded.fresh(), output, external)
    else:
        full = with_external_data(loaded.proto, loaded.folder)
        save_proto(full, output, external)


def write_report(path: Path, data: dict[str, Any]) -> None:
    write_text(path, json.dumps(data, indent=2) + "\n")

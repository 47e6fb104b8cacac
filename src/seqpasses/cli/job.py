"""One job of the command line: the one optimize path (:mod:`seqpasses.pipeline`), then
``--check``, then the files staged in a :class:`~seqpasses.transaction.Transaction`.

Both the single-model CLI and the folder mode (:mod:`seqpasses.cli.batch`) run
:func:`run_job`. Before anything is written, :func:`~seqpasses.cli.plan.plan_job` checks every
path the job will write; the job stages its files, and its caller puts them in place with
the report, together (the single-model CLI), or with every other model's (a folder run).
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import onnx_ir as ir

from seqpasses.cli.plan import Planned, plan_job
from seqpasses.core.pause import no_cycle_collection
from seqpasses.core.skeleton import Skeleton, skeleton
from seqpasses.errors import BadInputError
from seqpasses.io import (
    external_data_files,
    with_external_data,
    write_ir,
    write_proto,
    write_streamed,
)
from seqpasses.options import Options
from seqpasses.passes.input_shapes import with_input_shapes
from seqpasses.pipeline import Loaded, load, optimize_loaded
from seqpasses.progress import stage
from seqpasses.report import Report
from seqpasses.transaction import Destination, Transaction

if TYPE_CHECKING:  # (--check's modules are imported where it runs: onnx.reference is 20 ms)
    from seqpasses.verification import VerifyReport

__all__ = [
    "CHECK_BUDGET_S",
    "Job",
    "JobResult",
    "run_job",
    "stage_files",
    "stage_model",
    "stage_report",
]

CHECK_MEMORY = 2 << 30
CHECK_MEMORY_FACTOR = 8
"""The memory one run of --check may take, beyond what the process holds: the larger of 2 GiB
and 8 times the model's weights. A run past it fails as a run the original fails on does
(a 400-byte Loop that doubles a tensor 30 times would take 24 GB)."""

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
    staging: Path | None = None  # a folder run's: where the job stages its files


@dataclass
class JobResult:
    """What one job gives: the optimize path's report (which the job only reads), the check's
    verdict, and the job's own notes and timings (loading, checking, saving)."""

    report: Report
    verdict: VerifyReport | None  # None when --check was not asked for
    notes: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    job: Job | None = None  # (what reproduces it, in the JSON report: see run_record)

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
        data["run"] = run_record(self.job) if self.job is not None else {}
        return data


def _version(package: str) -> str | None:
    from importlib import metadata  # (only for a JSON report: 15 ms)

    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def run_record(job: Job) -> dict[str, Any]:
    """What reproduces ``job`` beside its paths: the versions of seqpasses and of the
    libraries whose answers it depends on, the options and the check's settings."""
    check = None
    if job.check:
        given = None if job.check_inputs is None else str(job.check_inputs)
        check = {"runs": job.check_runs, "inputs": given, "whole": job.check_whole}
    return {
        "versions": {
            name: _version(name)
            for name in ("seqpasses", "onnx", "onnx-ir", "onnxruntime", "numpy")
        },
        "options": asdict(job.options),
        "check": check,
    }


def run_job(job: Job, transaction: Transaction) -> JobResult:
    """The one optimize path, optionally ``--check``, and (unless the check found a
    difference) the model's files staged in ``transaction``, which the caller commits.
    Raises :class:`BadInputError` with a one-line message for anything wrong with the input
    or the paths."""
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
        planned, _ = plan_job(
            job.input, job.output, external, job.report, input_data, job.check_inputs
        )
        given = job.check_inputs
        inputs = None
        if given is not None:
            from seqpasses.verification.inputs import check_inputs

            inputs = check_inputs(given, loaded.proto)
        result = optimize_loaded(loaded, job.options, report)
    if result.model is None:
        notes = [f"written unchanged: {report.unchanged}"]
        if job.check:
            notes.append("not checked: the model is written unchanged")
        start = time.perf_counter()
        _stage_as_given(transaction, loaded, planned, bool(input_data))
        timings["save"] = time.perf_counter() - start
        return JobResult(report, None, notes, timings, job=job)
    verdict = None
    if job.check:
        from seqpasses.verification import verify
        from seqpasses.verification.engines import Held, bound_runs

        start = time.perf_counter()
        folder = job.input.parent
        before = Held(loaded.proto, folder)
        shapes = job.options.shapes()
        if shapes:  # the original, run on inputs of the fixed shapes
            before = before.but(with_input_shapes(loaded.proto, shapes))
        bound_runs(max(CHECK_MEMORY, CHECK_MEMORY_FACTOR * before.initializer_bytes))
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
            return JobResult(report, verdict, [], timings, job=job)
    start = time.perf_counter()
    stage("saving")
    model = result.model
    assert model is not None
    if job.options.inline_functions:
        proto = with_external_data(result.proto, job.input.parent) if input_data else result.proto
        stage_files(
            transaction,
            planned,
            lambda staged: write_proto(proto, staged, planned.data_name, job.output),
        )
    else:
        stage_model(transaction, model, planned, result.skeleton)
    timings["save"] = time.perf_counter() - start
    return JobResult(report, verdict, [], timings, job=job)


def stage_files(transaction: Transaction, planned: Planned, write: Callable[[Path], None]) -> None:
    """Stage what ``write(staged_file)`` writes for ``planned``: the model, and its external
    data file when it wrote one that holds something (an empty one is not written; the one
    of the output it replaces, which the new model does not refer to, is removed)."""
    staged = transaction.stage(planned.output)
    with transaction.writing(planned.output):
        write(staged)
    made = [path for path in staged.parent.iterdir() if path != staged]
    if planned.data is None or planned.data_name is None:
        if made:  # (only a model with external data writes beside it)
            raise BadInputError(
                f"{planned.output.given}: a pipe or a device cannot hold a model's external "
                "data beside it; write to a file"
            )
        return
    data = staged.parent / planned.data_name
    if data.is_file() and data.stat().st_size > 0:
        transaction.add(data, planned.data)
    else:
        data.unlink(missing_ok=True)
        if planned.old_data:
            transaction.remove(planned.data.path)


def stage_model(
    transaction: Transaction, model: ir.Model, planned: Planned, frame: Skeleton | None = None
) -> None:
    """Stage an onnx_ir model as seqpasses writes every model: its weights in the planned
    external data file (beside the output, through onnx_ir, a weight at a time) or inline,
    streamed from where they lie (``frame``: the model's skeleton, when the caller has it)."""
    shown = planned.output.given
    if planned.data_name is not None:
        name = planned.data_name
        stage_files(transaction, planned, lambda staged: write_ir(model, staged, name, shown))
    else:
        frame = frame if frame is not None else skeleton(model)
        stage_files(
            transaction, planned, lambda staged: write_streamed(frame, model, staged, shown)
        )


def _stage_as_given(transaction: Transaction, loaded: Loaded, planned: Planned, data: bool) -> None:
    """Stage the input as it was: its file's bytes; with external data (the input's own, or
    asked for), through onnx_ir, a weight at a time; a model onnx_ir cannot hold, whole."""
    source = loaded.file
    if not data and planned.data_name is None and source is not None:

        def copy(staged: Path) -> None:
            shutil.copyfile(source, staged)

        stage_files(transaction, planned, copy)
    elif loaded.model is not None and planned.data_name is not None:
        stage_model(transaction, loaded.fresh(), planned)
    else:
        full = with_external_data(loaded.proto, loaded.folder)
        stage_files(
            transaction,
            planned,
            lambda staged: write_proto(full, staged, planned.data_name, planned.output.given),
        )


def stage_report(transaction: Transaction, target: Destination, data: dict[str, Any]) -> None:
    """Stage the JSON report ``data`` for ``target``."""
    staged = transaction.stage(target)
    with transaction.writing(target):
        staged.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")

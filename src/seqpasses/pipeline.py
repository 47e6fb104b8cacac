"""One job of the command line: load, optimize, self-check, verify, save; and where it writes.

Both the single-model CLI and the folder mode (:mod:`seqpasses.batch`) run :func:`run_job`.
Before anything is read or written, :func:`plan_writes` checks every path the job will
write: the output, its external data file and the JSON report. None may be the input, the
input's external data, another path of the same job, or an existing file that is not ours
(a model, the external data of another model); a folder must exist and be writable. A
refusal is a :class:`~seqpasses.io.BadInputError` (one line, exit 2), with nothing written.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import onnx
import onnx_ir as ir

from seqpasses.admit import to_ir
from seqpasses.api import checked, inline_local_functions, run_passes
from seqpasses.inference import fill_shapes_in_place
from seqpasses.io import (
    BadInputError,
    external_data_files,
    read_model,
    save_model,
    write_text,
)
from seqpasses.overrides import fix_input_shapes, with_input_shapes
from seqpasses.report import Report, count_ops
from seqpasses.verify import VerifyReport, load_inputs, verify
from seqpasses.walk.context import DEFAULT_MAX_UNROLL

__all__ = ["Job", "Outcome", "check_report_path", "plan_writes", "run_job", "write_report"]

CHECK_BUDGET_S = 10.0
"""Seconds an evaluator may spend on --check's input sets: it compares one, and more only while
they fit (the reference evaluator on a large conv net compares one, ONNX Runtime all)."""


@dataclass(frozen=True)
class Job:
    """One model to optimize and the settings to do it with (picklable for worker processes)."""

    input: Path
    output: Path
    check: bool = False
    check_runs: int = 3
    check_inputs: Path | None = None
    freeze_inputs: bool = False
    strict_spec: bool = False
    external_data: str | None = None
    infer_shapes: bool = True
    skip: tuple[str, ...] = ()
    only: tuple[str, ...] | None = None
    max_unroll: int = DEFAULT_MAX_UNROLL
    report: Path | None = None  # the JSON report this job's CLI run writes (checked here)
    strict_input: bool = False  # refuse a model the ONNX checker rejects (see seqpasses.admit)
    input_shapes: tuple[tuple[str, tuple[int, ...]], ...] = ()
    inline_functions: bool = False


@dataclass
class Outcome:
    report: Report
    verdict: VerifyReport | None  # None when --check was not asked for

    @property
    def written(self) -> bool:
        return self.verdict is None or self.verdict.status != "mismatch"


def _same(a: Path, b: Path) -> bool:
    return a.resolve() == b.resolve()


def _writable_folder(path: Path, what: str) -> None:
    folder = path.parent
    if not folder.exists():
        raise BadInputError(f"{folder}: {what} folder does not exist")
    if not folder.is_dir():
        raise BadInputError(f"{folder}: {what} folder is a file, not a folder")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise BadInputError(f"{folder}: {what} folder is not writable")
    if path.is_dir():
        raise BadInputError(f"{path}: is a folder, not a file")


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
    _writable_folder(target, "output")
    if _same(source, target):
        raise BadInputError(f"{target}: refusing to overwrite the input")
    if any(_same(target, data) for data in input_data):
        raise BadInputError(f"{target}: refusing to overwrite the input's external data")
    data_path = None
    if external is not None:
        if not external or Path(external).name != external:
            raise BadInputError(f"{external!r}: --external-data takes a file name, not a path")
        data_path = target.parent / external
        ours = _data_of(target) if target.exists() else set()
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
    """The report's folder must be writable, and an existing file there a JSON one (ours)."""
    _writable_folder(report, "report")
    if report.exists() and not _is_json(report):
        raise BadInputError(f"{report}: exists and is not a JSON report; refusing to overwrite it")


def _data_of(model_path: Path) -> set[Path]:
    """The external data files an existing model refers to (empty when it cannot be read)."""
    try:
        proto = onnx.load(os.fspath(model_path), load_external_data=False)
    except Exception:
        return set()
    return external_data_files(proto, model_path.parent)


def _with_data(proto: onnx.ModelProto, folder: Path) -> onnx.ModelProto:
    """A copy of ``proto`` with its external data read from ``folder`` (for the evaluators)."""
    copy = onnx.ModelProto()
    copy.CopyFrom(proto)
    onnx.external_data_helper.load_external_data_for_model(copy, os.fspath(folder))
    return copy


def run_job(job: Job) -> Outcome:
    """Load, optimize, self-check, optionally verify, and (unless the check found a
    difference) write one model. Raises :class:`BadInputError` with a one-line message for
    anything wrong with the input or the paths."""
    start = time.perf_counter()
    loaded = read_model(job.input, strict=job.strict_input)
    report = Report(warnings=list(loaded.warnings))
    report.timings["load"] = time.perf_counter() - start
    model = loaded.model
    input_data = external_data_files(loaded.proto, job.input.parent)
    external = job.external_data
    if external is None and input_data:
        external = ""
    if external == "":
        external = f"{job.output.name}.data"
    plan_writes(
        job.input,
        job.output,
        external,
        job.report,
        input_data,
    )
    if model is None:  # a type onnx_ir cannot hold: the model goes through as it is
        return _unchanged(job, loaded.proto, loaded.unheld, report, external, bool(input_data))
    inputs = load_inputs(job.check_inputs) if job.check_inputs is not None else None
    options: dict[str, Any] = {
        "freeze_inputs": job.freeze_inputs,
        "strict_spec": job.strict_spec,
        "skip": job.skip,
        "only": job.only,
        "max_unroll": job.max_unroll,
    }
    if job.input_shapes:
        report.notes.extend(fix_input_shapes(model, dict(job.input_shapes)))
    run_passes(model, report=report, **options)
    if job.input_shapes:
        report.notes.append(_enabled(loaded.proto, options, report))
        report.notes[:] = [note for note in report.notes if note]
    if job.infer_shapes:
        start = time.perf_counter()
        fill_shapes_in_place(model)
        report.timings["shapes"] = time.perf_counter() - start
    start = time.perf_counter()
    result = ir.serde.serialize_model(model)
    if job.inline_functions:
        result = inline_local_functions(result, report)
    report.timings["serialize"] = time.perf_counter() - start
    checked(result, report, lambda: loaded.proto)
    verdict = None
    if job.check:
        start = time.perf_counter()
        before, after = loaded.proto, result
        if job.input_shapes:  # the original, run on inputs of the fixed shapes
            before = with_input_shapes(before, dict(job.input_shapes))
        if input_data:
            before, after = (
                _with_data(before, job.input.parent),
                _with_data(result, job.input.parent),
            )
        verdict = verify(
            before,
            after,
            runs=job.check_runs,
            strict_spec=job.strict_spec,
            inputs=inputs,
            budget_s=CHECK_BUDGET_S,
        )
        report.timings["check"] = time.perf_counter() - start
        if verdict.status == "mismatch":
            return Outcome(report, verdict)
    start = time.perf_counter()
    if job.inline_functions:
        result = _with_data(result, job.input.parent) if input_data else result
        save_model(None, job.output, external, proto=result)
    else:
        save_model(model, job.output, external, proto=result)
    report.timings["save"] = time.perf_counter() - start
    return Outcome(report, verdict)


def _unchanged(
    job: Job, proto: onnx.ModelProto, why: str, report: Report, external: str | None, data: bool
) -> Outcome:
    """Write a model onnx_ir cannot hold as it is, and say why (exit 0: nothing was lost)."""
    report.ops_before = report.ops_after = count_ops(proto)
    report.unchanged = why
    report.notes.append(f"written unchanged: {why}")
    if job.check:
        report.notes.append("not checked: the model is written unchanged")
    full = _with_data(proto, job.input.parent) if data else proto
    start = time.perf_counter()
    save_model(None, job.output, external, full)
    report.timings["save"] = time.perf_counter() - start
    return Outcome(report, None)


def _enabled(proto: onnx.ModelProto, options: dict[str, Any], report: Report) -> str:
    """What --input-shape enabled: the sequence ops left without it, on a fresh copy."""
    without = to_ir(proto)
    if isinstance(without, str):
        return ""
    left = run_passes(without, **options).sequence_ops_after
    gained = left - report.sequence_ops_after
    return (
        f"--input-shape let {gained} more sequence op(s) go ({left} would stay without it, "
        f"{report.sequence_ops_after} stay with it)"
    )


def write_report(path: Path, data: dict[str, Any]) -> None:
    write_text(path, json.dumps(data, indent=2) + "\n")

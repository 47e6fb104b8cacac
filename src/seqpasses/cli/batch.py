"""``seqpasses optimize DIR -o OUTDIR``: every ``.onnx`` under a folder, in parallel.

Each model is one :class:`~seqpasses.cli.job.Job`, written at the same relative path under
OUTDIR (its external data beside it), in a worker process of its own; ``--jobs N`` runs N at
a time. Every path the run writes is planned and checked before it starts
(:func:`~seqpasses.cli.plan.plan_batch`); each worker stages its model's files, and when all
are done they are put in place together with the report (one
:class:`~seqpasses.transaction.Transaction`): a run that is interrupted or stopped writes
nothing. One bad model never stops the others: a model that fails, runs past ``--timeout``
or whose worker dies (killed for memory, say) is one line in the log and the summary, and the
exit code is 1 when any model failed. Workers die with the run (Linux: even when it is
killed). Progress is a bar on a terminal and one plain line per model otherwise.
"""

from __future__ import annotations

import contextlib
import dataclasses
import multiprocessing
import os
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from multiprocessing.connection import Connection, wait
from pathlib import Path
from typing import Any, TextIO

from seqpasses.cli.job import Job, run_job, stage_report
from seqpasses.cli.plan import plan_batch
from seqpasses.errors import BadInputError
from seqpasses.interrupts import Interrupted, ignored, signal_of
from seqpasses.terminal import clean, say
from seqpasses.transaction import Destination, Move, Transaction, destination, resolved

__all__ = ["ModelResult", "run_batch"]


@dataclass
class ModelResult:
    """What happened to one model of a batch (plain data: it crosses process boundaries)."""

    path: str  # relative to the input folder
    ok: bool
    error: str = ""
    sequence_ops_before: int = 0
    sequence_ops_after: int = 0
    left: int = 0
    seconds: float = 0.0
    check: str = ""  # --check's status: verified, partial, not verified, not checked (written
    # unchanged), or "" without --check
    check_why: str = ""  # why --check compared nothing, when it did not
    rewrites: list[str] = dataclasses.field(default_factory=list)
    report: dict[str, Any] | None = None
    changed: bool = False  # written and changed (else written as it was, or failed)
    note: str = ""  # why it was written unchanged, or the input's warnings
    moves: list[Move] = dataclasses.field(default_factory=list)  # its files, staged
    removals: list[Path] = dataclasses.field(default_factory=list)  # files its commit removes

    def as_dict(self) -> dict[str, Any]:
        """The result as the report's JSON has it (what was staged left out)."""
        data = asdict(self)
        del data["moves"], data["removals"]
        return data


def _run_one(job: Job, relative: str) -> ModelResult:
    start = time.perf_counter()
    transaction = Transaction(root=job.staging)
    try:
        outcome = run_job(job, transaction)
        moves, removals = transaction.handover()
    except BadInputError as error:
        return ModelResult(relative, False, str(error), seconds=time.perf_counter() - start)
    except MemoryError:
        return ModelResult(relative, False, "out of memory", seconds=time.perf_counter() - start)
    except Exception as error:  # one broken model must not stop the batch
        message = f"internal error: {type(error).__name__}: {error}".splitlines()[0]
        return ModelResult(relative, False, message, seconds=time.perf_counter() - start)
    finally:
        transaction.close()
    report = outcome.report
    verdict = outcome.verdict
    data = outcome.as_dict()
    check, check_why = "", ""
    if verdict is not None:
        check = verdict.status
        check_why = "" if verdict.verified else str(verdict).removeprefix("not verified: ")
    elif job.check:  # (written as it was: nothing to compare)
        check, check_why = "not checked", f"written unchanged: {report.unchanged}"
    return ModelResult(
        relative,
        outcome.written,
        ""
        if outcome.written
        else f"check failed, not written: {verdict.mismatch if verdict else ''}",
        report.sequence_ops_before,
        report.sequence_ops_after,
        len(report.left),
        time.perf_counter() - start,
        check,
        check_why,
        [f"{r.rule}: {r.op_type} {r.node} {r.detail}".strip() for r in report.rewrites],
        data,
        outcome.written and report.changed,
        "; ".join(
            ([f"written unchanged: {report.unchanged}"] if report.unchanged else [])
            + [f"warning: {w}" for w in report.warnings]
        ),
        moves,
        removals,
    )


class _Progress:
    """A one-line bar on a terminal; plain lines (one per model) anywhere else."""

    def __init__(self, total: int, quiet: bool, verbose: bool, stream: TextIO, log: TextIO) -> None:
        self.total = total
        self.done = 0
        self.quiet = quiet
        self.verbose = verbose
        self.stream = stream
        self.log = log
        self.bar = stream.isatty() and not quiet

    def update(self, result: ModelResult) -> None:
        self.done += 1
        if self.bar:
            width = 30
            filled = width * self.done // self.total
            path = clean(result.path)
            name = path if len(path) <= 40 else "..." + path[-37:]
            self.stream.write(
                f"\r[{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} {name:<40}"
            )
            self.stream.flush()
            if not result.ok:
                self.stream.write(f"\r\x1b[K  FAIL {clean(f'{result.path}: {result.error}')}\n")
        elif not self.quiet or not result.ok:
            say(_line(result, self.done, self.total), file=self.log if result.ok else self.stream)
        if self.verbose and not self.bar:
            for rewrite in result.rewrites:
                say(f"    rewrite {rewrite}", file=self.log)

    def close(self) -> None:
        if self.bar:
            self.stream.write("\r\x1b[K")
            self.stream.flush()


def _line(result: ModelResult, done: int, total: int) -> str:
    count = f"[{done}/{total}]"
    if not result.ok:
        return f"{count} FAIL {result.path}: {result.error}"
    check = f", {result.check}" if result.check and result.check != "verified" else ""
    note = f"; {result.note}" if result.note else ""
    return (
        f"{count} ok   {result.path}: sequence ops {result.sequence_ops_before} -> "
        f"{result.sequence_ops_after} ({result.seconds:.2f} s{check}){note}"
    )


def _die_with_parent() -> None:
    """Have the kernel kill this process when its parent dies, however it dies (Linux's
    ``PR_SET_PDEATHSIG``; elsewhere the parent stops its workers as it ends)."""
    if not sys.platform.startswith("linux"):
        return
    parent = os.getppid()
    with contextlib.suppress(Exception):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGKILL))  # PR_SET_PDEATHSIG
    if os.getppid() != parent:  # (it died before the request was made)
        os._exit(1)


def _worker(job: Job, relative: str, pipe: Connection) -> None:
    """A worker process: one model, its result sent back. Ctrl-C (which a terminal sends to
    every worker too) ends it quietly: it has only staged its files, which the parent
    removes, and the parent says what happened."""
    _die_with_parent()
    try:
        pipe.send(_run_one(job, relative))
        pipe.close()
    except KeyboardInterrupt:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # (the parent may send one more)
        sys.exit(130)


def _died(code: int | None) -> str:
    if code is not None and code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        killed = " (killed: out of memory?)" if -code == signal.SIGKILL else ""
        return f"its worker process died of {name}{killed}"
    return f"its worker process exited with code {code} before it reported"


@dataclass
class _Running:
    process: multiprocessing.process.BaseProcess
    pipe: Connection
    relative: str
    start: float


def _run_all(
    work: list[tuple[Job, str]], jobs: int, timeout: float, done: Any
) -> list[ModelResult]:
    """Run each job in a worker process of its own, ``jobs`` at a time; call ``done`` with
    each result as it comes. A worker past ``timeout`` seconds is stopped; one that dies
    without a result is that model's failure."""
    methods = multiprocessing.get_all_start_methods()
    context: Any = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
    pending = list(reversed(work))
    running: list[_Running] = []
    results: list[ModelResult] = []

    def finish(task: _Running, result: ModelResult) -> None:
        task.pipe.close()
        task.process.join()
        running.remove(task)
        results.append(result)
        done(result)

    try:
        _run_waves(context, pending, running, jobs, timeout, finish)
    except KeyboardInterrupt as interrupt:
        with ignored():  # (more presses of Ctrl-C must not cut the stopping short)
            _stop(running)
        done = sum(result.ok for result in results)
        raise Interrupted(
            f"nothing written ({done} of {len(work)} model(s) were done, {len(running)} "
            f"stopped, {len(pending)} not started: a folder run puts its models in place "
            "together, at its end)",
            signal_of(interrupt),
        ) from None
    return results


def _stop(running: list[_Running]) -> None:
    """Stop the workers still running: what they staged is thrown away."""
    for task in running:
        if task.process.is_alive():
            task.process.kill()
    for task in running:
        task.process.join()
        task.pipe.close()


def _run_waves(
    context: Any,
    pending: list[tuple[Job, str]],
    running: list[_Running],
    jobs: int,
    timeout: float,
    finish: Callable[[_Running, ModelResult], None],
) -> None:
    while pending or running:
        while pending and len(running) < jobs:
            job, relative = pending.pop()
            reader, writer = context.Pipe(duplex=False)
            process = context.Process(target=_worker, args=(job, relative, writer), daemon=True)
            process.start()
            writer.close()
            running.append(_Running(process, reader, relative, time.perf_counter()))
        now = time.perf_counter()
        soonest = min(task.start + timeout for task in running) - now
        # (a wait of more than an hour is cut short: a long --timeout cannot overflow it)
        wait([task.pipe for task in running], timeout=min(max(soonest, 0.0), 3600.0) + 0.01)
        now = time.perf_counter()
        for task in list(running):
            seconds = now - task.start
            try:
                ready = task.pipe.poll()
            except OSError:
                ready = False
            if ready:
                try:
                    result = task.pipe.recv()
                except EOFError:  # closed without a result: the worker died
                    task.process.join()
                    message = _died(task.process.exitcode)
                    result = ModelResult(task.relative, False, message, seconds=seconds)
                finish(task, result)
            elif not task.process.is_alive():
                task.process.join()
                message = _died(task.process.exitcode)
                finish(task, ModelResult(task.relative, False, message, seconds=seconds))
            elif seconds > timeout:
                task.process.kill()
                message = f"stopped after {timeout:g} s (--timeout)"
                finish(task, ModelResult(task.relative, False, message, seconds=seconds))


def run_batch(
    template: Job,
    source: Path,
    target: Path,
    *,
    jobs: int = 1,
    quiet: bool = False,
    verbose: bool = False,
    report: Path | None = None,
    timeout: float = 600.0,
) -> int:
    """Optimize every ``.onnx`` under ``source`` into ``target`` with ``template``'s settings."""
    if target.exists() and not target.is_dir():
        raise BadInputError(f"{target}: the input is a folder, so the output must be one too")
    models = sorted(p for p in source.rglob("*.onnx") if p.is_file())
    if not models:
        raise BadInputError(f"{source}: no .onnx files under this folder")
    plan = plan_batch(source, target, models, template.external_data, report)
    with Transaction() as transaction:
        for folder in plan.folders:
            transaction.make_folders(folder)
        roots: dict[Path, Path] = {}
        work = []
        for model, output in plan.outputs:
            where = destination(output)
            if where.folder not in roots:
                roots[where.folder] = transaction.folder(where)
            relative = model.relative_to(source)
            job = dataclasses.replace(
                template, input=model, output=output, staging=roots[where.folder]
            )
            work.append((job, relative.as_posix()))
        progress = _Progress(len(work), quiet, verbose, sys.stderr, sys.stdout)
        start = time.perf_counter()
        try:
            results = _run_all(work, min(jobs, len(work)), timeout, progress.update)
        finally:  # (the bar cleared before the summary, or before the line an interrupt gets)
            progress.close()
        for result in results:
            if result.ok:
                for move in result.moves:
                    transaction.add(move.staged, move.target)
                    if resolved(move.staged.parent.parent) not in roots.values():
                        transaction.staging.append(move.staged.parent)
                for path in result.removals:
                    transaction.remove(path)
        return _finish(template, results, transaction, plan.report, jobs, quiet, start)


def _finish(
    template: Job,
    results: list[ModelResult],
    transaction: Transaction,
    report: Destination | None,
    jobs: int,
    quiet: bool,
    start: float,
) -> int:
    """Put what the models staged in place with the report, then say what was done."""
    elapsed = time.perf_counter() - start
    results.sort(key=lambda r: r.path)
    failed = [r for r in results if not r.ok]
    done = [r for r in results if r.ok]
    changed = [r for r in done if r.changed]
    unverified = [r for r in done if r.check == "not verified"]
    unchecked = [r for r in done if r.check == "not checked"]
    verified = [r for r in done if r.check in ("verified", "partial")]
    partial = [r for r in verified if r.check == "partial"]
    before = sum(r.sequence_ops_before for r in done)
    after = sum(r.sequence_ops_after for r in done)
    summary = (
        f"{len(results)} models: {len(changed)} optimized, {len(done) - len(changed)} unchanged, "
        f"{len(failed)} failed"
        + (
            f", {len(verified)} verified"
            + (f" ({len(partial)} by one evaluator only)" if partial else "")
            if template.check
            else ""
        )
        + (f", {len(unverified)} not verified" if unverified else "")
        + (f", {len(unchecked)} not checked (written unchanged)" if unchecked else "")
        + f"; sequence ops {before} -> {after} in the written ones; {elapsed:.1f} s with "
        f"{jobs} job(s)"
    )
    if report is not None:
        totals = {
            "models": len(results),
            "written": len(done),
            "optimized": len(changed),
            "unchanged": len(done) - len(changed),
            "failed": len(failed),
            "verified": len(verified),
            "verified_partly": len(partial),
            "not_verified": len(unverified),
            "not_checked": len(unchecked),
            "not_checked_models": [r.path for r in unchecked],
            "sequence_ops_before": before,
            "sequence_ops_after": after,
            "seconds": elapsed,
            "jobs": jobs,
        }
        data = {"summary": summary, "totals": totals, "models": [r.as_dict() for r in results]}
        stage_report(transaction, report, data)
    transaction.commit()
    if not quiet or failed or unverified:
        say(summary)
        for result in failed:
            say(f"  failed: {result.path}: {result.error}")
        for result in unverified:
            say(f"  not verified: {result.path}: {result.check_why}")
        for result in unchecked:
            say(f"  not checked: {result.path}: {result.check_why}")
    if failed:
        return 1
    return 4 if unverified else 0

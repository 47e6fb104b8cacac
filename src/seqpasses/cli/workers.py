"""A folder run's models, each in a worker process of its own, ``jobs`` at a time: a model
that fails, runs past its time or whose worker dies is that model's failure, never the
batch's. A worker stages its model's files and hands them back (the parent puts every model
in place together, :mod:`seqpasses.cli.batch`); workers die with the run, however it ends."""

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
from typing import Any

from seqpasses.cli.job import Job, run_job
from seqpasses.errors import BadInputError, path_error
from seqpasses.interrupts import Interrupted, as_at_start, held_back, ignored, signal_of
from seqpasses.transaction import Move, Transaction

__all__ = ["ModelResult", "run_all"]


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
        bad_path = path_error(error)
        if bad_path is not None:
            return ModelResult(relative, False, str(bad_path), seconds=time.perf_counter() - start)
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
        as_at_start()  # (forked while the parent held signals back)
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


def run_all(work: list[tuple[Job, str]], jobs: int, timeout: float, done: Any) -> list[ModelResult]:
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
            # (a signal that came while a worker is made, half made, would leave
            # multiprocessing's bookkeeping of it broken: it is raised once the worker runs)
            with held_back():
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

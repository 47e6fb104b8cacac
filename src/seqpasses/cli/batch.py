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

import dataclasses
import sys
import time
from pathlib import Path
from typing import TextIO

from seqpasses.cli.job import Job, stage_report
from seqpasses.cli.plan import plan_batch
from seqpasses.cli.workers import ModelResult, run_all
from seqpasses.errors import BadInputError
from seqpasses.terminal import clean, say
from seqpasses.transaction import Destination, Transaction, destination, resolved

__all__ = ["ModelResult", "run_batch"]


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
            results = run_all(work, min(jobs, len(work)), timeout, progress.update)
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
        noted = progress.bar  # (the bar showed no model's notes: the summary lists them)
        return _finish(template, results, transaction, plan.report, jobs, (quiet, noted), start)


def _finish(
    template: Job,
    results: list[ModelResult],
    transaction: Transaction,
    report: Destination | None,
    jobs: int,
    said: tuple[bool, bool],
    start: float,
) -> int:
    """Put what the models staged in place with the report, then say what was done
    (``said``: -q, and whether a bar stood for the per-model lines: their notes, warnings
    about the input among them, are then listed after the summary)."""
    quiet, noted = said
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
        for result in done if noted else ():
            if result.note:
                say(f"  note: {result.path}: {result.note}")
    if failed:
        return 1
    return 4 if unverified else 0

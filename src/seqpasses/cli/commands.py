"""What each ``seqpasses`` command does once its arguments are parsed: the options object,
the usage checks, and the optimize, passes, inspect and shapes commands.

Each command imports the heavy modules (onnx, the pipeline) it needs when it runs.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import math
import sys
from pathlib import Path
from typing import Any

from seqpasses.cli.arguments import options_of, output_named, shown_for
from seqpasses.errors import BadInputError
from seqpasses.interrupts import held_back
from seqpasses.terminal import say

__all__ = ["EXIT_NOT_VERIFIED", "run_command"]

EXIT_NOT_VERIFIED = 4
"""``--check`` was asked for but no evaluator could compare the two models."""

MAX_CHECK_RUNS = 1000
"""The most input sets ``--check-runs`` asks for (each evaluator's time budget ends a check
sooner on a large model; every set is held until both models have run on it)."""


def _usage(args: argparse.Namespace) -> None:
    """Refuse options that make no sense alone or together (one line, exit 2)."""
    if args.check_runs is not None and not 1 <= args.check_runs <= MAX_CHECK_RUNS:
        raise BadInputError(f"--check-runs must be from 1 to {MAX_CHECK_RUNS}")
    for given, option in (
        (args.check_runs is not None, "--check-runs"),
        (args.check_inputs is not None, "--check-inputs"),
        (args.check_whole, "--check-whole"),
    ):
        if given and not args.check:
            raise BadInputError(f"{option} needs --check")
    if args.check_inputs is not None and not args.check_inputs.is_file():
        raise BadInputError(f"{args.check_inputs}: no such file (--check-inputs)")
    if args.jobs < 1:
        raise BadInputError("--jobs must be at least 1")
    if not 0 < args.timeout < math.inf:
        raise BadInputError("--timeout must be a number of seconds more than 0 (and finite)")
    if args.quiet and args.verbose:
        raise BadInputError("-q and -v contradict each other")
    output_named(args.output)


def _optimize(args: argparse.Namespace) -> int:
    options = options_of(args)
    _usage(args)
    from seqpasses.cli.job import Job, run_job, stage_report

    def job(source: Path, target: Path, report: Path | None) -> Job:
        return Job(
            input=source,
            output=target,
            options=options,
            check=args.check,
            check_runs=args.check_runs or 3,
            check_inputs=args.check_inputs,
            check_whole=args.check_whole,
            external_data=args.external_data,
            report=report,
        )

    if args.input.is_dir():
        from seqpasses.cli.batch import run_batch

        return run_batch(
            job(args.input, args.output, None),
            args.input,
            args.output,
            jobs=args.jobs,
            quiet=args.quiet,
            verbose=args.verbose,
            report=args.report,
            timeout=args.timeout,
        )
    from seqpasses import progress
    from seqpasses.cli.plan import check_report
    from seqpasses.transaction import Transaction

    with Transaction() as transaction:
        with progress.shown(sys.stderr.isatty() and not args.quiet):
            outcome = run_job(job(args.input, args.output, args.report), transaction)
        verdict = outcome.verdict
        if args.report is not None:
            data: dict[str, Any] = outcome.as_dict()
            data["input"] = str(args.input)
            data["output"] = str(args.output) if outcome.written else None
            stage_report(transaction, check_report(args.report), data)
        transaction.commit()
    report = outcome.report
    for warning in report.warnings:
        say(f"seqpasses: warning: {warning}", file=sys.stderr)
    if verdict is not None and verdict.status == "mismatch":
        say(f"seqpasses: check failed, no output written: {verdict.mismatch}", file=sys.stderr)
        return 1
    shown = shown_for(args.output)
    if not args.quiet:
        for line in report.table_lines():
            say(line, file=shown)
        if args.verbose:
            for rewrite in report.rewrites:
                say(f"  rewrite {rewrite.rule}: {rewrite.named()} {rewrite.detail}", file=shown)
        for left in report.left:
            say(f"  left {left.named()} ({left.graph or 'main'}): {left.detail}", file=shown)
        for note in outcome.all_notes:
            say(f"  note: {note}", file=shown)
        if verdict is not None:
            say(verdict, file=shown)
            for note in [*verdict.notes, *(verdict.details if args.verbose else ())]:
                say(f"  check: {note}", file=shown)
        say(f"wrote {args.output}", file=shown)
    elif verdict is not None and not verdict.verified:
        say(verdict, file=sys.stderr)
    return EXIT_NOT_VERIFIED if verdict is not None and not verdict.verified else 0


def _passes(rules: bool) -> None:
    """The rewrite groups (and with ``rules`` every rewrite id in each), from the registry."""
    from seqpasses.options import GROUPS

    listed = []
    if rules:
        from seqpasses.transfer.table import RULES

        listed = list(RULES.values())
    width = max(len(name) for name in [*GROUPS, *(f"  {r.id}" for r in listed)])
    for name, text in GROUPS.items():
        say(f"{name:<{width}}  {text}")
        for rule in listed:
            if rule.group == name:
                say(f"{'  ' + rule.id:<{width}}  {rule.doc}")


def _load(args: argparse.Namespace) -> None:
    """Import the heavy libraries the command needs with Ctrl-C held back (it is raised once
    they are in): an interrupt inside a native extension's import can crash the interpreter
    or come out as an ImportError."""
    names = ["numpy", "onnx", "onnx_ir", "seqpasses.pipeline"]
    if getattr(args, "check", False):
        names += ["seqpasses.verification", "onnxruntime"]
    with held_back():
        for name in names:
            with contextlib.suppress(ImportError):  # (optional: what needs it says so)
                importlib.import_module(name)


def run_command(args: argparse.Namespace) -> int:
    if args.command != "passes":
        _load(args)
    if args.command == "optimize":
        return _optimize(args)
    if args.command == "passes":
        _passes(args.rules)
        return 0
    if args.command == "inspect":
        options = options_of(args)
        from seqpasses.cli.views import inspect_command

        return inspect_command(args.input, options)
    if args.command == "shapes":
        from seqpasses.cli.views import shapes_command

        return shapes_command(args)
    return 2

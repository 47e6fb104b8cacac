"""The ``seqpasses`` command line.

Exit codes: 0 done; 1 ``--check`` found a difference (no output written), or a model of a
folder failed; 2 bad input or usage (nothing written); 3 a fault of seqpasses itself (nothing
written); 4 ``--check`` could compare nothing (the output is written; the line says why).

Only the standard library and seqpasses' light modules are imported here: ``--help``,
``--version`` and usage errors answer before onnx is loaded; each command imports what it
needs when it runs.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from seqpasses import __version__
from seqpasses.errors import BadInputError, SelfCheckError
from seqpasses.options import (
    DEFAULT_MAX_SPLIT,
    DEFAULT_MAX_UNROLL,
    NODE_BUDGET_FACTOR,
    NODE_BUDGET_FLOOR,
    Options,
)

__all__ = ["EXIT_NOT_VERIFIED", "main"]

EXIT_NOT_VERIFIED = 4
"""``--check`` was asked for but no evaluator could compare the two models."""

DEFAULT_TIMEOUT_S = 600.0
"""Seconds one model of a folder may take before it is stopped and counted as failed."""


def _fold_options() -> argparse.ArgumentParser:
    """The options that decide what the passes do: optimize and inspect take the same."""
    parent = argparse.ArgumentParser(add_help=False)
    group = parent.add_argument_group("what the passes do")
    group.add_argument(
        "--skip",
        action="append",
        default=[],
        metavar="NAME",
        help="switch off a rewrite group (see 'seqpasses passes'); repeatable",
    )
    group.add_argument(
        "--only",
        action="append",
        default=None,
        metavar="NAME",
        help="run only these rewrite groups; repeatable",
    )
    group.add_argument(
        "--freeze-inputs",
        action="store_true",
        help="treat initializers that are also graph inputs as constants",
    )
    group.add_argument(
        "--strict-spec",
        action="store_true",
        help="follow the ONNX spec where ONNX Runtime departs from it",
    )
    group.add_argument(
        "--input-shape",
        action="append",
        default=[],
        metavar="NAME:D1,D2,...",
        help="fix a graph input's shape (e.g. x:1,3,224,224), which may make lists static; "
        "repeatable",
    )
    group.add_argument(
        "--strict-input",
        action="store_true",
        help="refuse a model that fails the ONNX checker (by default it is optimized, with a "
        "warning, when ONNX Runtime loads it)",
    )
    group.add_argument(
        "--inline-functions",
        action="store_true",
        help="inline model-local functions at their call sites (for back ends such as "
        "OpenVINO that reject them)",
    )
    limits = parent.add_argument_group("limits (README: Security and limits)")
    limits.add_argument(
        "--max-unroll",
        type=int,
        default=DEFAULT_MAX_UNROLL,
        metavar="N",
        help="unroll a Loop that reads a sequence when its constant trip count is <= N "
        f"(default {DEFAULT_MAX_UNROLL}; 0 never unrolls)",
    )
    limits.add_argument(
        "--max-split",
        type=int,
        default=DEFAULT_MAX_SPLIT,
        metavar="N",
        help=f"write no Split of more than N pieces (default {DEFAULT_MAX_SPLIT})",
    )
    limits.add_argument(
        "--node-budget",
        type=int,
        default=None,
        metavar="N",
        help="add at most N nodes in all (unrolling, inlining, splits; default "
        f"max({NODE_BUDGET_FLOOR}, {NODE_BUDGET_FACTOR} x the input's nodes))",
    )
    return parent


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="seqpasses",
        description="Remove ONNX sequence ops whose length is known before run time.",
    )
    parser.add_argument("--version", action="version", version=f"seqpasses {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)
    fold = _fold_options()

    opt = commands.add_parser(
        "optimize",
        parents=[fold],
        help="fold and lower sequence ops in a model, or in every model under a folder",
        description="Fold and lower sequence ops in a model, or in every .onnx under a folder.",
    )
    opt.add_argument("input", type=Path, help="the .onnx model to optimize, or a folder of models")
    opt.add_argument(
        "-o",
        "--output",
        type=Path,
        required=True,
        help="where to write the result (a folder when the input is one; same layout)",
    )
    check = opt.add_argument_group("checking the result")
    check.add_argument(
        "--check",
        action="store_true",
        help="run both models on the same inputs (onnx.reference, ONNX Runtime) and fail on "
        "any difference",
    )
    check.add_argument(
        "--check-runs",
        type=int,
        default=None,
        metavar="N",
        help="how many random input sets --check compares per evaluator (default 3)",
    )
    check.add_argument(
        "--check-whole",
        action="store_true",
        help="run onnx.reference on the whole models, not only on the region the rewrite "
        "changed (slower on large models)",
    )
    check.add_argument(
        "--check-inputs",
        type=Path,
        default=None,
        metavar="FILE.npz",
        help="compare on these input sets instead of random ones (arrays named after the graph "
        "inputs, or run<k>.input:<name> for several sets)",
    )
    out = opt.add_argument_group("what is written")
    out.add_argument(
        "--external-data",
        nargs="?",
        const="",
        default=None,
        metavar="NAME",
        help="write the weights to an external data file NAME beside the output "
        "(default name: OUT's file name + '.data'; needed above 2 GB). "
        "A model whose weights were external keeps them external.",
    )
    out.add_argument(
        "--no-infer-shapes",
        action="store_true",
        help="do not fill in value types and shapes in the output model",
    )
    out.add_argument("--report", type=Path, metavar="FILE", help="write a JSON report of the run")
    out.add_argument("-q", "--quiet", action="store_true", help="print nothing on success")
    out.add_argument("-v", "--verbose", action="store_true", help="list every rewrite")
    batch = opt.add_argument_group("folders")
    batch.add_argument(
        "-j",
        "--jobs",
        type=int,
        default=1,
        metavar="N",
        help="folder input: optimize N models at a time, in separate processes (default 1)",
    )
    batch.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT_S,
        metavar="S",
        help="folder input: stop a model after S seconds and count it as failed "
        f"(default {DEFAULT_TIMEOUT_S:g})",
    )
    pas = commands.add_parser("passes", help="list the rewrite groups, one line each")
    pas.add_argument(
        "--rules", action="store_true", help="also list each rewrite id of every group"
    )
    ins = commands.add_parser(
        "inspect",
        parents=[fold],
        help="list every sequence op, and why optimize would leave each one it leaves",
        description="Run optimize's analysis on a model without writing it: every sequence "
        "and optional op with its fate (removed, or left and why). It takes the options "
        "optimize takes and gives the same answers.",
    )
    ins.add_argument("input", type=Path, help="the .onnx model")
    shp = commands.add_parser(
        "shapes", help="print the inferred type and shape of outputs and sequence values"
    )
    shp.add_argument("input", type=Path, help="the .onnx model")
    shp.add_argument("--json", action="store_true", help="print JSON instead of a table")
    shp.add_argument(
        "--all", action="store_true", help="list every value, not only outputs and sequences"
    )
    shp.add_argument(
        "--strict-input",
        action="store_true",
        help="refuse a model that fails the ONNX checker",
    )
    return parser


def _input_shapes(texts: list[str]) -> tuple[tuple[str, tuple[int, ...]], ...]:
    from seqpasses.passes.input_shapes import parse_input_shape

    shapes: dict[str, tuple[int, ...]] = {}
    for text in texts:
        name, dims = parse_input_shape(text)
        if name in shapes and shapes[name] != dims:
            raise BadInputError(f"--input-shape {name}: given twice, with different shapes")
        shapes[name] = dims
    return tuple(shapes.items())


def options_of(args: argparse.Namespace) -> Options:
    """The one options object from the command line (one line, exit 2, when it makes no
    sense)."""
    try:
        options = Options(
            freeze_inputs=args.freeze_inputs,
            strict_spec=args.strict_spec,
            skip=tuple(args.skip),
            only=None if args.only is None else tuple(args.only),
            max_unroll=args.max_unroll,
            max_split=args.max_split,
            node_budget=args.node_budget,
            strict_input=args.strict_input,
            input_shapes=_input_shapes(args.input_shape),
            inline_functions=args.inline_functions,
            infer_shapes=not getattr(args, "no_infer_shapes", True),
        )
        options.validate()
    except ValueError as error:
        raise BadInputError(str(error)) from None
    return options


def _usage(args: argparse.Namespace) -> None:
    """Refuse options that make no sense alone or together (one line, exit 2)."""
    if args.check_runs is not None and args.check_runs < 1:
        raise BadInputError("--check-runs must be at least 1")
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
    if not args.timeout > 0:
        raise BadInputError("--timeout must be more than 0 seconds")
    if args.quiet and args.verbose:
        raise BadInputError("-q and -v contradict each other")
    if str(args.output) == "-":
        raise BadInputError(
            "-o -: seqpasses writes a model file, not standard output; name the output file"
        )


def _optimize(args: argparse.Namespace) -> int:
    options = options_of(args)
    _usage(args)
    from seqpasses.cli.job import Job, run_job, write_report

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
    outcome = run_job(job(args.input, args.output, args.report))
    report, verdict = outcome.report, outcome.verdict
    for warning in report.warnings:
        print(f"seqpasses: warning: {warning}", file=sys.stderr)
    check = None if verdict is None else verdict.as_dict()

    def write(written: bool) -> None:
        if args.report is None:
            return
        data: dict[str, Any] = report.as_dict()
        data["input"] = str(args.input)
        data["output"] = str(args.output) if written else None
        data["check"] = check
        write_report(args.report, data)

    if verdict is not None and verdict.status == "mismatch":
        print(f"seqpasses: check failed, no output written: {verdict.mismatch}", file=sys.stderr)
        write(False)
        return 1
    write(True)
    if not args.quiet:
        print(report.table())
        if args.verbose:
            for rewrite in report.rewrites:
                print(f"  rewrite {rewrite.rule}: {rewrite.named()} {rewrite.detail}")
        for left in report.left:
            print(f"  left {left.named()} ({left.graph or 'main'}): {left.detail}")
        for note in report.notes:
            print(f"  note: {note}")
        if verdict is not None:
            print(verdict)
            for note in [*verdict.notes, *(verdict.details if args.verbose else ())]:
                print(f"  check: {note}")
        print(f"wrote {args.output}")
    elif verdict is not None and not verdict.verified:
        print(verdict, file=sys.stderr)
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
        print(f"{name:<{width}}  {text}")
        for rule in listed:
            if rule.group == name:
                print(f"{'  ' + rule.id:<{width}}  {rule.doc}")


def _run(args: argparse.Namespace) -> int:
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


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        return _run(args)
    except BadInputError as error:
        print(f"seqpasses: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # the reader went away (| head): nothing more to say
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 (stays open until the interpreter exits)
        return 0
    except SelfCheckError as error:
        where = getattr(args, "input", None)
        print(
            f"seqpasses: self-check failed{f' on {where}' if where else ''}, nothing written: "
            f"{error} (a bug in seqpasses: please report it)",
            file=sys.stderr,
        )
        return 3
    except MemoryError:
        where = getattr(args, "input", None)
        print(
            f"seqpasses: error: out of memory{f' on {where}' if where else ''}; nothing written "
            "(lower --node-budget or --max-unroll)",
            file=sys.stderr,
        )
        return 3
    except Exception as error:  # a fault of seqpasses itself, not of the input
        if os.environ.get("SEQPASSES_TRACEBACK"):
            raise
        where = getattr(args, "input", None)
        print(
            f"seqpasses: internal error{f' on {where}' if where else ''}: "
            f"{type(error).__name__}: {error} (a bug in seqpasses: please report it; "
            "SEQPASSES_TRACEBACK=1 shows the traceback)",
            file=sys.stderr,
        )
        return 3


if __name__ == "__main__":
    sys.exit(main())

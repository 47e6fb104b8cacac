"""The ``seqpasses`` command line.

Exit codes: 0 done; 1 ``--check`` found a difference (no output written), or a model of a
folder failed; 2 bad input or usage (nothing written); 3 a fault of seqpasses itself (nothing
written); 4 ``--check`` could compare nothing (the output is written; the line says why).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from seqpasses import __version__
from seqpasses.batch import run_batch
from seqpasses.io import BadInputError
from seqpasses.overrides import parse_input_shape
from seqpasses.pipeline import Job, run_job, write_report
from seqpasses.report import Report, Rewrite
from seqpasses.selfcheck import SelfCheckError
from seqpasses.transfer.table import GROUPS, RULES, select_rewrites
from seqpasses.views import inspect_command, shapes_command
from seqpasses.walk.context import DEFAULT_MAX_UNROLL

__all__ = ["EXIT_NOT_VERIFIED", "main"]

EXIT_NOT_VERIFIED = 4
"""``--check`` was asked for but no evaluator could compare the two models."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="seqpasses",
        description="Remove ONNX sequence ops whose length is known before run time.",
    )
    parser.add_argument("--version", action="version", version=f"seqpasses {__version__}")
    commands = parser.add_subparsers(dest="command", required=True)

    opt = commands.add_parser(
        "optimize",
        help="fold and lower sequence ops in a model, or in every model under a folder",
    )
    opt.add_argument("input", type=Path, help="the .onnx model to optimize, or a folder of models")
    opt.add_argument(
        "-o",
        "--output",
        type=Path,
        required=True,
        help="where to write the result (a folder when the input is one; same layout)",
    )
    opt.add_argument(
        "-j",
        "--jobs",
        type=int,
        default=1,
        metavar="N",
        help="folder input: optimize N models at a time, in separate processes (default 1)",
    )
    opt.add_argument(
        "--max-unroll",
        type=int,
        default=DEFAULT_MAX_UNROLL,
        metavar="N",
        help="unroll a Loop that reads a sequence when its constant trip count is <= N "
        "(default 64; 0 never unrolls)",
    )
    opt.add_argument(
        "--check",
        action="store_true",
        help="run both models on the same inputs (onnx.reference, ONNX Runtime) and fail on "
        "any difference",
    )
    opt.add_argument(
        "--check-runs",
        type=int,
        default=None,
        metavar="N",
        help="how many random input sets --check compares per evaluator (default 3)",
    )
    opt.add_argument(
        "--check-inputs",
        type=Path,
        default=None,
        metavar="FILE.npz",
        help="compare on these input sets instead of random ones (arrays named after the graph "
        "inputs, or run<k>.input:<name> for several sets)",
    )
    opt.add_argument(
        "--freeze-inputs",
        action="store_true",
        help="treat initializers that are also graph inputs as constants",
    )
    opt.add_argument(
        "--strict-spec",
        action="store_true",
        help="follow the ONNX spec where ONNX Runtime departs from it",
    )
    opt.add_argument(
        "--external-data",
        nargs="?",
        const="",
        default=None,
        metavar="NAME",
        help="write the weights to an external data file NAME beside the output "
        "(default name: OUT's file name + '.data'; needed above 2 GB). "
        "A model whose weights were external keeps them external.",
    )
    opt.add_argument(
        "--no-infer-shapes",
        action="store_true",
        help="do not fill in value types and shapes in the output model",
    )
    opt.add_argument(
        "--skip",
        action="append",
        default=[],
        metavar="NAME",
        help="switch off a rewrite group (see 'seqpasses passes'); repeatable",
    )
    opt.add_argument(
        "--only",
        action="append",
        default=None,
        metavar="NAME",
        help="run only these rewrite groups; repeatable",
    )
    opt.add_argument(
        "--strict-input",
        action="store_true",
        help="refuse a model that fails the ONNX checker (by default it is optimized, with a "
        "warning, when ONNX Runtime loads it)",
    )
    opt.add_argument(
        "--input-shape",
        action="append",
        default=[],
        metavar="NAME:D1,D2,...",
        help="fix a graph input's shape (e.g. x:1,3,224,224), which may make lists static; "
        "repeatable",
    )
    opt.add_argument(
        "--inline-functions",
        action="store_true",
        help="inline model-local functions at their call sites (for back ends such as "
        "OpenVINO that reject them)",
    )
    opt.add_argument("--report", type=Path, metavar="FILE", help="write a JSON report of the run")
    opt.add_argument("-q", "--quiet", action="store_true", help="print nothing on success")
    opt.add_argument("-v", "--verbose", action="store_true", help="list every rewrite")
    pas = commands.add_parser("passes", help="list the rewrite groups, one line each")
    pas.add_argument(
        "--rules", action="store_true", help="also list each rewrite id of every group"
    )
    ins = commands.add_parser(
        "inspect", help="list every sequence op, and why optimize would leave each one it leaves"
    )
    ins.add_argument("input", type=Path, help="the .onnx model")
    ins.add_argument("--freeze-inputs", action="store_true")
    ins.add_argument("--strict-spec", action="store_true")
    ins.add_argument("--max-unroll", type=int, default=DEFAULT_MAX_UNROLL, metavar="N")
    ins.add_argument("--skip", action="append", default=[], metavar="NAME")
    ins.add_argument("--only", action="append", default=None, metavar="NAME")
    shp = commands.add_parser(
        "shapes", help="print the inferred type and shape of outputs and sequence values"
    )
    shp.add_argument("input", type=Path, help="the .onnx model")
    shp.add_argument("--json", action="store_true", help="print JSON instead of a table")
    shp.add_argument(
        "--all", action="store_true", help="list every value, not only outputs and sequences"
    )
    return parser


def _job(args: argparse.Namespace, source: Path, target: Path, report: Path | None) -> Job:
    return Job(
        input=source,
        output=target,
        check=args.check,
        check_runs=args.check_runs or 3,
        check_inputs=args.check_inputs,
        freeze_inputs=args.freeze_inputs,
        strict_spec=args.strict_spec,
        external_data=args.external_data,
        infer_shapes=not args.no_infer_shapes,
        skip=tuple(args.skip),
        only=None if args.only is None else tuple(args.only),
        max_unroll=args.max_unroll,
        report=report,
        strict_input=args.strict_input,
        input_shapes=tuple(args.input_shapes.items()),
        inline_functions=args.inline_functions,
    )


def _input_shapes(texts: list[str]) -> dict[str, tuple[int, ...]]:
    shapes: dict[str, tuple[int, ...]] = {}
    for text in texts:
        name, dims = parse_input_shape(text)
        if name in shapes and shapes[name] != dims:
            raise BadInputError(f"--input-shape {name}: given twice, with different shapes")
        shapes[name] = dims
    return shapes


def _usage(args: argparse.Namespace) -> None:
    """Refuse options that make no sense alone or together (one line, exit 2)."""
    try:
        select_rewrites(args.skip, args.only)
    except ValueError as error:
        raise BadInputError(str(error)) from None
    if args.check_runs is not None and args.check_runs < 1:
        raise BadInputError("--check-runs must be at least 1")
    if (args.check_runs is not None or args.check_inputs is not None) and not args.check:
        option = "--check-runs" if args.check_runs is not None else "--check-inputs"
        raise BadInputError(f"{option} needs --check")
    if args.check_inputs is not None and not args.check_inputs.is_file():
        raise BadInputError(f"{args.check_inputs}: no such file (--check-inputs)")
    if args.max_unroll < 0:
        raise BadInputError("--max-unroll must be 0 or more")
    if args.jobs < 1:
        raise BadInputError("--jobs must be at least 1")
    if args.quiet and args.verbose:
        raise BadInputError("-q and -v contradict each other")
    if str(args.output) == "-":
        raise BadInputError(
            "-o -: seqpasses writes a model file, not standard output; name the output file"
        )
    args.input_shapes = _input_shapes(args.input_shape)  # parsed once, refused before any work


def _optimize(args: argparse.Namespace) -> int:
    _usage(args)
    if args.input.is_dir():
        return run_batch(
            _job(args, args.input, args.output, None),
            args.input,
            args.output,
            jobs=args.jobs,
            quiet=args.quiet,
            verbose=args.verbose,
            report=args.report,
        )
    outcome = run_job(_job(args, args.input, args.output, args.report))
    report, verdict = outcome.report, outcome.verdict
    for warning in report.warnings:
        print(f"seqpasses: warning: {warning}", file=sys.stderr)
    check = None if verdict is None else verdict.as_dict()
    if verdict is not None and verdict.status == "mismatch":
        print(f"seqpasses: check failed, no output written: {verdict.mismatch}", file=sys.stderr)
        _write_report(args, report, written=False, check=check)
        return 1
    _write_report(args, report, written=True, check=check)
    if not args.quiet:
        print(report.table())
        if args.verbose:
            for rewrite in report.rewrites:
                print(f"  rewrite {rewrite.rule}: {_named(rewrite)} {rewrite.detail}")
        for left in report.left:
            print(f"  left {_named(left)} ({left.graph or 'main'}): {left.detail}")
        for note in report.notes:
            print(f"  note: {note}")
        if verdict is not None:
            print(verdict)
            for note in verdict.notes:
                print(f"  check: {note}")
        print(f"wrote {args.output}")
    elif verdict is not None and not verdict.verified:
        print(verdict, file=sys.stderr)
    return EXIT_NOT_VERIFIED if verdict is not None and not verdict.verified else 0


def _named(entry: Rewrite) -> str:
    return f"{entry.op_type} '{entry.node}'" if entry.node else entry.op_type


def _write_report(
    args: argparse.Namespace, report: Report, *, written: bool, check: dict[str, Any] | None
) -> None:
    if args.report is None:
        return
    data = report.as_dict()
    data["input"] = str(args.input)
    data["output"] = str(args.output) if written else None
    data["check"] = check
    write_report(args.report, data)


def _passes(rules: bool) -> None:
    """The rewrite groups (and with ``rules`` every rewrite id in each), from the registry."""
    width = max(len(name) for name in [*GROUPS, *(f"  {r}" for r in RULES if rules)])
    for name, text in GROUPS.items():
        print(f"{name:<{width}}  {text}")
        for rule in RULES.values() if rules else ():
            if rule.group == name:
                print(f"{'  ' + rule.id:<{width}}  {rule.doc}")


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.command == "optimize":
            return _optimize(args)
        if args.command == "passes":
            _passes(args.rules)
            return 0
        if args.command == "inspect":
            return inspect_command(args)
        if args.command == "shapes":
            return shapes_command(args)
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
    return 2


if __name__ == "__main__":
    sys.exit(main())

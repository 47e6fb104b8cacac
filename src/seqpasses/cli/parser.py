"""The ``seqpasses`` argument parser: its commands and options, and nothing else.

Standard library and seqpasses' light modules only, so that ``--help`` and ``--version``
answer before onnx is loaded.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from seqpasses import __version__
from seqpasses.options import (
    DEFAULT_MAX_SPLIT,
    DEFAULT_MAX_UNROLL,
    NODE_BUDGET_FACTOR,
    NODE_BUDGET_FLOOR,
)
from seqpasses.terminal import clean

__all__ = ["DEFAULT_TIMEOUT_S", "build_parser"]

DEFAULT_TIMEOUT_S = 600.0
"""Seconds one model of a folder may take before it is stopped and counted as failed."""


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line and where to look, not the whole usage."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, clean(f"{self.prog}: error: {message} (see {self.prog} --help)") + "\n")


class _Top(_Parser):
    """The ``seqpasses`` parser: what no single option can say is checked after parsing."""

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        parsed, extra = super().parse_known_args(args, namespace)
        if getattr(parsed, "command", None) == "shapes":
            given = parsed.input_flag
            if given is not None and parsed.input is not None:
                self.error(f"shapes: the model is given twice ({parsed.input} and --input {given})")
            parsed.input = given if given is not None else parsed.input
            if parsed.input is None:
                self.error("shapes: the model is missing (shapes MODEL, or --input MODEL)")
        return parsed, extra


def _fold_options() -> _Parser:
    """The options that decide what the passes do: optimize and inspect take the same."""
    parent = _Parser(add_help=False)
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


def build_parser() -> argparse.ArgumentParser:
    parser = _Top(
        prog="seqpasses",
        description="Remove ONNX sequence ops whose length is known before run time.",
    )
    parser.add_argument("--version", action="version", version=f"seqpasses {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
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
        "shapes",
        help="print the inferred type and shape of outputs and sequence values; with -o, write "
        "the model with every value it can type annotated",
    )
    shp.add_argument("input", type=Path, nargs="?", help="the .onnx model")
    shp.add_argument(
        "-o",
        "--output",
        type=Path,
        help="write the model with its values' types and shapes declared (main graph, loop "
        "and branch bodies); nothing else changes",
    )
    ort = shp.add_argument_group(
        "ONNX Runtime's symbolic_shape_infer.py flags, taken so that a script calling it runs "
        "with 'seqpasses shapes' in its place"
    )
    ort.add_argument(
        "--input", dest="input_flag", type=Path, metavar="INPUT", help="the model (as INPUT)"
    )
    ort.add_argument(
        "--auto_merge",
        action="store_true",
        help="no effect: seqpasses always merges dims that must be equal, and writes no "
        "claim it cannot prove",
    )
    ort.add_argument(
        "--guess_output_rank",
        action="store_true",
        help="no effect: seqpasses declares a rank only where it proves it",
    )
    ort.add_argument("--int_max", type=int, metavar="N", help="no effect (accepted)")
    ort.add_argument("--verbose", type=int, metavar="N", help="no effect (accepted; see -q)")
    shp.add_argument(
        "--input-shape",
        action="append",
        default=[],
        metavar="NAME:D1,D2,...",
        help="fix a graph input's shape first (symbols pinned to numbers)",
    )
    shp.add_argument("-q", "--quiet", action="store_true", help="print nothing but errors")
    shp.add_argument("--json", action="store_true", help="print JSON instead of a table")
    shp.add_argument(
        "--all", action="store_true", help="list every value, not only outputs and sequences"
    )
    shp.add_argument(
        "--strict-input",
        action="store_true",
        help="refuse a model that fails the ONNX checker",
    )
    shp.add_argument(
        "--strict",
        action="store_true",
        help="fail (exit 1, nothing written) when seqpasses disproves a shape the model "
        "declares, instead of replacing it",
    )
    return parser

"""The options object a command line gives, with one line and exit 2 when it makes no sense
(standard library and seqpasses' light modules only)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import TextIO

from seqpasses.errors import BadInputError
from seqpasses.options import Options

__all__ = ["input_shapes", "options_of", "output_named", "shown_for"]


def output_named(output: Path) -> None:
    """Every command that writes a model refuses ``-o -`` alike (a file named ``-`` is almost
    never what was meant)."""
    if str(output) == "-":
        raise BadInputError(
            "-o -: name the output file, or -o /dev/stdout to write the model to standard output"
        )


def shown_for(output: Path | None) -> TextIO:
    """Where a command that writes ``output`` prints its lines: standard output, or standard
    error when the model goes to standard output (``-o /dev/stdout``: its bytes stay whole)."""
    if output is None:
        return sys.stdout
    try:
        same = os.path.samestat(os.stat(output), os.fstat(sys.stdout.fileno()))
    except (OSError, ValueError):
        same = False
    return sys.stderr if same else sys.stdout


def input_shapes(texts: list[str]) -> tuple[tuple[str, tuple[int, ...]], ...]:
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
            input_shapes=input_shapes(args.input_shape),
            inline_functions=args.inline_functions,
            infer_shapes=not getattr(args, "no_infer_shapes", True),
        )
        options.validate()
    except ValueError as error:
        raise BadInputError(str(error)) from None
    return options

"""The ``seqpasses`` command line.

Exit codes: 0 done; 1 ``--check`` found a difference (no output written), or a model of a
folder failed; 2 bad input or usage (nothing written); 3 a fault of seqpasses itself (nothing
written); 4 ``--check`` could compare nothing (the output is written; the line says why);
130 interrupted (the line says what was written: whole files only, see
:mod:`seqpasses.interrupts`); 143 or 129 stopped by SIGTERM or SIGHUP, as an interrupt.

Only the standard library and seqpasses' light modules are imported here: ``--help``,
``--version`` and usage errors answer before onnx is loaded; each command imports what it
needs when it runs. The parser is in :mod:`seqpasses.cli.parser`, the commands in
:mod:`seqpasses.cli.commands`; :func:`main` turns their failures into exit codes.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from seqpasses.cli.arguments import options_of
from seqpasses.cli.commands import EXIT_NOT_VERIFIED, run_command
from seqpasses.cli.parser import DEFAULT_TIMEOUT_S, build_parser
from seqpasses.errors import BadInputError, SelfCheckError, path_error
from seqpasses.interrupts import came_from_interrupt, exit_code, interrupted
from seqpasses.terminal import quiet_libraries, reconfigure, say

__all__ = ["DEFAULT_TIMEOUT_S", "EXIT_NOT_VERIFIED", "main", "options_of"]


def main(argv: Sequence[str] | None = None) -> int:
    reconfigure()  # (printing never fails: what an encoding cannot hold is escaped)
    quiet_libraries()
    args = build_parser().parse_args(argv)
    try:
        return run_command(args)
    except BadInputError as error:
        say(f"seqpasses: error: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as interrupt:  # (every write is renames at the end, or none)
        say(f"seqpasses: {interrupted(interrupt)}", file=sys.stderr)
        return exit_code(interrupt)
    except BrokenPipeError:  # the reader went away (| head): nothing more to say
        sys.stdout = open(os.devnull, "w")  # noqa: SIM115 (stays open until the interpreter exits)
        return 0
    except SelfCheckError as error:
        where = getattr(args, "input", None)
        say(
            f"seqpasses: self-check failed{f' on {where}' if where else ''}, nothing written: "
            f"{error} (a bug in seqpasses: please report it)",
            file=sys.stderr,
        )
        return 3
    except MemoryError:
        where = getattr(args, "input", None)
        say(
            f"seqpasses: error: out of memory{f' on {where}' if where else ''}; nothing written "
            "(lower --node-budget or --max-unroll)",
            file=sys.stderr,
        )
        return 3
    except Exception as error:  # a fault of seqpasses itself, not of the input
        bad_path = path_error(error)  # (... or of a path given: a name too long, a loop)
        if bad_path is not None:
            say(f"seqpasses: error: {bad_path}", file=sys.stderr)
            return 2
        if came_from_interrupt(error):  # (numpy, say, turns Ctrl-C in its import into this)
            say(f"seqpasses: {interrupted(KeyboardInterrupt())}", file=sys.stderr)
            return 130
        if os.environ.get("SEQPASSES_TRACEBACK"):
            raise
        where = getattr(args, "input", None)
        say(
            f"seqpasses: internal error{f' on {where}' if where else ''}: "
            f"{type(error).__name__}: {error} (a bug in seqpasses: please report it; "
            "SEQPASSES_TRACEBACK=1 shows the traceback)",
            file=sys.stderr,
        )
        return 3

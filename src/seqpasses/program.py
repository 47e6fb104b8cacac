"""The ``seqpasses`` program: the console script and ``python -m seqpasses``.

:func:`run` is :func:`seqpasses.cli.main` with Ctrl-C, SIGTERM and SIGHUP said in one line
at any moment they can be (while Python loads seqpasses too), and ignored once main has
answered: the work is done and the exit code is main's (128 + the signal's number when one
ended the run). Before the guard, nothing is imported but what Python loads at its start
(and :mod:`seqpasses.interrupts`, standard library only).
"""

from __future__ import annotations

import os
import signal
import sys

__all__ = ["run"]


_ENDING = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


def _ignore_the_rest() -> None:
    for number in _ENDING:
        signal.signal(number, signal.SIG_IGN)


def run() -> None:
    try:
        from seqpasses.interrupts import catch_termination
        from seqpasses.terminal import reconfigure

        reconfigure()  # (printing never fails: what an encoding cannot hold is escaped)
        catch_termination()  # (SIGTERM and SIGHUP end a run as Ctrl-C does: cleaned up)
        from seqpasses.cli import main

        code = main()
    except KeyboardInterrupt as interrupt:
        _ignore_the_rest()
        from seqpasses.interrupts import exit_code, interrupted
        from seqpasses.terminal import say

        say(f"seqpasses: {interrupted(interrupt)}", file=sys.stderr)
        code = exit_code(interrupt)
    _ignore_the_rest()
    if code > 128:
        # Python exits by SIGINT, not with 130, once an interrupt has passed through code
        # it ran by PyRun_String (pybind11 modules' imports do), even one handled since
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)

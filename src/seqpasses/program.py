"""The ``seqpasses`` program: the console script and ``python -m seqpasses``.

:func:`run` is :func:`seqpasses.cli.main` with Ctrl-C said in one line at any moment it can
be (while Python loads seqpasses too), and ignored once main has answered: the work is done
and the exit code is main's. Before the guard, nothing is imported but what Python loads
at its start.
"""

from __future__ import annotations

import os
import signal
import sys

__all__ = ["run"]


def run() -> None:
    try:
        from seqpasses.cli import main

        code = main()
    except KeyboardInterrupt as interrupt:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        from seqpasses.interrupts import interrupted

        print(f"seqpasses: {interrupted(interrupt)}", file=sys.stderr)
        code = 130
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if code == 130:
        # Python exits by SIGINT, not with 130, once an interrupt has passed through code
        # it ran by PyRun_String (pybind11 modules' imports do), even one handled since
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(130)
    sys.exit(code)

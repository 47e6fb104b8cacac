"""Which stage a long run is in, on a terminal: one line on standard error, rewritten as each
stage starts (loading, the passes, shapes, the self-check, each evaluator of ``--check``,
saving) and cleared at the end. On a multi-GB model each stage takes seconds to minutes.

Off unless the command line turns it on (:func:`shown`): quiet in pipes, with ``-q``, in the
API and in folder mode (which has a bar of its own).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

from seqpasses.terminal import clean

__all__ = ["shown", "stage"]

_state = {"on": False, "start": 0.0}


@contextmanager
def shown(on: bool) -> Iterator[None]:
    """Show stages while the block runs (when ``on``); the line is cleared after."""
    _state["on"], _state["start"] = on, time.perf_counter()
    try:
        yield
    finally:
        if _state["on"]:
            sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()
        _state["on"] = False


def stage(text: str) -> None:
    """Say that ``text`` starts (nothing when progress is not shown)."""
    if not _state["on"]:
        return
    seconds = time.perf_counter() - float(_state["start"])
    sys.stderr.write(f"\r\x1b[Kseqpasses: {clean(text)} ({seconds:.0f} s)")
    sys.stderr.flush()

"""Ctrl-C and the files seqpasses writes (standard library only: the CLI reads it before it
loads onnx).

A file is put in place by renames at the end of its write (see :mod:`seqpasses.io`). An
interrupt that comes while they run is held back until they are done, then raised: a model
and its external data are replaced together or not at all. :func:`written` names what this
process has put in place, so that the CLI can say what an interrupt left written.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

__all__ = [
    "Interrupted",
    "came_from_interrupt",
    "held_back",
    "ignored",
    "interrupted",
    "record_written",
    "written",
]

_written: list[Path] = []


class Interrupted(KeyboardInterrupt):
    """Ctrl-C after part of the work was written: ``written`` says what, in words."""

    def __init__(self, written: str) -> None:
        super().__init__(written)
        self.written = written


def record_written(path: Path) -> None:
    """Note that ``path`` was put in place by this process."""
    _written.append(path)


def written() -> tuple[Path, ...]:
    """The files this process has put in place, in order."""
    return tuple(_written)


def _main_thread() -> bool:
    """Whether this is the main thread: the only one Python lets set a signal's handler."""
    return threading.current_thread() is threading.main_thread()


@contextmanager
def _handled_by(handler: Callable[[int, FrameType | None], Any] | int) -> Iterator[None]:
    """Run the block with ``handler`` for Ctrl-C; the previous one is restored after."""
    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


@contextmanager
def held_back() -> Iterator[None]:
    """Run the block with Ctrl-C held back; an interrupt that came meanwhile is raised as
    the block ends (not when it fails: its own error goes on). Only the main thread with
    Python's own handler is touched: an application's handler is left to it."""
    if not _main_thread() or signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        yield
        return
    came: list[int] = []
    # (one that came before is raised as the handler is set, before the block)
    with _handled_by(lambda number, frame: came.append(number)):
        yield
    if came:
        raise KeyboardInterrupt


@contextmanager
def ignored() -> Iterator[None]:
    """Run the block with Ctrl-C ignored (main thread only), the handler restored after:
    for cleaning up after an interrupt, which more presses must not cut short."""
    if not _main_thread():
        yield
        return
    with _handled_by(signal.SIG_IGN):
        yield


def interrupted(interrupt: KeyboardInterrupt) -> str:
    """What an interrupt left, in words: nothing, or whole files (none is half-written)."""
    if isinstance(interrupt, Interrupted):
        return f"interrupted; {interrupt.written}"
    files = written()
    if not files:
        return "interrupted, nothing written"
    return f"interrupted after writing {', '.join(map(str, files))} (whole; nothing else written)"


def came_from_interrupt(error: BaseException) -> bool:
    """Whether ``error`` was raised while a Ctrl-C was being handled (an import that turns
    the interrupt into an ImportError, say)."""
    seen: set[int] = set()
    cause: BaseException | None = error
    while cause is not None and id(cause) not in seen:
        if isinstance(cause, KeyboardInterrupt):
            return True
        seen.add(id(cause))
        cause = cause.__cause__ or cause.__context__
    return False

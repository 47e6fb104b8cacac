"""Signals that end a run, and the files seqpasses writes (standard library only: the CLI
reads it before it loads onnx).

Ctrl-C (SIGINT) is Python's :class:`KeyboardInterrupt`; in the command line, SIGTERM and SIGHUP
are too (:class:`Terminated`, installed by :func:`catch_termination`): whatever ends a run goes
through the same cleanup, and leaves no staged file behind.

Files are put in place by renames at the end of a run (:mod:`seqpasses.transaction`). A
signal that comes while they run is held back until they are done, then raised: what a run
writes is replaced together or not at all. :func:`written` names what this process has put
in place, so that the CLI can say what an interrupt left written.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

__all__ = [
    "Interrupted",
    "Terminated",
    "as_at_start",
    "came_from_interrupt",
    "catch_termination",
    "exit_code",
    "held_back",
    "ignored",
    "interrupted",
    "record_written",
    "written",
]

_written: list[Path] = []

ENDING = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
"""The signals that end a run; each is raised as a :class:`KeyboardInterrupt`."""


class Interrupted(KeyboardInterrupt):
    """Ctrl-C after part of the work was done: ``written`` says what became of it, in words."""

    def __init__(self, written: str, signum: int = signal.SIGINT) -> None:
        super().__init__(written)
        self.written = written
        self.signum = signum


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP, raised as an interrupt so that the same cleanup runs."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _terminate(signum: int, frame: FrameType | None) -> None:
    raise Terminated(signum)


def catch_termination() -> None:
    """Raise :class:`Terminated` on SIGTERM and SIGHUP (the command line's main thread only;
    a library leaves a process's handlers to the application). A handler already set (a
    shell's ``trap '' HUP``, say) is left alone."""
    if not _main_thread():
        return
    for number in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(number) is signal.SIG_DFL:
            signal.signal(number, _terminate)


def as_at_start() -> None:
    """In a process forked while the signals were held back: Ctrl-C is Python's
    KeyboardInterrupt again, SIGTERM and SIGHUP are :class:`Terminated` (as
    :func:`catch_termination` set them in the parent)."""
    if not _main_thread():
        return
    signal.signal(signal.SIGINT, signal.default_int_handler)
    for number in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(number, _terminate)


def signal_of(interrupt: BaseException) -> int:
    """The signal an interrupt came from (SIGINT for Ctrl-C)."""
    return int(getattr(interrupt, "signum", signal.SIGINT))


def exit_code(interrupt: BaseException) -> int:
    """The exit code of a run a signal ended: 128 + the signal's number (130 for Ctrl-C)."""
    return 128 + signal_of(interrupt)


def record_written(path: Path) -> None:
    """Note that ``path`` was put in place by this process."""
    _written.append(path)


def written() -> tuple[Path, ...]:
    """The files this process has put in place, in order."""
    return tuple(_written)


def _main_thread() -> bool:
    """Whether this is the main thread: the only one Python lets set a signal's handler."""
    return threading.current_thread() is threading.main_thread()


def _ours(handler: Any) -> bool:
    """Whether ``handler`` raises an interrupt seqpasses handles (Python's own for Ctrl-C,
    :func:`catch_termination`'s for SIGTERM and SIGHUP)."""
    return handler is signal.default_int_handler or handler is _terminate


@contextmanager
def _handled_by(
    number: int, handler: Callable[[int, FrameType | None], Any] | int
) -> Iterator[None]:
    """Run the block with ``handler`` for signal ``number``; the previous one is restored
    after."""
    previous = signal.signal(number, handler)
    try:
        yield
    finally:
        signal.signal(number, previous)


@contextmanager
def held_back() -> Iterator[None]:
    """Run the block with the signals that end a run held back; the first that came meanwhile
    is raised as the block ends (not when it fails: its own error goes on). Only the main
    thread, and only seqpasses' handlers, are touched: an application's are left to it."""
    if not _main_thread():
        yield
        return
    came: list[int] = []
    with ExitStack() as stack:
        # (one that came before is raised as its handler is set, before the block)
        for number in ENDING:
            if _ours(signal.getsignal(number)):
                stack.enter_context(_handled_by(number, lambda n, frame: came.append(n)))
        yield
    if came:
        raise KeyboardInterrupt if came[0] == signal.SIGINT else Terminated(came[0])


@contextmanager
def ignored() -> Iterator[None]:
    """Run the block with the signals that end a run ignored (main thread only), the handlers
    restored after: for cleaning up after one, which more must not cut short."""
    if not _main_thread():
        yield
        return
    with ExitStack() as stack:
        for number in ENDING:
            if _ours(signal.getsignal(number)):
                stack.enter_context(_handled_by(number, signal.SIG_IGN))
        yield


def _what(interrupt: BaseException) -> str:
    number = signal_of(interrupt)
    return "interrupted" if number == signal.SIGINT else f"stopped by {signal.Signals(number).name}"


def interrupted(interrupt: KeyboardInterrupt) -> str:
    """What a signal that ended the run left, in words: nothing, or whole files (none is
    half-written)."""
    if isinstance(interrupt, Interrupted):
        return f"{_what(interrupt)}; {interrupt.written}"
    files = written()
    if not files:
        return f"{_what(interrupt)}, nothing written"
    return (
        f"{_what(interrupt)} after writing {', '.join(map(str, files))} "
        "(whole; nothing else written)"
    )


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

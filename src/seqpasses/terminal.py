"""What the command line prints, printed safely (standard library only: the CLI reads it
before it loads onnx).

A model's text (node names, op types, value names, metadata) and a file's name reach the
terminal in messages. Such text may hold an escape sequence (which a terminal obeys: a title
change, a cleared screen, a hyperlink), a carriage return (which overwrites what came before)
or a newline (which starts a line the model wrote: a fake ``ok``). :func:`say` prints one
line with every character that is not printable written as an escape (``\\x1b``, ``\\r``,
``\\n``, ``\\u2028``, ``\\u202e``); a line is a line and shows all it holds. :func:`reconfigure`
makes the standard streams write what their encoding cannot hold as escapes (``PYTHONIOENCODING=ascii`` and a
file name with an accent): printing never fails.
"""

from __future__ import annotations

import logging
import sys
import warnings
from typing import Any, TextIO

__all__ = ["clean", "quiet_libraries", "reconfigure", "say"]

_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(char: str) -> str:
    if char.isprintable():
        return char
    code = ord(char)
    named = _NAMED.get(char)
    if named is not None:
        return named
    return (
        f"\\x{code:02x}"
        if code < 0x100
        else f"\\u{code:04x}"
        if code < 0x10000
        else f"\\U{code:08x}"
    )


def clean(text: str) -> str:
    """``text`` with every character Python does not call printable written as an escape:
    controls, line and paragraph separators (U+2028, U+2029), format characters (bidirectional
    overrides, zero-width spaces, the byte-order mark), unpaired surrogates, unassigned code
    points and spaces other than the ASCII one."""
    if text.isprintable():
        return text
    return "".join(map(_escape, text))


def say(*parts: object, file: TextIO | None = None, sep: str = " ") -> None:
    """Print one line (as ``print`` does), its text cleaned (:func:`clean`)."""
    stream = sys.stdout if file is None else file
    stream.write(clean(sep.join(map(str, parts))) + "\n")


def reconfigure() -> None:
    """Standard output and error write what their encoding cannot hold as escapes."""
    for stream in (sys.stdout, sys.stderr):
        configure = getattr(stream, "reconfigure", None)
        if configure is not None:
            try:
                configure(errors="backslashreplace")
            except (ValueError, OSError):  # (a stream that cannot change now: leave it)
                continue


class _Said(logging.Handler):
    """A library's log record, said in one clean line on standard error."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = record.getMessage().strip().splitlines()
            say(f"seqpasses: {record.name}: {text[0] if text else ''}", file=sys.stderr)
        except Exception:  # (a log line must never end a run)
            return


def _show(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: Any = None,
    line: str | None = None,
) -> None:
    text = str(message).strip().splitlines()
    say(f"seqpasses: warning: {text[0] if text else category.__name__}", file=sys.stderr)


def quiet_libraries() -> None:
    """What the libraries seqpasses uses log or warn reaches the terminal as one clean line
    (a model's names are in it), and onnx_ir's notes on the invalid models it repairs as it
    reads them (seqpasses' own checks say what matters of them) not at all."""
    logging.getLogger("onnx_ir").setLevel(logging.ERROR)
    root = logging.getLogger()
    if not any(isinstance(handler, _Said) for handler in root.handlers):
        root.addHandler(_Said(logging.WARNING))
    warnings.showwarning = _show

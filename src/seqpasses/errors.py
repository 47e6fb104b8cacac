"""The errors and warnings seqpasses raises, in one place (no heavy imports: the CLI reads
them before it loads onnx).

- :class:`BadInputError`: the input, an option or a path cannot be taken; the message is one
  line for the user (the CLI exits with 2, nothing written).
- :class:`SelfCheckError`: seqpasses made a model it must not hand over (a bug; exit 3).
- :class:`InputWarning`: the input fails the ONNX checker but ONNX Runtime loads it.
"""

from __future__ import annotations

__all__ = [
    "BadInputError",
    "InputWarning",
    "SelfCheckError",
    "SeqpassesError",
    "first_line",
    "path_error",
]


class SeqpassesError(Exception):
    """Every error seqpasses raises on purpose."""


class BadInputError(SeqpassesError):
    """The input cannot be optimized; the message is one line for the user."""


class SelfCheckError(SeqpassesError, RuntimeError):
    """seqpasses made a model it must not hand over (a bug in seqpasses: please report it).
    ``kind``: what is wrong with it, ``"more-sequence-ops"`` (it holds more sequence ops than
    the input) or ``"invalid"`` (onnx's checker rejects it where it took the input)."""

    def __init__(self, message: str, kind: str = "invalid") -> None:
        super().__init__(message)
        self.kind = kind


class InputWarning(UserWarning):
    """The input fails the ONNX checker, but ONNX Runtime loads it (see seqpasses.checks)."""


def first_line(error: BaseException) -> str:
    """The first line of an error's message (its type's name when it has none)."""
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


def path_error(error: BaseException) -> BadInputError | None:
    """The user's error an :class:`OSError` about a named path is (a name too long, a symlink
    loop, a folder that is a file, no permission: the path given, not seqpasses, is at fault),
    or None for any other error."""
    if not isinstance(error, OSError) or error.filename is None:
        return None
    name = error.filename
    if isinstance(name, bytes):
        name = name.decode("utf-8", "backslashreplace")
    name = str(name)
    if len(name) > 120:
        name = f"{name[:60]}...{name[-40:]} ({len(name)} characters)"
    return BadInputError(f"{name}: {error.strerror or first_line(error)}")

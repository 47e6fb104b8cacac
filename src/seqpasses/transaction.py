"""Everything a run writes goes in place together, or nothing does (standard library only).

A :class:`Transaction` stages each file in a temporary folder beside its target (same file
system: a rename puts it in place), then :meth:`Transaction.commit` renames them all with the
signals that end a run held back. A target that existed is kept (hard-linked) until every
rename is done: if one fails, those done are undone, and the run has written nothing. A
replaced file keeps its mode; a new one follows the umask. A file the run stops needing (the
external data of the output it replaces, when the new one keeps its weights inline) is
removed in the same commit. Closing a transaction that was not committed removes what it
staged, and the folders it made for its targets when they are left empty.

Where a file goes is decided by what the path names (:func:`destination`): a regular file or
nothing is replaced atomically; a symlink is followed (its target gets the file, and the link
stays a link); a pipe or a character device (``/dev/null``, ``/dev/stdout``, a FIFO) gets the
bytes written into it at commit, as ``cp`` and ``cat >`` do; anything else (a folder, a block
device, a socket) is refused with one line.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from seqpasses.errors import BadInputError
from seqpasses.interrupts import held_back, ignored, record_written

__all__ = ["Destination", "Move", "Transaction", "destination", "resolved"]


def resolved(path: Path) -> Path:
    """``path`` with symlinks and ``..`` resolved (as far as it exists), or one line why not
    (a symlink loop, a name too long)."""
    try:
        return Path(os.path.realpath(path, strict=False))
    except (OSError, RuntimeError, ValueError) as error:
        raise BadInputError(f"{path}: cannot be resolved ({_why(error)})") from None


def _why(error: BaseException) -> str:
    if isinstance(error, OSError) and error.strerror:
        return error.strerror
    return str(error) or type(error).__name__


@dataclass(frozen=True)
class Destination:
    """Where a written file's bytes go: ``path`` (symlinks followed), replaced atomically,
    or, for a pipe or a character device (``stream``), written into."""

    given: Path
    path: Path
    stream: bool = False

    @property
    def folder(self) -> Path:
        return self.path.parent


def destination(path: str | os.PathLike[str]) -> Destination:
    """What writing to ``path`` means (see the module docstring); one line when it is refused."""
    given = Path(path)
    if "\0" in os.fspath(given):
        raise BadInputError(f"{given!r}: a path cannot hold a NUL byte")
    real = resolved(given)
    try:
        mode = os.stat(given).st_mode  # (symlinks followed)
    except FileNotFoundError:
        return Destination(given, real)
    except (OSError, ValueError) as error:
        raise BadInputError(f"{given}: cannot write ({_why(error)})") from None
    if stat.S_ISREG(mode):
        return Destination(given, real)
    if stat.S_ISDIR(mode):
        raise BadInputError(f"{given}: is a folder, not a file")
    if stat.S_ISFIFO(mode) or stat.S_ISCHR(mode):
        # opened by the name given: /dev/stdout resolves to a pipe's pseudo-name
        return Destination(given, given, stream=True)
    kind = "a block device" if stat.S_ISBLK(mode) else "not a regular file"
    raise BadInputError(f"{given}: is {kind}; refusing to write into it or replace it")


def _new_file_mode() -> int:
    """What a new file's mode would be under the current umask (temporary files are 0600)."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


@dataclass(frozen=True)
class Move:
    """One staged file and where it goes (plain data: a worker process hands it back)."""

    staged: Path
    target: Destination


@dataclass
class Transaction:
    """Files staged beside their targets, put in place together (see the module docstring)."""

    moves: list[Move] = field(default_factory=list)
    removals: list[Path] = field(default_factory=list)
    staging: list[Path] = field(default_factory=list)  # folders removed when it closes
    made: list[Path] = field(default_factory=list)  # folders made for targets, outermost first
    committed: bool = False
    root: Path | None = None  # where to stage a file of root's folder (a folder run's worker)

    def __enter__(self) -> Transaction:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def folder(self, target: Destination) -> Path:
        """A new staging folder for ``target`` (beside it, or in :attr:`root` when that lies
        beside it; a stream's in the system's)."""
        where: Path | None = None if target.stream else target.folder
        if self.root is not None and where is not None and resolved(self.root.parent) == where:
            where = self.root
        # (a signal between the folder's making and its record would leave it behind)
        with held_back():
            try:
                made = Path(tempfile.mkdtemp(prefix=f".{target.path.name[:64]}.", dir=where))
            except OSError as error:
                raise BadInputError(f"{target.given}: cannot write ({_why(error)})") from None
            self.staging.append(made)
        return made

    def stage(self, target: Destination) -> Path:
        """The file to write ``target``'s bytes to; they go in place at :meth:`commit`."""
        staged = self.folder(target) / target.path.name
        self.moves.append(Move(staged, target))
        return staged

    @contextmanager
    def writing(self, target: Destination) -> Iterator[None]:
        """Write ``target``'s staged file in the block: a failure of the file system (a full
        device, a file-size limit) is one line, with nothing written."""
        try:
            yield
        except OSError as error:
            raise BadInputError(
                f"{target.given}: cannot write ({_why(error)}); nothing written"
            ) from None

    def add(self, staged: Path, target: Destination) -> None:
        """A file written elsewhere (staged beside ``target`` already) goes in place too."""
        self.moves.append(Move(staged, target))

    def remove(self, path: Path) -> None:
        """``path`` is removed at :meth:`commit` (restored if the commit fails)."""
        self.removals.append(path)

    def make_folders(self, folder: Path) -> None:
        """Make ``folder`` and those above it that are missing; the ones made are removed
        again if the transaction closes uncommitted and they are left empty."""
        missing: list[Path] = []
        at = folder
        while not at.exists() and at != at.parent:
            missing.append(at)
            at = at.parent
        for made in reversed(missing):
            with held_back():  # (made and recorded, or neither)
                try:
                    made.mkdir()
                except FileExistsError:
                    continue
                except OSError as error:
                    raise BadInputError(f"{made}: cannot make it ({_why(error)})") from None
                self.made.append(made)

    def handover(self) -> tuple[list[Move], list[Path]]:
        """What is staged and what is to be removed, for another process to commit: this
        transaction no longer removes its staging folders (their owner does)."""
        moves, removals = list(self.moves), list(self.removals)
        self.moves.clear()
        self.removals.clear()
        self.staging.clear()
        return moves, removals

    def commit(self) -> None:
        """Put every staged file in place and remove what is to go, or, if one step fails,
        undo those done and raise :class:`BadInputError` (nothing written)."""
        done: list[tuple[Path, Path | None]] = []  # (target, where its old bytes wait)
        with held_back():
            try:
                for path in self.removals:
                    token = secrets.token_hex(6)
                    backup = path.parent / f".{path.name[:64]}.{token}.removed"
                    os.replace(path, backup)  # (kept beside it until the commit is done)
                    self.staging.append(backup)
                    done.append((path, backup))
                files = [move for move in self.moves if not move.target.stream]
                for number, move in enumerate(files):
                    done.append((move.target.path, self._replace(move, number)))
                for move in self.moves:
                    if move.target.stream:  # (last: bytes written into a pipe stay written)
                        _stream_into(move.staged, move.target)
            except OSError as error:
                self._undo(done)
                given = self.moves[0].target.given if self.moves else Path(".")
                raise BadInputError(
                    f"{given}: cannot write ({_why(error)}); nothing written"
                ) from None
            self.committed = True
            for move in self.moves:
                record_written(move.target.given)

    def _replace(self, move: Move, number: int) -> Path | None:
        """Rename one staged file onto its target; where the target's old bytes wait (a hard
        link in the staging folder), or None when there was none."""
        target = move.target.path
        backup: Path | None = move.staged.parent / f".previous{number}"
        try:
            mode = stat.S_IMODE(os.stat(target).st_mode)
        except FileNotFoundError:
            mode, backup = _new_file_mode(), None
        os.chmod(move.staged, mode)
        if backup is not None:
            try:
                os.link(target, backup)
            except OSError:  # (a file system without hard links: no way back for this one)
                backup = None
        os.replace(move.staged, target)
        return backup

    @staticmethod
    def _undo(done: list[tuple[Path, Path | None]]) -> None:
        for target, backup in reversed(done):
            try:
                if backup is not None:
                    os.replace(backup, target)
                else:
                    os.unlink(target)
            except OSError:
                continue

    def close(self) -> None:
        """Remove the staging folders; uncommitted, the folders made for the targets too
        (those left empty). A signal that comes meanwhile is raised once they are gone, and
        so is one that lands as the hold begins (Python raises it there, before the block)."""
        try:
            with held_back():
                self._close()
        except BaseException:
            with ignored():
                self._close()
            raise

    def _close(self) -> None:
        for folder in self.staging:
            if folder.is_dir() and not folder.is_symlink():
                shutil.rmtree(folder, ignore_errors=True)
            else:
                with contextlib.suppress(OSError):
                    folder.unlink()
        self.staging.clear()
        if not self.committed:
            for folder in reversed(self.made):
                with contextlib.suppress(OSError):
                    folder.rmdir()
            self.made.clear()


def _stream_into(source: Path, target: Destination) -> None:
    """Copy the file ``source`` into the pipe or device ``target`` (not truncated, not
    replaced: as ``cat source > target``)."""
    with open(source, "rb") as reader, open(target.path, "wb") as writer:
        shutil.copyfileobj(reader, writer, 1 << 20)

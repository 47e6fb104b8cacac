"""Speculative rewrites (an unrolling, an inlined SequenceMap, a loop carried as one tensor):
where the records stood (a :class:`Checkpoint` over the nodes a walk created, in order), which
sequence ops the nodes created since then leave alive, and undoing them all: the nodes, every
record and cache that names them, what the walk learned meanwhile (its facts' writes, logged
by :class:`Undo`) and what the budget was charged."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

import onnx_ir as ir

from seqpasses.core.graph import detach, drop_subgraphs, is_default, nested_nodes
from seqpasses.core.ops import SEQUENCE_OPS

__all__ = [
    "Checkpoint",
    "CreatedNodes",
    "Journal",
    "Undo",
    "UndoableDict",
    "UndoableSet",
    "checkpoint",
    "left_since",
    "live_nodes",
    "rollback",
]

T = TypeVar("T")
C = TypeVar("C", dict[Any, Any], set[Any], list[Any])


class CreatedNodes:
    """The nodes a walk created, in creation order (a rollback removes a suffix of them)."""

    def __init__(self) -> None:
        self.order: list[ir.Node] = []
        self._members: set[ir.Node] = set()

    def add(self, node: ir.Node) -> None:
        if node not in self._members:
            self._members.add(node)
            self.order.append(node)

    def update(self, nodes: Iterable[ir.Node]) -> None:
        for node in nodes:
            self.add(node)

    def __contains__(self, node: object) -> bool:
        return node in self._members

    def __len__(self) -> int:
        return len(self.order)

    def __iter__(self) -> Iterator[ir.Node]:
        return iter(self.order)

    def truncate(self, length: int) -> list[ir.Node]:
        """Forget the nodes created after the first ``length``; return them."""
        dropped = self.order[length:]
        del self.order[length:]
        self._members.difference_update(dropped)
        return dropped


@dataclass(frozen=True)
class Checkpoint:
    """Where the records stood before a speculative rewrite (see :func:`rollback`)."""

    created: int
    logs: tuple[int, ...]
    rewrote: bool
    states: tuple[Any, ...] = ()


_MISSING = object()


class Undo:
    """The writes made to the walk's facts while a speculative rewrite may yet be undone
    (``depth``: how many are open), each with what it replaced: :meth:`back_to` a position
    restores them. Outside every trial nothing is logged."""

    def __init__(self) -> None:
        self.entries: list[tuple[Any, Any, Any]] = []  # (container, key, previous)
        self.depth = 0

    def position(self) -> int:
        return len(self.entries)

    def back_to(self, position: int) -> None:
        entries = self.entries
        while len(entries) > position:
            container, key, previous = entries.pop()
            if isinstance(container, dict):
                if previous is _MISSING:
                    dict.pop(container, key, None)
                else:
                    dict.__setitem__(container, key, previous)
            elif previous:  # (a set: whether the item was in it)
                set.add(container, key)
            else:
                set.discard(container, key)

    def close(self) -> None:
        """A trial is done (kept or undone): with none open, the log is emptied."""
        self.depth -= 1
        if not self.depth:
            self.entries.clear()


class UndoableDict(dict[Any, Any]):
    """A dict whose writes :class:`Undo` logs while a trial is open."""

    __slots__ = ("undo",)

    def __init__(self, undo: Undo) -> None:
        super().__init__()
        self.undo = undo

    def __setitem__(self, key: Any, value: Any) -> None:
        if self.undo.depth:
            self.undo.entries.append((self, key, self.get(key, _MISSING)))
        super().__setitem__(key, value)

    def __delitem__(self, key: Any) -> None:
        if self.undo.depth and key in self:
            self.undo.entries.append((self, key, self[key]))
        super().__delitem__(key)

    def pop(self, key: Any, *default: Any) -> Any:
        if self.undo.depth and key in self:
            self.undo.entries.append((self, key, self[key]))
        return super().pop(key, *default)

    def setdefault(self, key: Any, default: Any = None) -> Any:
        if key not in self:
            self[key] = default
        return self[key]

    def update(self, *others: Any, **more: Any) -> None:
        if not self.undo.depth:
            super().update(*others, **more)
            return
        for other in (*others, more):
            items = other.items() if hasattr(other, "items") else other
            for key, value in items:
                self[key] = value


class UndoableSet(set[Any]):
    """A set whose writes :class:`Undo` logs while a trial is open."""

    __slots__ = ("undo",)

    def __init__(self, undo: Undo) -> None:
        super().__init__()
        self.undo = undo

    def add(self, item: Any) -> None:
        if self.undo.depth and item not in self:
            self.undo.entries.append((self, item, False))
        super().add(item)

    def discard(self, item: Any) -> None:
        if self.undo.depth and item in self:
            self.undo.entries.append((self, item, True))
        super().discard(item)

    def update(self, *others: Any) -> None:
        for other in others:
            for item in other:
                self.add(item)


Cache = dict[Any, Any] | set[Any] | list[Any]


def _names_gone(item: object, gone: set[ir.Node]) -> bool:
    """Whether a cache entry names a removed node (itself, or as a value's producer)."""
    if isinstance(item, ir.Node):
        return item in gone
    if isinstance(item, ir.Value):
        return item.producer() in gone
    return False


class Journal:
    """Every record a speculative rewrite may add to, registered once where it is made: a
    checkpoint notes the logs' lengths; a rollback truncates the logs (undoing each dropped
    entry where an undo is given) and drops every cache entry that names a removed node. A
    new record registered here is rolled back with no further code."""

    def __init__(self) -> None:
        self._logs: list[tuple[list[Any], Callable[[Any], None] | None]] = []
        self._caches: list[Cache] = []
        self._states: list[tuple[Callable[[], Any], Callable[[Any], None]]] = []

    def state(self, get: Callable[[], Any], put: Callable[[Any], None]) -> None:
        """Register a state a checkpoint notes (``get()``) and a rollback restores
        (``put(noted)``): what the budget has spent, where the facts' undo log stood."""
        self._states.append((get, put))

    def states(self) -> tuple[Any, ...]:
        return tuple(get() for get, _ in self._states)

    def restore(self, states: tuple[Any, ...]) -> None:
        for (_, put), noted in zip(self._states, states, strict=True):
            put(noted)

    def log(self, records: list[T], undo: Callable[[T], None] | None = None) -> list[T]:
        """Register an append-only list of records; returns it."""
        self._logs.append((records, undo))
        return records

    def cache(self, container: C) -> C:
        """Register a cache whose entries name nodes or values made; returns it."""
        self._caches.append(container)
        return container

    def lengths(self) -> tuple[int, ...]:
        return tuple(len(records) for records, _ in self._logs)

    def undo(self, lengths: tuple[int, ...], gone: set[ir.Node]) -> None:
        for (records, undo), length in zip(self._logs, lengths, strict=True):
            if undo is not None:
                for record in records[length:]:
                    undo(record)
            del records[length:]
        for cache in self._caches:
            if isinstance(cache, dict):
                for key in [
                    k for k, v in cache.items() if _names_gone(k, gone) or _names_gone(v, gone)
                ]:
                    del cache[key]
            elif isinstance(cache, set):
                cache.difference_update([x for x in cache if _names_gone(x, gone)])
            else:
                cache[:] = [x for x in cache if not _names_gone(x, gone)]


def live_nodes(window: list[ir.Node], roots: Iterable[ir.Value]) -> list[ir.Node]:
    """The nodes of ``window`` (in its order) that ``roots`` or a use outside the window
    depend on, through inputs and the outputs of subgraphs."""
    members = set(window)
    wanted = set(roots)
    live: set[ir.Node] = set()
    stack = [
        node
        for node in window
        if any(
            out in wanted or any(use.node not in members for use in out.uses())
            for out in node.outputs
        )
    ]
    while stack:
        node = stack.pop()
        if node in live:
            continue
        live.add(node)
        sources = list(node.inputs)
        for attr in node.attributes.values():
            if attr.is_ref():
                continue
            if attr.type == ir.AttributeType.GRAPH:
                sources.extend(attr.as_graph().outputs)
            elif attr.type == ir.AttributeType.GRAPHS:
                sources.extend(o for g in attr.as_graphs() for o in g.outputs)
        for value in sources:
            producer = value.producer() if value is not None else None
            if producer in members and producer not in live:
                stack.append(producer)
    return [node for node in window if node in live]


def checkpoint(made: int, journal: Journal, rewrote: bool) -> Checkpoint:
    """Where the records stand now, but that the walk had made only its first ``made``
    nodes (those made since changed no record: a transfer's tape)."""
    return Checkpoint(made, journal.lengths(), rewrote, journal.states())


def left_since(
    created: CreatedNodes,
    mark: Checkpoint,
    roots: Iterable[ir.Value],
    stays: Callable[[ir.Node], bool],
    left: Callable[[ir.Node], bool],
) -> list[ir.Node]:
    """Sequence ops among the nodes created since ``mark`` (subgraphs included) that will
    stay: ``left`` (left with a reason, a canonical sequence made for a consumer that needs
    one) or any in a subgraph of a copy (a list a copied If returns from a branch: nothing
    folds it), and live: ``roots`` (the values the new nodes stand in for), a graph output or
    a node that ``stays`` whatever reads it (a failure, a check) depend on them."""
    nested = {inner for node in created.order[mark.created :] for inner in nested_nodes(node)}
    window = [
        inner for node in created.order[mark.created :] for inner in (node, *nested_nodes(node))
    ]
    kept = [out for node in window if stays(node) for out in node.outputs]
    return [
        node
        for node in live_nodes(window, [*roots, *kept])
        if node.op_type in SEQUENCE_OPS and is_default(node) and (left(node) or node in nested)
    ]


def rollback(created: CreatedNodes, journal: Journal, mark: Checkpoint) -> None:
    """Remove every node created since ``mark`` and forget what was recorded about it.

    Only valid while nothing that existed before ``mark`` was changed (the speculative
    rewrites only add nodes before their anchor and rewrite those new nodes)."""
    dropped = created.truncate(mark.created)
    for node in dropped:
        drop_subgraphs(node)
    detach(dropped)
    journal.undo(mark.logs, set(dropped))
    journal.restore(mark.states)

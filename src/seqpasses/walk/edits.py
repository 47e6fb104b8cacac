"""Every change the walk makes to a graph goes through :class:`Edits`, the applier's writer.

The applier (:mod:`seqpasses.walk.apply`) writes what transfers propose through it:
replacing a value, writing a static sequence back as a canonical ``SequenceConstruct`` (for a
consumer or a graph output that needs a sequence), recording a rewrite, and undoing a trial
(:meth:`Edits.checkpoint` / :meth:`Edits.rollback`: an unrolling whose copies would keep a
sequence op). Transfers see it only through a read-only view (``Written`` in
:mod:`seqpasses.walk.context`). This is the only place that knows about a dry walk (the
analysis behind shape inference): there it records what a rewrite would give and changes
nothing. Parts live in their own modules, mixed in: what stays at the end (walk/keep.py),
the writing of lists back as sequences (walk/materialize.py), and rebuilding control flow
(walk/outcomes.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import onnx_ir as ir

from seqpasses.core.dims import contradicts, fill_shape, shape_text
from seqpasses.core.emit import Emitter, EmitterCaches
from seqpasses.core.graph import graph_nodes, subgraphs
from seqpasses.report import Report
from seqpasses.walk import trial
from seqpasses.walk.builds import BuildsMixin
from seqpasses.walk.facts import Facts
from seqpasses.walk.keep import Liveness
from seqpasses.walk.materialize import MaterializeMixin
from seqpasses.walk.recorder import Recorder
from seqpasses.walk.scope import Scope
from seqpasses.walk.trial import Checkpoint, CreatedNodes, Journal

__all__ = ["Edits"]


def _proven(shape: ir.Shape) -> bool:
    """Whether every dim of ``shape`` is a number or a name (none is unknown)."""
    return all(isinstance(d, int) or (isinstance(d, ir.SymbolicDim) and d.value) for d in shape)


class Edits(MaterializeMixin, BuildsMixin):
    """Graph changes and their records. ``dry``: record what would change, change nothing.
    What stays at the end: ``keep`` (:class:`~seqpasses.walk.keep.Liveness`); canonical sequences:
    :class:`~seqpasses.walk.materialize.MaterializeMixin`; applying what transfers propose:
    :class:`~seqpasses.walk.builds.BuildsMixin`."""

    def __init__(
        self, facts: Facts, report: Report, dry: bool = False, max_split: int = 4096
    ) -> None:
        self.facts = facts
        self.max_split = max_split  # the most rows a list held as one tensor is split into
        self.dry = dry
        self.created = CreatedNodes()
        self.recorder = recorder = Recorder(report, facts, self.created)
        # every record a speculative rewrite may add to registers with the journal, which
        # rolls them all back (walk/trial.py)
        self.journal = journal = Journal()
        journal.state(facts.undo.position, facts.undo.back_to)  # (what the walk learned)
        self.canonical: set[ir.Node] = journal.cache(set())  # made by materialize()
        # initializers moved in by inlining
        self.registered: list[tuple[ir.Graph, str]] = journal.log([], _unregister)
        self.forwarded: dict[ir.Value, ir.Value] = {}  # replaced value -> its replacement
        self.retired: set[ir.Node] = set()  # control-flow nodes a rebuilt one replaced
        # SplitToSequence write-backs of a type ONNX Runtime has no kernel for (a speculative
        # rewrite that made one is undone; see ORT_SPLIT_TO_SEQUENCE_TYPES)
        self.unloadable: list[ir.Node] = journal.cache([])
        journal.log(recorder.diverged)
        journal.log(report.rewrites)
        journal.log(report.notes)
        # what emitters share (this is their Owner outside a visit; a visit's tape shares it)
        self.caches = EmitterCaches(
            journal.cache({}), journal.cache({}), journal.cache({}), journal.cache({})
        )
        self.materialized: dict[tuple[int, tuple[ir.Value, ...], Any], ir.Value] = journal.cache({})
        self.counter = 0
        # what stays whatever reads it (checks, nodes dead as given, clones' origins)
        self.keep = Liveness(
            facts, self.created, recorder, self.forwarded, self.current, journal.cache({})
        )

    @property
    def check_nodes(self) -> dict[ir.Node, None]:
        """The nodes that stay whatever reads them (run-time checks), in the order made."""
        return self.keep.check_nodes

    # -- building ------------------------------------------------------------------------

    def emitter(self, scope: Scope, anchor: ir.Node | None) -> Emitter:
        return Emitter(scope.graph, anchor, scope.opset, self, scope.shapes.seen)

    def place(self, graph: ir.Graph | ir.Function, anchor: ir.Node | None, node: ir.Node) -> None:
        """Where an emitter's new node goes: before ``anchor`` (at the end when ``None``); in a
        dry walk nowhere (the node only describes a value). Either way it counts as created."""
        if not self.dry:
            if anchor is None:
                graph.append(node)
            else:
                graph.insert_before(anchor, node)
        self.created.add(node)

    def next_name(self, base: str, op_type: str) -> str:
        self.counter += 1
        return f"{base}/{op_type}_{self.counter}"

    def record_clone(self, copy: ir.Graph, graph: ir.Graph) -> None:
        """``copy`` is a clone of ``graph`` (a body a Loop gets instead of its own): each of
        its nodes stands for the one it copies, as to what must stay (``keep``)."""
        cloned = self.keep.cloned
        for new, old in zip(graph_nodes(copy), graph_nodes(graph), strict=True):
            cloned[new] = old

    def check(self, value: ir.Value) -> ir.Value:
        """Record that the node making ``value`` checks something at run time (it fails where
        the op it stands for fails): it stays, whatever reads it. Returns ``value``."""
        producer = value.producer()
        if not self.dry and producer is not None:
            self.keep.check_nodes[producer] = None
        return value

    def diverges(self, value: ir.Value, note: str) -> None:
        """``value``'s shape follows ONNX Runtime, not the spec (an emitter's owner)."""
        self.recorder.note(note)
        self.recorder.diverged.append(value)

    def register_initializer(self, graph: ir.Graph, value: ir.Value) -> None:
        graph.register_initializer(value)
        assert value.name is not None
        self.registered.append((graph, value.name))

    # -- replacing -----------------------------------------------------------------------

    def replace(self, old: ir.Value, new: ir.Value, scope: Scope) -> None:
        """Point every use of ``old`` at ``new``; graph outputs keep their name and order."""
        if self.dry:
            if old.type is None:
                old.type = new.type
            old.shape = fill_shape(old.shape, new.shape, numbers_win=True)
            if new.const_value is not None and new.const_value.size == 1:
                self.facts.ints[old] = int(new.const_value.numpy().reshape(-1)[0])
            return
        # (a function's values belong to the graph it wraps)
        home = scope.graph.graph if isinstance(scope.graph, ir.Function) else scope.graph
        slots = list(scope.output_slots.get(old, ())) if old.is_graph_output() else []
        if slots:  # (one value for every slot: a graph may list one output twice)
            target = self._output_target(old, new, scope, home)
            name = old.name
            for index in slots:
                self.take_output_slot(scope, index, old, target, name)
        if contradicts(old.shape, new.shape):  # what reads it was declared for the old shape
            self.recorder.diverged.append(new)
        old.replace_all_uses_with(new)
        self.forwarded[old] = new

    def _output_target(
        self, old: ir.Value, new: ir.Value, scope: Scope, home: ir.Graph
    ) -> ir.Value:
        """The value that takes ``old``'s graph output slots when ``new`` replaces it."""
        fresh = (
            new.producer() in self.created
            and new.graph is home
            and not new.is_graph_output()
            and not new.is_graph_input()
        )
        seq = self.facts.static(new)
        # a canonical sequence of this graph can take the output over, even one the
        # model had: a second SequenceConstruct/SequenceEmpty would only duplicate it
        movable = new.graph is home and not new.is_graph_output() and not new.is_graph_input()
        held = self.facts.stacked(new)
        if seq is not None and new.is_graph_output() and scope.opset >= 14:
            # another graph output already: an Identity of it, not a second list
            target = self.emitter(scope, None).identity(new)
        elif seq is not None:
            canonical = movable and self.is_canonical(new, seq)
            target = new if canonical else self.materialize(seq, scope, None, old)
        elif held is not None and not (movable and self.is_canonical(new, held)):
            # a list held as one tensor (a rebuilt Loop's): written back, or the value
            # would keep what was rebuilt alive
            written = self.write_back(new, held, scope, None, old, output=True)
            target = written or (new if fresh else self.emitter(scope, None).identity(new))
        else:
            target = new if fresh else self.emitter(scope, None).identity(new)
        return target

    def current(self, value: ir.Value) -> ir.Value:
        """What ``value`` stands for now: its replacement, if a rewrite replaced it (a list of
        values taken before a walk, such as an inlined body's outputs, may hold stale ones)."""
        while value in self.forwarded:
            value = self.forwarded[value]
        return value

    def declare_output(self, new: ir.Value, declared: ir.Shape | None) -> None:
        """Graph output ``new`` takes the shape the model declared for its slot where that
        holds (a contradicted one is replaced by what the graph computes, with a note)."""
        if declared is not None and (new.shape is None or not _proven(new.shape)):
            self.recorder.unverified = (
                True  # (the declared dims that fill the unknown ones are a guess)
            )
        if contradicts(declared, new.shape):
            # The exporter declared a shape the output never has (seen in TorchScript
            # exports); keeping it would make the rewritten graph fail ONNX's checker.
            self.recorder.note(
                f"output '{new.name}': declared shape {shape_text(declared)} contradicts what "
                f"the graph computes, {shape_text(new.shape)}: declared so instead"
            )
        else:
            new.shape = fill_shape(declared, new.shape, numbers_win=True)

    def take_output_slot(
        self, scope: Scope, index: int, old: ir.Value, new: ir.Value, name: str | None = None
    ) -> None:
        """``new`` takes graph output ``index`` of ``scope``'s graph from ``old``: its name
        (``name``, when ``old`` gave it up for an earlier slot already), its declared type,
        and its declared shape where that holds (a contradicted one is replaced, with a
        note)."""
        name = old.name if name is None else name
        if old.name == name:
            old.name = f"{name}__seqpasses_replaced" if name else None
        new.name = name
        if old.type is not None:
            new.type = old.type
        self.declare_output(new, old.shape)
        # (a slice: onnx_ir's item assignment asks a runtime protocol, 5 µs a call)
        scope.graph.outputs[index : index + 1] = [new]
        slots = scope.output_slots.pop(old, [])
        if index in slots:
            slots.remove(index)
        if slots:
            scope.output_slots[old] = slots
        scope.output_slots.setdefault(new, []).append(index)

    def rebuilt(self, node: ir.Node, old: ir.Node, scope: Scope) -> None:
        """``node`` (made by :func:`~seqpasses.core.graph.rebuild`) replaces ``old``, a
        control-flow node of ``scope``'s graph: it owns the subgraphs it took over, and gets
        its sequence inputs in canonical form."""
        self.created.add(node)
        self.retired.add(old)
        self.facts.paths.setdefault(node, scope.path)
        for attr, graph in subgraphs(node):
            self.facts.owners[id(graph)] = (node, attr)
        self.canonical_inputs(node, scope)

    # -- speculative rewrites (walk/trial.py) ---------------------------------------------

    def checkpoint(self, since: int) -> Checkpoint:
        """Where the records stood when the walk had made ``since`` nodes (a transfer's tape
        began there: nothing was recorded since)."""
        return trial.checkpoint(since, self.journal, self.recorder.rewrote)

    def left_since(self, mark: Checkpoint, roots: Iterable[ir.Value]) -> list[ir.Node]:
        return trial.left_since(
            self.created,
            mark,
            roots,
            lambda node: self.keep.holds_failure(node, settled=False),
            lambda node: node in self.facts.reasons or node in self.canonical,
        )

    def rollback(self, mark: Checkpoint) -> None:
        trial.rollback(self.created, self.journal, mark)
        self.recorder.rewrote = mark.rewrote


def _unregister(entry: tuple[ir.Graph, str]) -> None:
    """Undo :meth:`Edits.register_initializer`."""
    graph, name = entry
    graph.initializers.pop(name, None)

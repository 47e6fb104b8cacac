"""Every change the walk makes to a graph goes through :class:`Edits`.

Replacing a value, writing a static sequence back as a canonical ``SequenceConstruct`` (for a
consumer or a graph output that needs a sequence), recording a rewrite, and undoing a
speculative one (:meth:`Edits.checkpoint` / :meth:`Edits.rollback`: an unrolling whose copies
would keep a sequence op). This is the only place that knows about a dry walk (the analysis
behind shape inference): there it records what a rewrite would give and changes nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import onnx_ir as ir

from seqpasses.core.dims import contradicts, fill_shape
from seqpasses.core.emit import Emitter
from seqpasses.core.graph import detach, drop_subgraphs, is_default, nested_nodes
from seqpasses.core.sequence import StaticSequence, Unknown
from seqpasses.report import SEQUENCE_OPS, Report, Rewrite
from seqpasses.walk.facts import Facts, Reason
from seqpasses.walk.scope import Scope

__all__ = ["Checkpoint", "CreatedNodes", "Edits", "shape_text"]


def shape_text(shape: ir.Shape | None) -> str:
    return "[" + ",".join(str(d) for d in shape) + "]" if shape is not None else "?"


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
    """Where the records stood before a speculative rewrite (see :meth:`Edits.rollback`)."""

    created: int
    rewrites: int
    notes: int
    diverged: int
    initializers: int
    rewrote: bool


class Edits:
    """Graph changes and their records. ``dry``: record what would change, change nothing."""

    def __init__(self, facts: Facts, report: Report, dry: bool = False) -> None:
        self.facts = facts
        self.report = report
        self.dry = dry
        self.rewrote = False
        self.created = CreatedNodes()
        self.canonical: set[ir.Node] = set()  # SequenceConstruct/Empty nodes materialize() made
        self.registered: list[tuple[ir.Graph, str]] = []  # initializers moved in by inlining
        self.origin: dict[ir.Node, ir.Node] = {}  # a copy made by inlining -> what it copies
        self.forwarded: dict[ir.Value, ir.Value] = {}  # replaced value -> its replacement
        # values whose shape departs from what the spec (and so an exporter's declared shapes
        # downstream) says: SplitToSequence chunks squeezed as ONNX Runtime and PyTorch do
        self.diverged: list[ir.Value] = []
        # caches the Emitter keeps here (its Owner): shared constants, undoable squeezes
        self.constants: dict[tuple[int, tuple[int, ...]], ir.Value] = {}
        self.squeezed: dict[ir.Value, tuple[ir.Value, int]] = {}
        self.split_axis: dict[ir.Node, int] = {}
        self.materialized: dict[tuple[int, tuple[ir.Value, ...], Any], ir.Value] = {}
        self.counter = 0

    # -- building ------------------------------------------------------------------------

    def emitter(self, scope: Scope, anchor: ir.Node | None) -> Emitter:
        return Emitter(scope.graph, anchor, scope.opset, self)

    def next_name(self, base: str, op_type: str) -> str:
        self.counter += 1
        return f"{base}/{op_type}_{self.counter}"

    def applied(self, rule: str, node: ir.Node, detail: str = "") -> bool:
        """Record a rewrite (``rule``: a registered rewrite id); True, for the transfer."""
        self.rewrote = True
        self.report.rewrites.append(
            Rewrite(rule, node.name or "", node.op_type, self.facts.paths.get(node, ""), detail)
        )
        return True

    def note(self, text: str) -> None:
        self.report.notes.append(text)

    def record_copy(self, copy: ir.Node, original: ir.Node) -> None:
        """``copy`` (and its subgraphs' nodes) copies ``original``: the report says so."""
        self.origin[copy] = original
        for inner, source in zip(nested_nodes(copy), nested_nodes(original), strict=True):
            self.origin[inner] = source

    def register_initializer(self, graph: ir.Graph, value: ir.Value) -> None:
        graph.register_initializer(value)
        assert value.name is not None
        self.registered.append((graph, value.name))

    def source(self, node: ir.Node) -> str:
        """Where a node comes from, for the report (see :class:`~seqpasses.report.Rewrite`)."""
        original = self.origin.get(node)
        if original is not None:
            while original in self.origin:
                original = self.origin[original]
            return f"copy of {original.name or original.op_type}"
        return "added" if node in self.created else ""

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
        for index in list(scope.output_slots.get(old, ())) if old.is_graph_output() else ():
            fresh = (
                new.producer() in self.created
                and new.graph is scope.graph
                and not new.is_graph_output()
                and not new.is_graph_input()
            )
            seq = self.facts.static(new)
            # a canonical sequence of this graph can take the output over, even one the
            # model had: a second SequenceConstruct/SequenceEmpty would only duplicate it
            movable = (
                new.graph is scope.graph and not new.is_graph_output() and not new.is_graph_input()
            )
            if seq is not None:
                canonical = movable and self.is_canonical(new, seq)
                target = new if canonical else self.materialize(seq, scope, None, old)
            else:
                target = new if fresh else self.emitter(scope, None).identity(new)
            self._take_output_slot(scope, index, old, target)
        old.replace_all_uses_with(new)
        self.forwarded[old] = new

    def current(self, value: ir.Value) -> ir.Value:
        """What ``value`` stands for now: its replacement, if a rewrite replaced it (a list of
        values taken before a walk, such as an inlined body's outputs, may hold stale ones)."""
        while value in self.forwarded:
            value = self.forwarded[value]
        return value

    def _take_output_slot(self, scope: Scope, index: int, old: ir.Value, new: ir.Value) -> None:
        name = old.name
        old.name = f"{name}__seqpasses_replaced" if name else None
        new.name = name
        if old.type is not None:
            new.type = old.type
        if contradicts(old.shape, new.shape):
            # The exporter declared a shape the output never has (seen in TorchScript
            # exports); keeping it would make the rewritten graph fail ONNX's checker.
            self.note(
                f"output '{name}': declared shape {shape_text(old.shape)} contradicts the "
                f"computed {shape_text(new.shape)}; the computed one is declared"
            )
        else:
            new.shape = fill_shape(old.shape, new.shape, numbers_win=True)
        scope.graph.outputs[index] = new
        slots = scope.output_slots.pop(old, [])
        if index in slots:
            slots.remove(index)
        if slots:
            scope.output_slots[old] = slots
        scope.output_slots.setdefault(new, []).append(index)

    # -- canonical sequences -------------------------------------------------------------

    def is_canonical(self, value: ir.Value, seq: StaticSequence) -> bool:
        producer = value.producer()
        if producer is None or not is_default(producer):
            return False
        if producer.op_type == "SequenceConstruct":
            return len(seq) > 0 and tuple(producer.inputs) == seq.elements
        return producer.op_type == "SequenceEmpty" and len(seq) == 0

    def materialize(
        self, seq: StaticSequence, scope: Scope, anchor: ir.Node | None, like: ir.Value
    ) -> ir.Value:
        """``seq`` written as one SequenceConstruct (SequenceEmpty), before ``anchor``."""
        if self.forwarded and any(e in self.forwarded for e in seq.elements):
            # an element was replaced after the list was built (a read rewritten later):
            # the list holds what replaced it, or the replaced node would stay alive
            seq = StaticSequence(tuple(self.current(e) for e in seq.elements), seq.dtype)
        key = (id(scope.graph), seq.elements, seq.dtype)
        if anchor is not None and key in self.materialized:
            return self.materialized[key]
        emit = self.emitter(scope, anchor)
        if len(seq) == 0:
            value = emit.sequence_empty(seq.dtype, like)
        else:
            value = emit.sequence_construct(seq.elements, like)
        self.facts.values[value] = seq
        producer = value.producer()
        if producer is not None:
            self.facts.paths[producer] = scope.path
            self.canonical.add(producer)
        if anchor is not None:
            self.materialized[key] = value
        return value

    def fallback(self, node: ir.Node, scope: Scope) -> None:
        """An op that needs its sequence inputs as sequences: give it them in canonical form."""
        for index, value in enumerate(() if self.dry else node.inputs):
            seq = self.facts.static(value)
            if value is None or seq is None or self.is_canonical(value, seq):
                continue
            node.replace_input_with(index, self.materialize(seq, scope, node, value))
            self.applied("canonical-sequence-input", node, f"input {index} as SequenceConstruct")
        kind = "loop" if node.op_type == "Loop" else "unknown-sequence"
        produced = Reason(kind, self.facts.produced_by(node, ""))
        for out in node.outputs:
            if out not in self.facts.values and isinstance(
                out.type, ir.SequenceType | ir.OptionalType
            ):
                self.facts.values[out] = Unknown(produced)
        if node.op_type in SEQUENCE_OPS and node not in self.facts.reasons:
            self.facts.reasons[node] = Reason(
                "unknown-sequence", f"{node.op_type} is not statically resolvable here"
            )

    def canonicalize_outputs(self, scope: Scope) -> None:
        """A graph output that is a static sequence: one canonical SequenceConstruct."""
        if self.dry:
            return
        for index, out in enumerate(list(scope.graph.outputs)):
            seq = self.facts.static(out)
            if seq is None or self.is_canonical(out, seq):
                continue
            cached = self.materialized.get((id(scope.graph), seq.elements, seq.dtype))
            if cached is not None and not cached.is_graph_output():
                value = cached  # already built for a consumer: the output takes it over
            else:
                value = self.materialize(seq, scope, None, out)
            self._take_output_slot(scope, index, out, value)
            self.rewrote = True
            self.report.rewrites.append(
                Rewrite(
                    "canonical-sequence-output",
                    out.name or "",
                    "output",
                    scope.path,
                    f"{len(seq)} elements",
                )
            )

    # -- speculative rewrites ------------------------------------------------------------

    def checkpoint(self) -> Checkpoint:
        return Checkpoint(
            len(self.created),
            len(self.report.rewrites),
            len(self.report.notes),
            len(self.diverged),
            len(self.registered),
            self.rewrote,
        )

    def left_since(self, mark: Checkpoint, roots: Iterable[ir.Value]) -> list[ir.Node]:
        """Sequence ops among the nodes created since ``mark`` (subgraphs included) that will
        stay: left with a reason, or a canonical sequence made for a consumer that needs one,
        and live: ``roots`` (the values the new nodes stand in for) or a graph output depend
        on them."""
        window = [
            inner
            for node in self.created.order[mark.created :]
            for inner in (node, *nested_nodes(node))
        ]
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
        return [
            node
            for node in window
            if node in live
            and node.op_type in SEQUENCE_OPS
            and is_default(node)
            and (node in self.facts.reasons or node in self.canonical)
        ]

    def rollback(self, mark: Checkpoint) -> None:
        """Remove every node created since ``mark`` and forget what was recorded about it.

        Only valid while nothing that existed before ``mark`` was changed (the speculative
        rewrites only add nodes before their anchor and rewrite those new nodes)."""
        dropped = self.created.truncate(mark.created)
        gone = set(dropped)
        for node in dropped:
            drop_subgraphs(node)
        detach(dropped)
        for graph, name in self.registered[mark.initializers :]:
            graph.initializers.pop(name, None)
        del self.registered[mark.initializers :]
        del self.report.rewrites[mark.rewrites :]
        del self.report.notes[mark.notes :]
        del self.diverged[mark.diverged :]
        self.rewrote = mark.rewrote
        self.canonical -= gone
        for key in [k for k, v in self.constants.items() if v.producer() in gone]:
            del self.constants[key]
        for seq_key in [k for k, v in self.materialized.items() if v.producer() in gone]:
            del self.materialized[seq_key]

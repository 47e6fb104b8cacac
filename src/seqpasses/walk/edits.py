"""Every change the walk makes to a graph goes through :class:`Edits`.

Replacing a value, writing a static sequence back as a canonical ``SequenceConstruct`` (for a
consumer or a graph output that needs a sequence), recording a rewrite, and undoing a
speculative one (:meth:`Edits.checkpoint` / :meth:`Edits.rollback`: an unrolling whose copies
would keep a sequence op). This is the only place that knows about a dry walk (the analysis
behind shape inference): there it records what a rewrite would give and changes nothing.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import onnx_ir as ir

from seqpasses.core.dims import contradicts, fill_shape, shape_text
from seqpasses.core.emit import Emitter
from seqpasses.core.graph import (
    GRAPH_HOLDERS,
    graph_nodes,
    graphs,
    is_default,
    nested_nodes,
    subgraphs,
)
from seqpasses.core.ops import ORT_SPLIT_TO_SEQUENCE_TYPES, SEQUENCE_OPS
from seqpasses.core.sequence import FAILING_KINDS, StackedSequence, StaticSequence, Unknown
from seqpasses.report import Report, Rewrite
from seqpasses.walk import trial
from seqpasses.walk.facts import Facts, Reason
from seqpasses.walk.scope import Scope
from seqpasses.walk.trial import Checkpoint, CreatedNodes, Journal

__all__ = ["Edits"]


def _proven(shape: ir.Shape) -> bool:
    """Whether every dim of ``shape`` is a number or a name (none is unknown)."""
    return all(isinstance(d, int) or (isinstance(d, ir.SymbolicDim) and d.value) for d in shape)


class Edits:
    """Graph changes and their records. ``dry``: record what would change, change nothing."""

    def __init__(
        self, facts: Facts, report: Report, dry: bool = False, max_split: int = 4096
    ) -> None:
        self.facts = facts
        self.max_split = max_split  # the most rows a list held as one tensor is split into
        self.report = report
        self.dry = dry
        self.rewrote = False
        self.created = CreatedNodes()
        # every record a speculative rewrite may add to registers with the journal, which
        # rolls them all back (walk/trial.py)
        self.journal = journal = Journal()
        self.canonical: set[ir.Node] = journal.cache(set())  # made by materialize()
        # initializers moved in by inlining
        self.registered: list[tuple[ir.Graph, str]] = journal.log([], _unregister)
        self.origin: dict[ir.Node, ir.Node] = {}  # a copy made by inlining -> what it copies
        self.forwarded: dict[ir.Value, ir.Value] = {}  # replaced value -> its replacement
        self.retired: set[ir.Node] = set()  # control-flow nodes a rebuilt one replaced
        # a declaration was kept that no rewrite proved (see passes/repair_shapes.py)
        self.unverified = False
        # SplitToSequence write-backs of a type ONNX Runtime has no kernel for (a speculative
        # rewrite that made one is undone; see ORT_SPLIT_TO_SEQUENCE_TYPES)
        self.unloadable: list[ir.Node] = journal.cache([])
        # values whose shape departs from what the spec (and so an exporter's declared shapes
        # downstream) says: SplitToSequence chunks squeezed as ONNX Runtime and PyTorch do
        self.diverged: list[ir.Value] = journal.log([])
        journal.log(report.rewrites)
        journal.log(report.notes)
        self.pending: list[tuple[Rewrite, ir.Node, bool]] = []  # computed(), written_back()
        # caches the Emitter keeps here (its Owner): shared constants, undoable squeezes
        self.constants: dict[tuple[int, str, tuple[int, ...]], ir.Value] = journal.cache({})
        self.squeezed: dict[ir.Value, tuple[ir.Value, int]] = journal.cache({})
        self.split_axis: dict[ir.Node, int] = journal.cache({})
        self.materialized: dict[tuple[int, tuple[ir.Value, ...], Any], ir.Value] = journal.cache({})
        # static lists as [n, *E]
        self.stacks: dict[tuple[int, tuple[ir.Value, ...]], ir.Value] = journal.cache({})
        self.counter = 0
        # nodes that must stay even when nothing reads them: the checks rewrites emit (a
        # normalized run-time position, a Split of run-time sizes, a guard against an empty
        # list), and the nodes dead in the model as given (set before the walk)
        self.check_nodes: set[ir.Node] = journal.cache(set())
        self.dead_in_input: set[ir.Node] = set()
        self.cloned: dict[ir.Node, ir.Node] = {}  # a node of a cloned body -> what it copies

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

    def computed(self, rule: str, node: ir.Node, detail: str = "") -> bool:
        """Record a rewrite whose effect depends on what reads ``node``'s result: a list held
        as one tensor takes effect when its readers are rewritten (``node`` then dies). It
        counts only if ``node`` is gone after dead-code removal (:meth:`drop_unused`)."""
        path = self.facts.paths.get(node, "")
        rewrite = Rewrite(rule, node.name or "", node.op_type, path, detail)
        self.report.rewrites.append(rewrite)
        self.pending.append((rewrite, node, False))
        return True

    def written_back(self, made: ir.Node, rewrite: Rewrite) -> None:
        """Record ``rewrite``, made by writing ``made``: it counts only if ``made`` is still in
        the graph after dead-code removal (a later rewrite may have made it unneeded)."""
        self.rewrote = True
        self.report.rewrites.append(rewrite)
        self.pending.append((rewrite, made, True))

    def drop_unused(self) -> None:
        """Forget the recorded rewrites that did not take effect: a node whose new form nothing
        read is still there, or a node written for a reader is gone."""
        void = {id(r) for r, node, made in self.pending if (node.graph is not None) != made}
        if void:
            self.report.rewrites[:] = [r for r in self.report.rewrites if id(r) not in void]
        self.pending.clear()

    def applied_output(self, rule: str, value: ir.Value, scope: Scope, detail: str) -> None:
        """Record a rewrite of a value rather than a node (a graph output written back)."""
        self.rewrote = True
        self.report.rewrites.append(Rewrite(rule, value.name or "", "output", scope.path, detail))

    def record_clone(self, copy: ir.Graph, graph: ir.Graph) -> None:
        """``copy`` is a clone of ``graph`` (a body a Loop gets instead of its own): each of
        its nodes stands for the one it copies, as to what must stay (:meth:`holds_failure`)."""
        for new, old in zip(graph_nodes(copy), graph_nodes(graph), strict=True):
            self.cloned[new] = old

    def _source(self, node: ir.Node) -> ir.Node | None:
        """The node ``node`` copies (inlined, unrolled or cloned), if any."""
        found = self.origin.get(node)
        return found if found is not None else self.cloned.get(node)

    def check(self, value: ir.Value) -> ir.Value:
        """Record that the node making ``value`` checks something at run time (it fails where
        the op it stands for fails): it stays, whatever reads it. Returns ``value``."""
        producer = value.producer()
        if not self.dry and producer is not None:
            self.check_nodes.add(producer)
        return value

    def holds_failure(self, node: ir.Node, settled: bool = True) -> bool:
        """Whether ``node`` must stay even when nothing reads it: a check a rewrite emitted,
        a node left as it is (out of range, or any op seqpasses could not prove runs: it may
        fail at run time; not the canonical form of a sequence written for a reader), or a
        node dead in the model as given (or a copy of one) the walk neither replaced nor
        folded. Not ``settled`` (during the walk): of the nodes left, only those that fail
        whatever comes later (a read of a loop's list may yet be rewritten). Never a copy of
        a node already replaced when it was copied (an unrolled body still holding it)."""
        if self._stale(node):
            return False
        if self._is_check(node):
            return True
        if self._left(node) and (settled or self.facts.reasons[node].kind in FAILING_KINDS):
            return True
        return (
            self._was_dead(node)
            and not self._resolved(node)
            and not self._superseded(node)
            and not _unit_split(node)
        )

    def protected(self, model: ir.Model) -> set[ir.Node]:
        """The nodes of ``model`` dead-code removal must keep (:meth:`holds_failure`), and
        what replaced a node dead in the model as given (a rewrite of it that may fail); but
        none inside a graph whose holder's work the walk took over (a SequenceMap inlined)."""
        holders: dict[int, ir.Node] = {}
        candidates: set[ir.Node] = set()
        for _, graph in graphs(model):
            for node in graph:
                if self.holds_failure(node):
                    candidates.add(node)
                for _, inner in subgraphs(node):
                    holders[id(inner)] = node
        for node in (*self.dead_in_input, *self.origin, *self.cloned):
            if not self._replaced(node) or not self._was_dead(node) or self._stale(node):
                continue
            for out in node.outputs:
                producer = self.current(out).producer()
                if (
                    producer is not None
                    and producer in self.created
                    and producer.op_type != "Constant"
                    and not self._resolved(producer)
                ):
                    candidates.add(producer)
        tops = {id(model.graph), *(id(f.graph) for f in model.functions.values())}
        memo: dict[ir.Node, bool] = {}
        return {
            n
            for n in candidates
            if self._in_effect(n, holders, tops) and not self._leftover(n, memo)
        }

    def _in_effect(self, node: ir.Node, holders: dict[int, ir.Node], tops: set[int]) -> bool:
        """Whether ``node`` sits in the model, under holders whose work is still theirs."""
        graph = node.graph
        while graph is not None and id(graph) not in tops:
            holder = holders.get(id(graph))
            if holder is None or self._resolved(holder) or self._superseded(holder):
                return False
            graph = holder.graph
        return graph is not None

    def _replaced(self, node: ir.Node) -> bool:
        return any(out in self.forwarded for out in node.outputs)

    def _superseded(self, node: ir.Node) -> bool:
        """Whether ``node``'s work is done elsewhere now: its outputs replaced, or its graphs
        taken (an If inlined or rebuilt, a Loop unrolled or rebuilt)."""
        if self._replaced(node):
            return True
        names = GRAPH_HOLDERS.get(node.op_type, ()) if is_default(node) else ()
        return any(name not in node.attributes for name in names)

    def _stale(self, node: ir.Node) -> bool:
        """Whether ``node`` copies a node whose work was done elsewhere when it was copied
        (replaced, or its graphs taken: an unrolled or inlined body still held it)."""
        source = self._source(node)
        while source is not None:
            if self._superseded(source):
                return True
            source = self._source(source)
        return False

    def _leftover(self, start: ir.Node, memo: dict[ir.Node, bool]) -> bool:
        """Whether ``start`` is, or reads at any distance, a node whose work is done elsewhere
        or a stale copy (:meth:`_stale`): what a rewrite left behind, not the model's work."""
        stack: list[tuple[ir.Node, bool]] = [(start, False)]
        while stack:
            node, expanded = stack.pop()
            if node in memo:
                continue
            producers = [p for p in (v.producer() for v in node.inputs if v is not None) if p]
            if expanded:
                memo[node] = any(memo.get(p, False) for p in producers)
            elif self._superseded(node) or self._stale(node):
                memo[node] = True
            else:
                stack.append((node, True))
                stack.extend((p, False) for p in producers if p not in memo)
        return memo[start]

    def _is_check(self, node: ir.Node) -> bool:
        """Whether ``node`` is, or copies, a check a rewrite emitted."""
        found: ir.Node | None = node
        while found is not None and found not in self.check_nodes:
            found = self._source(found)
        return found is not None

    def _left(self, node: ir.Node) -> bool:
        """Whether ``node`` was left as it is (see :meth:`holds_failure`), and not replaced
        later (a read of a loop's list, once the loop is rewritten); but a split into chunks
        of one, which never fails (its reads are lowered whatever its length)."""
        reason = self.facts.reasons.get(node)
        return (
            reason is not None
            and reason.kind != "needs-sequence"
            and not self._superseded(node)
            and not _unit_split(node)
        )

    def _was_dead(self, node: ir.Node) -> bool:
        """Whether ``node`` is, or copies, a node dead in the model as given."""
        found: ir.Node | None = node
        while found is not None and found not in self.dead_in_input:
            found = self._source(found)
        return found is not None

    def _resolved(self, node: ir.Node) -> bool:
        """A sequence op the walk folded (its value is known, it was left with no reason)."""
        return is_default(node) and node.op_type in SEQUENCE_OPS and node not in self.facts.reasons

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
            held = self.facts.stacked(new)
            if seq is not None:
                canonical = movable and self.is_canonical(new, seq)
                target = new if canonical else self.materialize(seq, scope, None, old)
            elif held is not None and not (movable and self.is_canonical(new, held)):
                # a list held as one tensor (a rebuilt Loop's): written back, or the value
                # would keep what was rebuilt alive
                written = self.write_back(new, held, scope, None, old, output=True)
                target = written or (new if fresh else self.emitter(scope, None).identity(new))
            else:
                target = new if fresh else self.emitter(scope, None).identity(new)
            self._take_output_slot(scope, index, old, target)
        if contradicts(old.shape, new.shape):  # what reads it was declared for the old shape
            self.diverged.append(new)
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
        if old.shape is not None and (new.shape is None or not _proven(new.shape)):
            self.unverified = True  # (the declared dims that fill the unknown ones are a guess)
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

    def is_canonical(self, value: ir.Value, seq: StaticSequence | StackedSequence) -> bool:
        producer = value.producer()
        if producer is None or not is_default(producer):
            return False
        if producer.op_type == "Identity" and producer.inputs and producer.inputs[0] is not None:
            return self.is_canonical(producer.inputs[0], seq)  # (an If branch returning it)
        if isinstance(seq, StackedSequence):
            return (
                producer.op_type == "SplitToSequence"
                and producer.inputs[0] is seq.tensor
                and len(producer.inputs) == 1
                and producer.attributes.get_int("axis", 0) == 0
                and producer.attributes.get_int("keepdims", 1) == 0
            )
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
        cached = self.canonical_of(seq, scope.graph) if anchor is not None else None
        if cached is not None:
            return cached
        graph, path = scope.graph, scope.path
        if anchor is not None:  # (a graph output is written in its own graph)
            graph, anchor = self._home(seq, scope.graph, anchor)
            path = scope.path if graph is scope.graph else self.facts.paths.get(anchor, path)
        emit = Emitter(graph, anchor, scope.opset, self)
        if len(seq) == 0:
            value = emit.sequence_empty(seq.dtype, like)
        else:
            value = emit.sequence_construct(seq.elements, seq.dtype, like)
        self.facts.values[value] = seq
        producer = value.producer()
        if producer is not None:
            self.facts.paths[producer] = path
            self.canonical.add(producer)
        if anchor is not None:
            self.materialized[(id(graph), seq.elements, seq.dtype)] = value
        return value

    def _home(
        self, seq: StaticSequence, graph: ir.Graph | ir.Function, anchor: ir.Node
    ) -> tuple[ir.Graph | ir.Function, ir.Node]:
        """Where a list needed before ``anchor`` (in ``graph``) is written: in the innermost
        graph, enclosing ``graph`` or ``graph`` itself, that holds one of its elements (the
        outermost for an empty list), before the node whose subgraph ``graph`` sits in; so that
        every body that needs the list reads that one."""
        chain: list[tuple[ir.Graph | ir.Function, ir.Node]] = [(graph, anchor)]
        while (owner := self.facts.owner(chain[-1][0])) is not None and owner[0].graph:
            chain.append((owner[0].graph, owner[0]))
        own = [inner.graph if isinstance(inner, ir.Function) else inner for inner, _ in chain]
        homes = set()
        for element in seq.elements:
            where = element.graph
            if where is None or not any(where is g for g in own):
                return graph, anchor  # (an element the chain does not hold: leave it here)
            homes.add(id(where))
        for (inner, at), mine in zip(chain, own, strict=True):
            if id(mine) in homes:
                return inner, at
        return chain[-1]

    def known_canonical(self, value: ir.Value, seq: StaticSequence, scope: Scope) -> None:
        """``value``, made by a SequenceConstruct/SequenceEmpty the model has, is ``seq`` in
        canonical form: what needs that list as a sequence may read it."""
        if not self.dry:
            self.materialized.setdefault((id(scope.graph), seq.elements, seq.dtype), value)

    def canonical_of(self, seq: StaticSequence, graph: ir.Graph | ir.Function) -> ir.Value | None:
        """A canonical sequence of ``seq`` already in ``graph`` or a graph enclosing it (one the
        model had, or one written for an earlier consumer): a body reads it from there, rather
        than each place that needs the list making its own (more sequence ops than before)."""
        inner: ir.Graph | ir.Function | None = graph
        while inner is not None:
            value = self.materialized.get((id(inner), seq.elements, seq.dtype))
            producer = value.producer() if value is not None else None
            if producer is not None and producer.graph is not None:
                return value
            owner = self.facts.owner(inner)
            inner = owner[0].graph if owner is not None else None
        return None

    def stack(self, seq: StaticSequence, scope: Scope, anchor: ir.Node | None) -> ir.Value:
        """A static list of elements of one shape as one tensor ``[n, *E]``: its elements
        unsqueezed and concatenated (built once per graph)."""
        key = (id(scope.graph), seq.elements)
        if key in self.stacks:
            return self.stacks[key]
        emit = self.emitter(scope, anchor)
        made: dict[ir.Value, ir.Value] = {}  # an element listed twice is unsqueezed once
        for e in seq.elements:
            if e not in made:
                made[e] = emit.unsqueeze(self.current(e), 0)
        rows = [made[e] for e in seq.elements]
        value = rows[0] if len(rows) == 1 else emit.concat(rows, 0)
        self.stacks[key] = value
        return value

    def split_written(self, st: StackedSequence, output: bool) -> bool:
        """Whether :meth:`materialize_stacked` writes ``st`` back as one ``SplitToSequence``
        (else as its rows)."""
        return not (
            isinstance(st.length, int)
            and st.length <= self.max_split
            and not (st.checked and (output or not st.length))
        )

    def write_back(
        self,
        value: ir.Value,
        st: StackedSequence,
        scope: Scope,
        anchor: ir.Node | None,
        like: ir.Value,
        output: bool = False,
    ) -> ir.Value | None:
        """``value``, held as ``st``, written back as a sequence (:meth:`materialize_stacked`);
        None where that would take a ``SplitToSequence`` of a type ONNX Runtime has no kernel
        for and ``value`` itself is still the list the model computes (its sequence ops, left
        in place, compute it): then ``value`` is read as it is."""
        if (
            self.split_written(st, output)
            and st.dtype not in ORT_SPLIT_TO_SEQUENCE_TYPES
            and self.intact(value)
        ):
            return None
        return self.materialize_stacked(st, scope, anchor, like, output)

    def intact(self, value: ir.Value) -> bool:
        """Whether the sequence ops that make ``value`` are all still in the graph: no list on
        the way comes from a control-flow node a rebuilt one replaced."""
        seen: set[ir.Value] = set()
        work = [value]
        while work:
            current = work.pop()
            if current in seen:
                continue
            seen.add(current)
            node = current.producer()
            if node is None:
                if not current.is_graph_input() and current.const_value is None:
                    return False  # (a body input a rewrite took out)
                continue
            if node.graph is None or node in self.retired:
                return False
            work.extend(v for v in node.inputs if v is not None and v in self.facts.values)
        return True

    def materialize_stacked(
        self,
        st: StackedSequence,
        scope: Scope,
        anchor: ir.Node | None,
        like: ir.Value,
        output: bool = False,
    ) -> ir.Value:
        """A list held as ``[n, *E]`` written back as a sequence: ``SplitToSequence`` of the
        tensor on axis 0 into squeezed rows; of a known ``n``, its rows as a static list (what
        a second run would make of that split), but for a graph ``output`` whose tensor holds
        a run-time check (an If returning it must stay one tensor, whose length reads the
        rows) and for no rows at all (nothing would hold the check)."""
        if not self.split_written(st, output):
            return self.materialize(self.unstacked(st, scope, anchor), scope, anchor, like)
        emit = self.emitter(scope, anchor)
        value = emit.op("SplitToSequence", [st.tensor], axis=0, keepdims=0)
        value.type = like.type if isinstance(like.type, ir.SequenceType) else None
        if value.type is None and st.dtype is not None:
            value.type = ir.SequenceType(ir.TensorType(st.dtype))
        self.facts.values[value] = st
        producer = value.producer()
        if producer is not None:
            self.facts.paths[producer] = scope.path
            self.canonical.add(producer)
            if st.dtype not in ORT_SPLIT_TO_SEQUENCE_TYPES:
                self.unloadable.append(producer)
        return value

    def unstacked(
        self, st: StackedSequence, scope: Scope, anchor: ir.Node | None
    ) -> StaticSequence:
        """A list held as ``[n, *E]`` of a known ``n`` as a static list: its rows, split and
        squeezed."""
        assert isinstance(st.length, int)
        emit = self.emitter(scope, anchor)
        if st.length == 0:
            return StaticSequence((), st.dtype)
        rows = emit.split(st.tensor, 0, [1] * st.length) if st.length > 1 else [st.tensor]
        return StaticSequence(tuple(emit.squeeze(row, 0) for row in rows), st.dtype)

    def _as_sequence(
        self, value: ir.Value, scope: Scope, anchor: ir.Node | None, like: ir.Value
    ) -> ir.Value | None:
        """``value`` written back as a sequence when its abstract value is not one already
        (None when it needs nothing)."""
        known = self.facts.values.get(value)
        if isinstance(known, StaticSequence) and not known.elements and known.dtype is None:
            # an empty list of no known element type (a function's, whose inputs are untyped):
            # no SequenceEmpty says it faithfully, so what made it stays
            return None
        if isinstance(known, StaticSequence) and not self.is_canonical(value, known):
            return self.materialize(known, scope, anchor, like)
        if isinstance(known, StackedSequence) and not self.is_canonical(value, known):
            return self.write_back(value, known, scope, anchor, like)
        return None

    def fallback(self, node: ir.Node, scope: Scope) -> None:
        """An op that needs its sequence inputs as sequences: give it them in canonical form."""
        values = self.facts.values
        self.canonical_inputs(node, scope)
        produced: Reason | None = None
        for out in node.outputs:
            if out not in values and isinstance(out.type, ir.SequenceType | ir.OptionalType):
                if produced is None:
                    kind = "loop" if node.op_type == "Loop" else "unknown-sequence"
                    produced = Reason(kind, self.facts.produced_by(node, ""))
                values[out] = Unknown(produced)
        if node.op_type in SEQUENCE_OPS and node not in self.facts.reasons:
            self.facts.reasons[node] = Reason(
                "unknown-sequence", f"{node.op_type} is not statically resolvable here"
            )

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

    def canonical_inputs(self, node: ir.Node, scope: Scope, speculative: bool = False) -> None:
        """Give ``node`` its sequence inputs as sequences, in canonical form: what a node left
        as it is needs, and a control-flow node rebuilt in place of another (a list it passes
        on as it is must not keep what the rewrite replaced alive). ``speculative``: ``node``
        may well go (an Optional whose reads are rewritten): what is written counts only if
        it stays."""
        values = self.facts.values
        for index, value in enumerate(() if self.dry else node.inputs):
            if value is None or value not in values:
                continue  # (most inputs: no abstract sequence value, nothing to write)
            stacked = self.facts.stacked(value)
            written = self._as_sequence(value, scope, node, value)
            if written is None:
                continue
            node.replace_input_with(index, written)
            if subgraphs(node):  # a body's declared inputs may be guesses the list belies
                self.unverified = True
            if stacked is None and not speculative:
                detail = f"input {index} as SequenceConstruct"
                self.applied("canonical-sequence-input", node, detail)
            elif stacked is None:
                maker = written.producer()
                assert maker is not None
                detail = f"input {index} as SequenceConstruct"
                path = self.facts.paths.get(node, "")
                rewrite = Rewrite(
                    "canonical-sequence-input", node.name or "", node.op_type, path, detail
                )
                self.written_back(maker, rewrite)
            else:
                maker = written.producer()
                assert maker is not None
                detail = f"input {index} as SplitToSequence of [n, *E]"
                path = self.facts.paths.get(node, "")
                rewrite = Rewrite(
                    "stacked-as-sequence", node.name or "", node.op_type, path, detail
                )
                self.written_back(maker, rewrite)

    def canonicalize_outputs(self, scope: Scope) -> None:
        """A graph output that is a static sequence: one canonical SequenceConstruct."""
        if self.dry:
            return
        for index, out in enumerate(list(scope.graph.outputs)):
            stacked = self.facts.stacked(out)
            if stacked is not None and not self.is_canonical(out, stacked):
                written = self.write_back(out, stacked, scope, None, out, output=True)
                if written is None:
                    continue  # (the list the model computes stays the output)
                self._take_output_slot(scope, index, out, written)
                maker = written.producer()
                assert maker is not None
                detail = "SplitToSequence of [n, *E]"
                rewrite = Rewrite(
                    "stacked-as-sequence", out.name or "", "output", scope.path, detail
                )
                self.written_back(maker, rewrite)
                continue
            seq = self.facts.static(out)
            if seq is None or self.is_canonical(out, seq) or (not seq.elements and not seq.dtype):
                continue  # (an empty list of unknown type: see _as_sequence)
            cached = self.materialized.get((id(scope.graph), seq.elements, seq.dtype))
            if cached is not None and not cached.is_graph_output():
                value = cached  # already built for a consumer: the output takes it over
            else:
                value = self.materialize(seq, scope, None, out)
            self._take_output_slot(scope, index, out, value)
            self.applied_output("canonical-sequence-output", out, scope, f"{len(seq)} elements")

    # -- speculative rewrites (walk/trial.py) ---------------------------------------------

    def checkpoint(self) -> Checkpoint:
        return trial.checkpoint(self.created, self.journal, self.rewrote)

    def left_since(self, mark: Checkpoint, roots: Iterable[ir.Value]) -> list[ir.Node]:
        return trial.left_since(
            self.created,
            mark,
            roots,
            lambda node: self.holds_failure(node, settled=False),
            lambda node: node in self.facts.reasons or node in self.canonical,
        )

    def rollback(self, mark: Checkpoint) -> None:
        trial.rollback(self.created, self.journal, mark)
        self.rewrote = mark.rewrote


def _unregister(entry: tuple[ir.Graph, str]) -> None:
    """Undo :meth:`Edits.register_initializer`."""
    graph, name = entry
    graph.initializers.pop(name, None)


def _unit_split(node: ir.Node) -> bool:
    """Whether ``node`` is a SplitToSequence with no split or a constant scalar split of 1."""
    if node.op_type != "SplitToSequence" or not is_default(node):
        return False
    split = node.inputs[1] if len(node.inputs) > 1 else None
    if split is None:
        return True
    tensor = split.const_value
    producer = split.producer()
    if tensor is None and producer is not None and producer.op_type == "Constant":
        attr = producer.attributes.get("value")
        tensor = attr.as_tensor() if attr is not None and not attr.is_ref() else None
    if tensor is None:
        return False
    array = tensor.numpy()
    return array.ndim == 0 and int(array) == 1

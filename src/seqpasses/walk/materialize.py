"""Lists written back as sequences: :class:`MaterializeMixin`, the part of
:class:`~seqpasses.walk.edits.Edits` that writes a static list as one canonical
``SequenceConstruct`` (``SequenceEmpty``), a list held as ``[n, *E]`` as a ``SplitToSequence``
(or its rows), and gives a node left as it is, or a graph output, its sequences in that form.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import onnx_ir as ir

from seqpasses.core.emit import Emitter, EmitterCaches
from seqpasses.core.graph import is_default, node_name, subgraphs
from seqpasses.core.ops import ORT_SPLIT_TO_SEQUENCE_TYPES, SEQUENCE_OPS
from seqpasses.core.sequence import StackedSequence, StaticSequence, Unknown
from seqpasses.report import ORIGIN, Rewrite
from seqpasses.walk.facts import Facts, Reason
from seqpasses.walk.recorder import Recorder
from seqpasses.walk.scope import Scope
from seqpasses.walk.trial import CreatedNodes

__all__ = ["MaterializeMixin", "split_written", "unstacked"]


class MaterializeMixin:
    """Canonical sequences; mixed into :class:`~seqpasses.walk.edits.Edits`, which sets these
    attributes and provides these methods (see its ``__init__``)."""

    facts: Facts
    dry: bool
    max_split: int
    recorder: Recorder
    created: CreatedNodes
    forwarded: dict[ir.Value, ir.Value]
    retired: set[ir.Node]
    canonical: set[ir.Node]
    unloadable: list[ir.Node]
    materialized: dict[tuple[int, tuple[ir.Value, ...], Any], ir.Value]
    # what the Emitter's Owner holds (core/emit.py)
    caches: EmitterCaches
    next_name: Callable[[str, str], str]
    place: Callable[[ir.Graph | ir.Function, ir.Node | None, ir.Node], None]
    check: Callable[[ir.Value], ir.Value]
    diverges: Callable[[ir.Value, str], None]
    current: Callable[[ir.Value], ir.Value]
    emitter: Callable[[Scope, ir.Node | None], Emitter]
    take_output_slot: Callable[[Scope, int, ir.Value, ir.Value], None]

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

    def split_written(self, st: StackedSequence, output: bool) -> bool:
        """:func:`split_written` under this walk's ``max_split``."""
        return split_written(st, self.max_split, output)

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
        """:func:`unstacked`, built before ``anchor``."""
        return unstacked(self.emitter(scope, anchor), st)

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
            declared = out.type
            if (  # (a tensor first: a failed isinstance of an onnx_ir class costs 1 µs)
                declared is not None
                and type(declared) is not ir.TensorType
                and out not in values
                and isinstance(declared, ir.SequenceType | ir.OptionalType)
            ):
                if produced is None:
                    kind = "loop" if node.op_type == "Loop" else "unknown-sequence"
                    produced = Reason(kind, self.facts.produced_by(node, ""))
                values[out] = Unknown(produced)
        if node.op_type in SEQUENCE_OPS and node not in self.facts.reasons:
            self.facts.reasons[node] = Reason(
                "unknown-sequence", f"{node.op_type} is not statically resolvable here"
            )

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
                self.recorder.unverified = True
            if stacked is None:
                rule, detail = "canonical-sequence-input", f"input {index} as SequenceConstruct"
            else:
                rule, detail = "stacked-as-sequence", f"input {index} as SplitToSequence of [n, *E]"
            if stacked is None and not speculative:
                self.recorder.applied(rule, node, detail)
            else:  # counted only if the node stays (written_back)
                maker = written.producer()
                assert maker is not None
                path = self.facts.paths.get(node, "")
                origin = node.metadata_props.get(ORIGIN, "")
                rewrite = Rewrite(rule, node_name(node), node.op_type, path, detail, origin=origin)
                self.recorder.written_back(maker, rewrite)

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
                self.take_output_slot(scope, index, out, written)
                maker = written.producer()
                assert maker is not None
                detail = "SplitToSequence of [n, *E]"
                rewrite = Rewrite(
                    "stacked-as-sequence", out.name or "", "output", scope.path, detail
                )
                self.recorder.written_back(maker, rewrite)
                continue
            seq = self.facts.static(out)
            if seq is None or self.is_canonical(out, seq) or (not seq.elements and not seq.dtype):
                continue  # (an empty list of unknown type: see _as_sequence)
            cached = self.materialized.get((id(scope.graph), seq.elements, seq.dtype))
            if cached is not None and not cached.is_graph_output():
                value = cached  # already built for a consumer: the output takes it over
            else:
                value = self.materialize(seq, scope, None, out)
            self.take_output_slot(scope, index, out, value)
            self.recorder.applied_output(
                "canonical-sequence-output", out, scope, f"{len(seq)} elements"
            )


def unstacked(emit: Emitter, st: StackedSequence) -> StaticSequence:
    """A list held as ``[n, *E]`` of a known ``n`` as a static list: its rows, split and
    squeezed."""
    assert isinstance(st.length, int)
    if st.length == 0:
        return StaticSequence((), st.dtype)
    rows = emit.split(st.tensor, 0, [1] * st.length) if st.length > 1 else [st.tensor]
    return StaticSequence(tuple(emit.squeeze(row, 0) for row in rows), st.dtype)


def split_written(st: StackedSequence, max_split: int, output: bool) -> bool:
    """Whether a list held as ``st`` is written back as one ``SplitToSequence`` (else as its
    rows, when it has at most ``max_split`` of them; ``output``: for a graph output)."""
    return not (
        isinstance(st.length, int)
        and st.length <= max_split
        and not (st.checked and (output or not st.length))
    )

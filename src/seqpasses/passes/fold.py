"""Fold and lower sequence ops whose sequence is known before run time.

One walk over each graph in order pushes the abstract sequence value
(:class:`~seqpasses.sequence.StaticSequence` or :class:`~seqpasses.sequence.Unknown`)
forward with one transfer function per op, and rewrites the ops that read a static
sequence as soon as it is known:

1. ``SequenceAt(s, const)`` -> the element itself.
2. ``SequenceLength(s)`` -> an int64 scalar ``Constant``.
3. ``ConcatFromSequence(s)`` -> ``Concat`` (``new_axis=0``) or ``Unsqueeze`` + ``Concat``
   (``new_axis=1``); one element -> the element or its ``Unsqueeze``.
4. ``SplitToSequence(x, split?)`` -> ``Split`` (+ ``Squeeze`` where the op squeezes), whose
   outputs become the static sequence.
5. A static sequence that must stay a sequence (a graph output, or the input of an op that
   needs one) is written in canonical form: one ``SequenceConstruct`` of its elements, or
   ``SequenceEmpty`` with its dtype.

Nothing is rewritten that cannot be proven: an unknown position, an out-of-range position, an
unknown rank or dim the rewrite needs. Such a node stays and its reason is recorded. Dead
producers are then removed with onnx_ir's :class:`RemoveUnusedNodesPass`.

Subgraphs (``If``/``Loop``/``Scan`` bodies) are walked inside the walk of their parent, so a
static sequence from the enclosing scope is static inside a body; model-local functions are
walked with their own opset.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnx_ir as ir
import onnx_ir.passes.common as common_passes

from seqpasses.consteval import ConstantEvaluator
from seqpasses.dims import contradicts, fill_shape
from seqpasses.emit import Emitter
from seqpasses.report import (
    OPTIONAL_OPS,
    SEQUENCE_OPS,
    Report,
    Rewrite,
    all_nodes,
    count_sequence_ops,
)
from seqpasses.sequence import PositionError, StaticSequence, Unknown
from seqpasses.shapes import ShapeOracle

__all__ = [
    "REWRITES",
    "Analysis",
    "FoldOptions",
    "FoldSequencesPass",
    "analyze",
    "label",
    "select_rewrites",
]

_DEFAULT_DOMAINS = ("", "ai.onnx")
LEFT_OPS = SEQUENCE_OPS | OPTIONAL_OPS  # what the report lists when it stays


@dataclass(frozen=True)
class FoldOptions:
    """Choices a caller makes explicitly.

    ``freeze_inputs``: treat initializers that are also graph inputs as constants (a caller
    could override them at run time, so by default they are not).
    ``strict_spec``: follow the ONNX spec for ``SplitToSequence`` with a scalar split of 1 and
    ``keepdims=0`` (elements keep the axis) instead of ONNX Runtime and PyTorch (squeezed).
    """

    freeze_inputs: bool = False
    strict_spec: bool = False
    disabled: frozenset[str] = frozenset()  # names from REWRITES that are switched off
    max_unroll: int = 64  # the largest constant trip count a Loop is unrolled for


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
    """Where the walk's records stood before a speculative rewrite (see :meth:`Folder.rollback`)."""

    created: int
    rewrites: int
    notes: int
    diverged: int
    initializers: int
    rewrote: bool


@dataclass
class Scope:
    graph: ir.Graph | ir.Function
    path: str
    opset: int
    shapes: ShapeOracle
    output_slots: dict[ir.Value, list[int]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        for index, value in enumerate(self.graph.outputs):
            self.output_slots.setdefault(value, []).append(index)


class Folder:
    """The walk. With ``analyze_only`` it computes the same facts but changes nothing."""

    def __init__(self, options: FoldOptions, report: Report, analyze_only: bool = False) -> None:
        self.analyze_only = analyze_only
        self.known_ints: dict[ir.Value, int] = {}
        self.optionals: dict[ir.Value, ir.Value | None] = {}
        self.input_dims: set[str] = set()  # symbolic dims named by the main graph's inputs
        self.opsets: dict[int, int] = {}  # id(graph) -> the ONNX opset its nodes run under
        self.evaluator = ConstantEvaluator(self._opset_of, self._readable)
        self.options = options
        self.report = report
        self.state: dict[ir.Value, StaticSequence | Unknown] = {}
        self.reasons: dict[ir.Node, str] = {}
        self.paths: dict[ir.Node, str] = {}
        self.owners: dict[int, tuple[ir.Node, str]] = {}  # id(subgraph) -> (node, attribute)
        self.functions: dict[int, str] = {}  # id(function body) -> the function's name
        self.loop_reasons: dict[ir.Node, list[str]] = {}  # why a Loop's sequence stays
        self.proven: set[ir.Value] = set()  # shapes seqpasses proved (scan outputs it made)
        # whether a Loop will be unrolled (set by passes/loops.py)
        self.unrolls: Callable[[Folder, ir.Node], bool] | None = UNROLLS[0] if UNROLLS else None
        self.created = CreatedNodes()
        self.canonical: set[ir.Node] = set()  # SequenceConstruct/Empty nodes materialize() made
        self.registered: list[tuple[ir.Graph, str]] = []  # initializers moved in by inlining
        self.no_unroll: set[ir.Node] = set()  # loops whose unrolling was tried and undone
        self.origin: dict[ir.Node, ir.Node] = {}  # a copy made by inlining -> what it copies
        self.constants: dict[tuple[int, tuple[int, ...]], ir.Value] = {}
        self.squeezed: dict[ir.Value, tuple[ir.Value, int]] = {}
        self.split_axis: dict[ir.Node, int] = {}
        self.materialized: dict[tuple[int, tuple[ir.Value, ...], Any], ir.Value] = {}
        self.forwarded: dict[ir.Value, ir.Value] = {}  # replaced value -> its replacement
        self.rewrote = False
        self.counter = 0
        self.main_opset = 0
        # values whose shape departs from what the spec (and so an exporter's declared shapes
        # downstream) says: SplitToSequence chunks squeezed as ONNX Runtime and PyTorch do
        self.diverged: list[ir.Value] = []

    # -- walking ---------------------------------------------------------------------------

    def run_model(self, model: ir.Model, opset: int) -> None:
        """Walk the main graph, then each model-local function under its own opset."""
        self.main_opset = opset
        self.run_graph(Scope(model.graph, "main", opset, ShapeOracle(opset, self.constant)))
        for function in model.functions.values():
            own = function.opset_imports.get("", function.opset_imports.get("ai.onnx", opset))
            oracle = ShapeOracle(own, self.constant)
            self.run_graph(Scope(function, f"function {function.name}", own, oracle))
        self._repair_declared_shapes()

    def _repair_declared_shapes(self) -> None:
        """Re-infer what depends on a diverged value; a declared shape it contradicts (written
        by an exporter that followed the spec) gets the computed one, so the checker passes."""
        work = list(self.diverged)  # a node is inferred again each time an input changes
        while work and not self.analyze_only:
            value = work.pop()
            for use in value.uses():
                node = use.node
                if node.domain not in _DEFAULT_DOMAINS:
                    continue
                oracle = ShapeOracle(self._opset_of(node), self.constant)
                for v in node.inputs:
                    if v is not None and v.type is None:
                        oracle.shape(v)  # untyped constants and the like
                inputs = [(v.type, v.shape) if v is not None else None for v in node.inputs]
                for out, (type_, shape) in zip(
                    node.outputs, oracle.infer(node, inputs), strict=True
                ):
                    if shape is None or (
                        out.shape is not None and not contradicts(out.shape, shape)
                    ):
                        continue
                    if out.shape is not None:
                        self.report.notes.append(
                            f"'{out.name}': declared shape {_shape_text(out.shape)} follows the "
                            f"spec's SplitToSequence; computed {_shape_text(shape)} is declared"
                        )
                    out.type = out.type or type_
                    out.shape = shape
                    work.append(out)
            work.extend(self._repair_owner_output(value))

    def _repair_owner_output(self, value: ir.Value) -> list[ir.Value]:
        """A repaired output of a Loop body or If branch: the Loop's scan output is
        ``[K, *shape]``; any other output of the node that the new shape contradicts loses
        its declared shape (it cannot be inferred without running the loop)."""
        owner = self.owners.get(id(value.graph))
        if owner is None or not value.is_graph_output() or value.shape is None:
            return []
        node, _ = owner
        graph = value.graph
        assert graph is not None
        changed: list[ir.Value] = []
        for k, output in enumerate(graph.outputs):
            if output is not value:
                continue
            carried = len(node.inputs) - 2
            shape: ir.Shape | None
            if node.op_type == "Loop" and k >= 1 + carried:
                out = node.outputs[k - 1]
                first = out.shape[0] if out.shape is not None and len(out.shape) else None
                shape = ir.Shape(
                    [first if first is not None else ir.SymbolicDim(None), *value.shape]
                )
            elif node.op_type == "If":
                out = node.outputs[k]
                branches = [
                    a.as_graph()
                    for a in node.attributes.values()
                    if a.type == ir.AttributeType.GRAPH
                ]
                shape = _merge_shapes([b.outputs[k].shape for b in branches if len(b.outputs) > k])
            elif node.op_type == "Loop" and k >= 1:
                # a carried value: the initial one after zero iterations, the body's after more
                out = node.outputs[k - 1]
                initial = node.inputs[k + 1] if k + 1 < len(node.inputs) else None
                shape = _merge_shapes([initial.shape if initial is not None else None, value.shape])
            else:
                continue
            if out.shape is None or not contradicts(
                out.shape, value.shape if shape is None else shape
            ):
                continue
            if shape is None and out.is_graph_output():
                # a graph output must declare a shape, and none fits every case: left as is
                self.report.notes.append(
                    f"'{out.name}': declared shape {_shape_text(out.shape)} may not hold after "
                    "the rewrite (its rank differs between iterations or branches)"
                )
                continue
            self.report.notes.append(
                f"'{out.name}': declared shape {_shape_text(out.shape)} follows the spec's "
                f"SplitToSequence; {'computed ' + _shape_text(shape) if shape is not None else 'no shape'} is declared"
            )
            out.shape = shape
            changed.append(out)
        return changed

    def run_graph(self, scope: Scope) -> None:
        self.opsets[id(scope.graph)] = scope.opset
        if isinstance(scope.graph, ir.Function):
            self.opsets[id(scope.graph.graph)] = scope.opset
            self.functions[id(scope.graph.graph)] = scope.graph.name
        for node in list(scope.graph):
            self.visit(node, scope)
        self._canonicalize_outputs(scope)

    def visit(self, node: ir.Node, scope: Scope) -> None:
        """Walk a node's subgraphs, then apply its transfer function (or the fallback)."""
        for attr in node.attributes.values():
            if attr.is_ref():
                continue
            if attr.type == ir.AttributeType.GRAPH:
                self._run_subgraph(attr.as_graph(), scope, node, attr.name)
            elif attr.type == ir.AttributeType.GRAPHS:
                for k, sub in enumerate(attr.as_graphs()):
                    self._run_subgraph(sub, scope, node, f"{attr.name}[{k}]")
        if node.domain not in _DEFAULT_DOMAINS:
            return
        self.paths[node] = scope.path
        handler = TRANSFER.get(node.op_type)
        if (
            handler is not None
            and GROUP_OF_OP.get(node.op_type, "sequence-ops") in self.options.disabled
        ):
            handler = None
        refs = [a for a in node.attributes.values() if a.is_ref()]
        if handler is not None and refs:
            self.leave(
                node,
                f"attribute '{refs[0].name}' is the function's attribute "
                f"'{refs[0].ref_attr_name}', known only at each call",
            )
            handler = None
        done = handler(self, node, scope) if handler is not None else False
        if not done:
            self._fallback(node, scope)

    def rewalk(self, graph: ir.Graph, scope: Scope, node: ir.Node, attr: str) -> None:
        """Walk a subgraph of ``node`` again (a decision it was walked under has changed)."""
        self._run_subgraph(graph, scope, node, attr)

    def _run_subgraph(self, graph: ir.Graph, scope: Scope, node: ir.Node, attr: str) -> None:
        name = node.name or node.op_type
        self.owners[id(graph)] = (node, attr)
        self.run_graph(Scope(graph, f"{scope.path}/{name}.{attr}", scope.opset, scope.shapes))

    # -- helpers ---------------------------------------------------------------------------

    def emitter(self, scope: Scope, anchor: ir.Node | None) -> Emitter:
        return Emitter(scope.graph, anchor, scope.opset, self)

    def next_name(self, base: str, op_type: str) -> str:
        self.counter += 1
        return f"{base}/{op_type}_{self.counter}"

    def static(self, value: ir.Value | None) -> StaticSequence | None:
        if value is None:
            return None
        known = self.state.get(value)
        return known if isinstance(known, StaticSequence) else None

    def why_unknown(self, value: ir.Value | None) -> str:
        if value is None:
            return "input is missing"
        known = self.state.get(value)
        if isinstance(known, Unknown):
            return known.reason
        if value.is_graph_input():
            return f"sequence '{value.name}' is {self.input_role(value)}"
        producer = value.producer()
        if producer is None:
            return f"sequence '{value.name}' comes from an enclosing scope that is not static"
        return self.produced_by(producer, ", not statically known")

    def input_role(self, value: ir.Value) -> str:
        """What a graph input is, in words: the model's input or a body's (loop counter, ...)."""
        owner = self.owners.get(id(value.graph))
        if owner is None:
            function = self.functions.get(id(value.graph))
            return f"an input of function '{function}'" if function else "a graph input"
        node, attr = owner
        graph = value.graph
        index = next((k for k, v in enumerate(graph.inputs) if v is value), -1) if graph else -1
        if node.op_type == "Loop" and attr == "body":
            if index == 0:
                return f"the iteration number of {label(node)}"
            if index == 1:
                return f"the loop condition of {label(node)}"
            return f"carried by {label(node)} (it changes every iteration)"
        if node.op_type == "Scan" and attr == "body":
            return f"a state or scanned slice of {label(node)}"
        if node.op_type == "SequenceMap" and attr == "body":
            return f"one element at a time of {label(node)}'s input"
        return f"an input of {label(node)}'s {attr}"

    def produced_by(self, node: ir.Node, otherwise: str) -> str:
        """Why a sequence ``node`` makes is unknown: its loop's reasons, when it is a Loop."""
        why = "; ".join(self.loop_reasons.get(node, ()))
        return f"sequence comes from {label(node)}" + (f" ({why})" if why else otherwise)

    def const_int(self, value: ir.Value) -> tuple[int | None, str]:
        """The integer a position input holds, or ``None`` and why not."""
        if value in self.known_ints:
            return self.known_ints[value], ""
        if value.is_graph_input() and not self.options.freeze_inputs:
            if value.const_value is not None:
                return None, (
                    f"position '{value.name}' is an initializer that is also a graph input "
                    "(the caller may override it; --freeze-inputs treats it as constant)"
                )
            return (
                None,
                f"position '{value.name}' is {self.input_role(value)}, known only at run time",
            )
        array = self.constant(value)
        if array is None:
            return None, f"position '{value.name}' is known only at run time"
        if array.dtype not in (np.int32, np.int64):
            return None, f"position '{value.name}' has type {array.dtype}, not int32/int64"
        if array.size != 1:
            return None, f"position '{value.name}' has {array.size} elements, not one"
        return int(array.reshape(-1)[0]), ""

    def constant(self, value: ir.Value) -> np.ndarray | None:
        """The array ``value`` holds before run time (a constant, or small shape arithmetic)."""
        return self.evaluator.value(value)

    def _readable(self, value: ir.Value) -> bool:
        return self.options.freeze_inputs or not value.is_graph_input()

    def _opset_of(self, node: ir.Node) -> int:
        return self.opsets.get(id(node.graph), self.main_opset)

    def const_array(self, value: ir.Value) -> np.ndarray | None:
        if value.is_graph_input() and not self.options.freeze_inputs:
            return None
        array = self.constant(value)
        if array is None or array.dtype not in (np.int32, np.int64):
            return None
        return array

    def leave(self, node: ir.Node, reason: str) -> bool:
        self.reasons[node] = reason
        # what reads this node's sequence is told where the root cause is
        passed = (
            reason if reason.startswith("sequence ") else f"sequence from {label(node)}: {reason}"
        )
        for out in node.outputs:
            if out.type is None or isinstance(out.type, ir.SequenceType) or out in self.state:
                self.state[out] = Unknown(passed)
        return False

    def applied(self, rule: str, node: ir.Node, detail: str = "") -> bool:
        self.rewrote = True
        self.report.rewrites.append(
            Rewrite(rule, node.name or "", node.op_type, self.paths.get(node, ""), detail)
        )
        return True

    def replace(self, old: ir.Value, new: ir.Value, scope: Scope) -> None:
        """Point every use of ``old`` at ``new``; graph outputs keep their name and order."""
        if self.analyze_only:
            if old.type is None:
                old.type = new.type
            old.shape = fill_shape(old.shape, new.shape, numbers_win=True)
            if new.const_value is not None and new.const_value.size == 1:
                self.known_ints[old] = int(new.const_value.numpy().reshape(-1)[0])
            return
        for index in list(scope.output_slots.get(old, ())) if old.is_graph_output() else ():
            fresh = (
                new.producer() in self.created
                and new.graph is scope.graph
                and not new.is_graph_output()
                and not new.is_graph_input()
            )
            seq = self.static(new)
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
            self.report.notes.append(
                f"output '{name}': declared shape {_shape_text(old.shape)} contradicts the "
                f"computed {_shape_text(new.shape)}; the computed one is declared"
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

    def is_canonical(self, value: ir.Value, seq: StaticSequence) -> bool:
        producer = value.producer()
        if producer is None or producer.domain not in _DEFAULT_DOMAINS:
            return False
        if producer.op_type == "SequenceConstruct":
            return len(seq) > 0 and tuple(producer.inputs) == seq.elements
        return producer.op_type == "SequenceEmpty" and len(seq) == 0

    def materialize(
        self, seq: StaticSequence, scope: Scope, anchor: ir.Node | None, like: ir.Value
    ) -> ir.Value:
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
        self.state[value] = seq
        producer = value.producer()
        if producer is not None:
            self.paths[producer] = scope.path
            self.canonical.add(producer)
        if anchor is not None:
            self.materialized[key] = value
        return value

    # -- speculative rewrites -------------------------------------------------------------

    def source(self, node: ir.Node) -> str:
        """Where a node comes from, for the report (see :class:`~seqpasses.report.Rewrite`)."""
        original = self.origin.get(node)
        if original is not None:
            while original in self.origin:
                original = self.origin[original]
            return f"copy of {original.name or original.op_type}"
        return "added" if node in self.created else ""

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
            for inner in _with_subgraph_nodes(node)
        ]
        members = set(window)
        owned: dict[ir.Node, list[ir.Graph]] = {}
        for node in window:
            for attr in node.attributes.values():
                if attr.is_ref():
                    continue
                if attr.type == ir.AttributeType.GRAPH:
                    owned.setdefault(node, []).append(attr.as_graph())
                elif attr.type == ir.AttributeType.GRAPHS:
                    owned.setdefault(node, []).extend(attr.as_graphs())
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
            for graph in owned.get(node, ()):
                sources.extend(graph.outputs)
            for value in sources:
                producer = value.producer() if value is not None else None
                if producer in members and producer not in live:
                    stack.append(producer)
        return [
            node
            for node in window
            if node in live
            and node.op_type in SEQUENCE_OPS
            and node.domain in _DEFAULT_DOMAINS
            and (node in self.reasons or node in self.canonical)
        ]

    def rollback(self, mark: Checkpoint) -> None:
        """Remove every node created since ``mark`` and forget what was recorded about it.

        Only valid while nothing that existed before ``mark`` was changed (the speculative
        rewrites only add nodes before their anchor and rewrite those new nodes)."""
        dropped = self.created.truncate(mark.created)
        gone = set(dropped)
        for node in dropped:
            drop_subgraphs(node)
            for index in range(len(node.inputs)):
                node.replace_input_with(index, None)
        by_graph: dict[ir.Graph | ir.Function, list[ir.Node]] = {}
        for node in dropped:
            if node.graph is not None:
                by_graph.setdefault(node.graph, []).append(node)
        for graph, nodes in by_graph.items():
            graph.remove(nodes, safe=False)
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

    def _fallback(self, node: ir.Node, scope: Scope) -> None:
        """An op that needs its sequence inputs as sequences: give it them in canonical form."""
        for index, value in enumerate(() if self.analyze_only else node.inputs):
            seq = self.static(value)
            if value is None or seq is None or self.is_canonical(value, seq):
                continue
            node.replace_input_with(index, self.materialize(seq, scope, node, value))
            self.applied("canonical-sequence-input", node, f"input {index} as SequenceConstruct")
        produced = self.produced_by(node, "")
        for out in node.outputs:
            if out not in self.state and isinstance(out.type, ir.SequenceType | ir.OptionalType):
                self.state[out] = Unknown(produced)
        if node.op_type in SEQUENCE_OPS and node not in self.reasons:
            self.reasons[node] = f"{node.op_type} is not statically resolvable here"

    def _canonicalize_outputs(self, scope: Scope) -> None:
        if self.analyze_only:
            return
        for index, out in enumerate(list(scope.graph.outputs)):
            seq = self.static(out)
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


def drop_subgraphs(node: ir.Node) -> None:
    """Detach the subgraphs of a node whose work was inlined: their nodes stop counting as
    uses of outer values, so dead-code removal can drop what only they read."""
    for name in list(node.attributes):
        attr = node.attributes[name]
        if attr.is_ref() or attr.type not in (ir.AttributeType.GRAPH, ir.AttributeType.GRAPHS):
            continue
        graphs = [attr.as_graph()] if attr.type == ir.AttributeType.GRAPH else attr.as_graphs()
        for graph in graphs:
            for inner in ir.traversal.RecursiveGraphIterator(graph):
                for index in range(len(inner.inputs)):
                    inner.replace_input_with(index, None)
        node.attributes.pop(name)


def _with_subgraph_nodes(node: ir.Node) -> Iterable[ir.Node]:
    yield node
    for attr in node.attributes.values():
        if attr.is_ref() or attr.type not in (ir.AttributeType.GRAPH, ir.AttributeType.GRAPHS):
            continue
        graphs = [attr.as_graph()] if attr.type == ir.AttributeType.GRAPH else attr.as_graphs()
        for graph in graphs:
            yield from ir.traversal.RecursiveGraphIterator(graph)


def remove_dead_nodes(model: ir.Model) -> None:
    """onnx_ir's dead-code removal, until what only a removed node's subgraphs read is gone too
    (their nodes still count as uses of outer values until the subgraphs are detached)."""
    while True:
        holders = [
            node
            for node in all_nodes(model)
            if any(
                not a.is_ref() and a.type in (ir.AttributeType.GRAPH, ir.AttributeType.GRAPHS)
                for a in node.attributes.values()
            )
        ]
        common_passes.RemoveUnusedNodesPass()(model)
        removed = [node for node in holders if node.graph is None]
        if not removed:
            return
        for node in removed:
            drop_subgraphs(node)


def _merge_shapes(shapes: list[ir.Shape | None]) -> ir.Shape | None:
    """The shape every one of ``shapes`` fits (unknown where they differ), or None when a rank
    is unknown or the ranks differ."""
    known = [s for s in shapes if s is not None]
    if not shapes or len(known) != len(shapes) or len({len(s) for s in known}) != 1:
        return None
    dims: list[int | ir.SymbolicDim] = []
    for column in zip(*[list(s) for s in known], strict=True):
        first = column[0]
        same = all(_same_dim(d, first) for d in column)
        dims.append(first if same else ir.SymbolicDim(None))
    return ir.Shape(dims)


def _same_dim(a: object, b: object) -> bool:
    if isinstance(a, int) or isinstance(b, int):
        return a == b
    name = getattr(a, "value", None)
    return name is not None and name == getattr(b, "value", None)


UNROLLS: list[Callable[[Folder, ir.Node], bool]] = []
"""Set by ``passes/loops.py``: whether the walk will unroll a given Loop."""


def label(node: ir.Node) -> str:
    """How reasons name a node: its op type, and its name when it has one."""
    return f"{node.op_type} '{node.name}'" if node.name else node.op_type


# -- transfer functions: one per op ----------------------------------------------------------

Handler = Callable[[Folder, ir.Node, Scope], bool]


def _sequence_empty(f: Folder, node: ir.Node, scope: Scope) -> bool:
    dtype = node.attributes.get_int("dtype", int(ir.DataType.FLOAT))
    f.state[node.outputs[0]] = StaticSequence((), ir.DataType(dtype))
    return True


def _sequence_construct(f: Folder, node: ir.Node, scope: Scope) -> bool:
    elements = tuple(v for v in node.inputs if v is not None)
    if len(elements) != len(node.inputs) or not elements:
        return f.leave(node, "SequenceConstruct with a missing input")
    f.state[node.outputs[0]] = StaticSequence(elements, elements[0].dtype)
    return True


def _position(f: Folder, node: ir.Node, index: int) -> tuple[int | None, str]:
    if len(node.inputs) <= index or node.inputs[index] is None:
        return None, ""
    value = node.inputs[index]
    assert value is not None
    return f.const_int(value)


def _sequence_insert(f: Folder, node: ir.Node, scope: Scope) -> bool:
    seq = f.static(node.inputs[0])
    if seq is None:
        return f.leave(node, f.why_unknown(node.inputs[0]))
    position, why = _position(f, node, 2)
    if why:
        return f.leave(node, why)
    tensor = node.inputs[1]
    if tensor is None:
        return f.leave(node, "SequenceInsert without a tensor")
    try:
        f.state[node.outputs[0]] = seq.insert(position, tensor)
    except PositionError as error:
        return f.leave(node, f"{error}: left to fail at run time as before")
    return True


def _sequence_erase(f: Folder, node: ir.Node, scope: Scope) -> bool:
    seq = f.static(node.inputs[0])
    if seq is None:
        return f.leave(node, f.why_unknown(node.inputs[0]))
    position, why = _position(f, node, 1)
    if why:
        return f.leave(node, why)
    try:
        f.state[node.outputs[0]] = seq.erase(position)
    except PositionError as error:
        return f.leave(node, f"{error}: left to fail at run time as before")
    return True


def _identity(f: Folder, node: ir.Node, scope: Scope) -> bool:
    seq = f.static(node.inputs[0])
    if seq is not None:
        f.state[node.outputs[0]] = seq
    return True


def _unit_split(
    f: Folder, value: ir.Value | None, scope: Scope
) -> tuple[ir.Value, int, bool, bool] | None:
    """``(data, axis, squeezed, follows_ort)`` when ``value`` is ``SplitToSequence(data)`` cut
    into chunks of one along ``axis`` (no split input, or a scalar split of 1: ``torch.unbind``),
    whatever the axis's length: element ``i`` is then ``data`` gathered at ``i`` on that axis.
    ``follows_ort``: squeezed only because ONNX Runtime squeezes a scalar split 1 with
    ``keepdims=0`` (the spec keeps the axis)."""
    while value is not None:
        producer = value.producer()
        if producer is None or producer.domain not in _DEFAULT_DOMAINS:
            return None
        if producer.op_type == "Identity":
            value = producer.inputs[0]
            continue
        if producer.op_type != "SplitToSequence" or producer.inputs[0] is None:
            return None
        data = producer.inputs[0]
        shape = scope.shapes.shape(data)
        axis = producer.attributes.get_int("axis", 0)
        if shape is None or not -len(shape) <= axis < len(shape):
            return None
        keepdims = producer.attributes.get_int("keepdims", 1)
        split = producer.inputs[1] if len(producer.inputs) > 1 else None
        axis = axis + len(shape) if axis < 0 else axis
        if split is None:
            return data, axis, keepdims == 0, False
        array = f.const_array(split)
        if array is None or array.ndim != 0 or int(array) != 1:
            return None
        squeeze = keepdims == 0 and not f.options.strict_spec
        return data, axis, squeeze, squeeze
    return None


def _follows_ort(f: Folder, node: ir.Node, values: Iterable[ir.Value], what: str) -> None:
    """Record a rewrite that squeezed a scalar split 1 with ``keepdims=0`` as ONNX Runtime does:
    a report note, and the values whose declared shapes may follow the spec instead."""
    f.report.notes.append(
        f"{label(node)}: {what} (scalar split 1 with keepdims=0: follows ONNX Runtime/PyTorch; "
        "--strict-spec keeps the axis)"
    )
    f.diverged.extend(values)


def _sequence_at_of_split(f: Folder, node: ir.Node, scope: Scope) -> bool:
    """``SequenceAt(SplitToSequence(x) in chunks of 1, i)`` -> ``Gather(x, i)``, for any ``i``
    (run-time ones too: Gather accepts exactly SequenceAt's range [-n, n-1] and fails outside
    it as SequenceAt does)."""
    found = _unit_split(f, node.inputs[0], scope)
    position = node.inputs[1] if len(node.inputs) > 1 else None
    if found is None or position is None:
        return False
    owner = f.owners.get(id(position.graph))
    if (
        owner is not None
        and owner[0].op_type == "Loop"
        and position.graph is not None
        and position.graph.inputs[:1] == [position]
        and f.unrolls is not None
        and f.unrolls(f, owner[0])
    ):
        return False  # read at the loop counter of a loop that will be unrolled: folded then
    pos_shape = scope.shapes.shape(position)
    if pos_shape is None or len(pos_shape) != 0:
        return False
    data, axis, squeeze, follows_ort = found
    emit = f.emitter(scope, node)
    index = position if squeeze else emit.unsqueeze(position, 0)
    out = emit.op("Gather", [data, index], axis=axis)
    out.type = data.type
    data_shape = scope.shapes.shape(data)
    if data_shape is not None:
        dims = list(data_shape)
        if squeeze:
            del dims[axis]
        else:
            dims[axis] = 1
        out.shape = ir.Shape(dims)
    if follows_ort:
        _follows_ort(f, node, [out], "the element is squeezed")
    f.replace(node.outputs[0], out, scope)
    return f.applied(
        "sequence-at-split",
        node,
        f"Gather on axis {axis} of '{data.name}'" + (", keeping the axis" if not squeeze else ""),
    )


def _sequence_at(f: Folder, node: ir.Node, scope: Scope) -> bool:
    seq = f.static(node.inputs[0])
    if seq is None:
        if _sequence_at_of_split(f, node, scope):
            return True
        return f.leave(node, f.why_unknown(node.inputs[0]))
    position, why = _position(f, node, 1)
    if why or position is None:
        if _sequence_at_of_split(f, node, scope):
            return True
        return f.leave(node, why or "SequenceAt without a position")
    try:
        element = f.current(seq.at(position))
    except PositionError as error:
        return f.leave(node, f"{error}: left to fail at run time as before")
    f.replace(node.outputs[0], element, scope)
    return f.applied("sequence-at", node, f"position {position} -> '{element.name}'")


def _sequence_length(f: Folder, node: ir.Node, scope: Scope) -> bool:
    seq = f.static(node.inputs[0])
    if seq is None:
        found = _unit_split(f, node.inputs[0], scope)
        if found is not None:  # chunks of one: as many as the axis is long
            data, axis, _, _ = found
            emit = f.emitter(scope, node)
            shape = emit.op("Shape", [data])
            shape.type = ir.TensorType(ir.DataType.INT64)
            length = emit.op(
                "Gather", [shape, emit.constant(np.array(axis, dtype=np.int64))], axis=0
            )
            length.type, length.shape = ir.TensorType(ir.DataType.INT64), ir.Shape([])
            f.replace(node.outputs[0], length, scope)
            return f.applied("sequence-length-split", node, f"dim {axis} of '{data.name}'")
        return f.leave(node, f.why_unknown(node.inputs[0]))
    value = f.emitter(scope, node).constant(np.array(len(seq), dtype=np.int64))
    f.replace(node.outputs[0], value, scope)
    return f.applied("sequence-length", node, f"length {len(seq)}")


def _rank(values: tuple[ir.Value, ...], shapes: ShapeOracle) -> int | None:
    ranks = set()
    for value in values:
        shape = shapes.shape(value)
        if shape is None:
            return None
        ranks.add(len(shape))
    return ranks.pop() if len(ranks) == 1 else None


def _conflicting_dim(
    values: tuple[ir.Value, ...], shapes: ShapeOracle, skip: int | None
) -> int | None:
    """The first dim (other than ``skip``) where two elements have different known sizes."""
    known = [shapes.shape(v) for v in values]
    rank = len(known[0]) if known[0] is not None else 0
    for i in range(rank):
        if i == skip:
            continue
        sizes = {s[i] for s in known if s is not None and isinstance(s[i], int)}
        if len(sizes) > 1:
            return i
    return None


def _concat_of_unit_split(f: Folder, node: ir.Node, scope: Scope) -> bool:
    """``ConcatFromSequence`` of a split into chunks of one, whatever its length: stacking the
    squeezed slices again (``new_axis=1``) moves the split axis to the stacking axis (a
    ``Transpose``, or nothing); concatenating unsqueezed slices on the split axis gives the
    input back. With zero slices the original fails at run time and this gives an empty
    tensor, as for loops (README, "Loops")."""
    found = _unit_split(f, node.inputs[0], scope)
    axis_attr = node.attributes.get("axis")
    if found is None or axis_attr is None:
        return False
    data, split_axis, squeeze, follows_ort = found
    shape = scope.shapes.shape(data)
    assert shape is not None  # _unit_split checked the rank
    rank = len(shape)
    new_axis = node.attributes.get_int("new_axis", 0)
    merge = squeeze and new_axis == 0  # squeezed slices laid end to end: a Reshape
    if not squeeze and new_axis == 1:
        return False
    out_rank = rank - 1 if merge else rank
    axis = axis_attr.as_int()
    if not -out_rank <= axis < out_rank:
        return False
    axis = axis + out_rank if axis < 0 else axis
    if axis != split_axis and not squeeze:
        return False
    perm = [d for d in range(rank) if d != split_axis]
    perm.insert(axis, split_axis)
    after = [d for d in [shape[k] for k in perm][axis + 2 :] if isinstance(d, int)]
    if merge and len(after) != rank - axis - 2:
        return False
    emit = f.emitter(scope, node)
    result = data
    if perm != list(range(rank)):
        result = emit.op("Transpose", [data], perm=perm)
        result.type = data.type
        result.shape = ir.Shape([shape[d] for d in perm])
    if merge:
        target = emit.int64s([0] * axis + [-1] + after)
        result = emit.op("Reshape", [result, target])
        result.type = data.type
    if follows_ort:
        _follows_ort(f, node, [result], "stacks the slices squeezed")
    f.replace(node.outputs[0], result, scope)
    moved = "its input" if axis == split_axis else f"Transpose {axis_attr.as_int()}<-{split_axis}"
    moved += ", merged by Reshape" if merge else ""
    return f.applied("concat-of-split", node, f"chunks of one on axis {split_axis}: {moved}")


def _concat_from_sequence(f: Folder, node: ir.Node, scope: Scope) -> bool:
    new_axis = node.attributes.get_int("new_axis", 0)
    if new_axis not in (0, 1):  # invalid; ONNX Runtime stacks anyway: no lowering is faithful
        return f.leave(node, f"new_axis {new_axis} is not 0 or 1 (the spec allows no other)")
    seq = f.static(node.inputs[0])
    if seq is None:
        if _concat_of_unit_split(f, node, scope):
            return True
        return f.leave(node, f.why_unknown(node.inputs[0]))
    if len(seq) == 0:
        return f.leave(
            node, "ConcatFromSequence of an empty sequence fails at run time; left as is"
        )
    axis_attr = node.attributes.get("axis")
    if axis_attr is None:
        return f.leave(node, "ConcatFromSequence without its required axis")
    axis = axis_attr.as_int()
    rank = _rank(seq.elements, scope.shapes)
    if rank is not None:
        out_rank = rank + 1 if new_axis == 1 else rank
        if not -out_rank <= axis <= out_rank - 1:
            return f.leave(
                node,
                f"axis {axis} is outside [-{out_rank}, {out_rank - 1}]: left to fail at run time",
            )
        axis = axis + out_rank if axis < 0 else axis
        conflict = _conflicting_dim(seq.elements, scope.shapes, None if new_axis == 1 else axis)
        if conflict is not None:
            return f.leave(
                node,
                f"elements differ in dim {conflict}: ConcatFromSequence fails at run time; left as is",
            )
    # With the rank unknown the axis passes through unchanged: Unsqueeze and Concat accept the
    # same axis range as ConcatFromSequence, so both models fail or succeed together.
    emit = f.emitter(scope, node)
    parts = list(seq.elements)
    if new_axis == 1:
        parts = [emit.unsqueeze(v, axis) for v in parts]
    result = parts[0] if len(parts) == 1 else emit.concat(parts, axis)
    f.replace(node.outputs[0], result, scope)
    rule = "concat-from-sequence-new-axis" if new_axis == 1 else "concat-from-sequence"
    return f.applied(rule, node, f"{len(seq)} elements, axis {axis}")


def _split_sizes(f: Folder, node: ir.Node, dim: int | None) -> tuple[list[int] | None, bool, str]:
    """Split sizes for SplitToSequence, whether the chunks are squeezed, or why not known."""
    keepdims = node.attributes.get_int("keepdims", 1)
    split = node.inputs[1] if len(node.inputs) > 1 else None
    if split is None:
        if dim is None:
            return None, False, "split axis dim unknown: the number of chunks is not static"
        if dim == 0:
            return None, False, "split axis has size 0: the sequence is empty"
        return [1] * dim, keepdims == 0, ""
    array = f.const_array(split)
    if array is None:
        return None, False, f"split '{split.name}' is known only at run time"
    if array.ndim == 1:
        sizes = [int(s) for s in array]
        if not sizes or any(s < 0 for s in sizes):
            return None, False, f"split sizes {sizes} are not valid"
        if dim is None:
            return None, False, "split axis dim unknown: the sizes cannot be proven to sum to it"
        if sum(sizes) != dim:
            return (
                None,
                False,
                f"split sizes sum to {sum(sizes)}, axis dim is {dim}: left to fail at run time",
            )
        return sizes, False, ""
    if array.ndim != 0:
        return None, False, f"split has rank {array.ndim}, not 0 or 1"
    chunk = int(array)
    if chunk <= 0:
        return None, False, f"scalar split {chunk} is not positive"
    if dim is None:
        return None, False, "split axis dim unknown: the number of chunks is not static"
    if dim == 0:
        return None, False, "split axis has size 0: the sequence is empty"
    sizes = [chunk] * (dim // chunk) + ([dim % chunk] if dim % chunk else [])
    squeeze = chunk == 1 and keepdims == 0 and not f.options.strict_spec
    return sizes, squeeze, ""


def _split_to_sequence(f: Folder, node: ir.Node, scope: Scope) -> bool:
    data = node.inputs[0]
    shape = scope.shapes.shape(data) if data is not None else None
    if data is None or shape is None:
        return f.leave(node, "input rank unknown: the split axis cannot be checked")
    rank = len(shape)
    axis = node.attributes.get_int("axis", 0)
    if not -rank <= axis <= rank - 1:
        return f.leave(
            node, f"axis {axis} is outside [-{rank}, {rank - 1}]: left to fail at run time"
        )
    axis = axis + rank if axis < 0 else axis
    dim = shape[axis]
    sizes, squeeze, why = _split_sizes(f, node, dim if isinstance(dim, int) else None)
    if sizes is None:
        count = _run_time_split_count(f, node, scope)
        if isinstance(count, str):
            return f.leave(node, f"{why} ({count})" if count else why)
        # split sizes known only at run time, but how many of them: one Split output each (it
        # fails on sizes that do not sum to the dim exactly as SplitToSequence does)
        split = node.inputs[1]
        assert split is not None
        parts = f.emitter(scope, node).split_by(data, axis, split, count)
        f.state[node.outputs[0]] = StaticSequence(tuple(parts), data.dtype)
        return f.applied("split-to-sequence-run-time-sizes", node, f"{count} chunks on axis {axis}")
    emit = f.emitter(scope, node)
    parts = emit.split(data, axis, sizes)
    if squeeze:
        parts = [emit.squeeze(p, axis) for p in parts]
    f.state[node.outputs[0]] = StaticSequence(tuple(parts), data.dtype)
    detail = f"{len(sizes)} chunks on axis {axis}" + (", squeezed" if squeeze else "")
    if squeeze and len(node.inputs) > 1 and node.inputs[1] is not None:
        _follows_ort(f, node, parts, detail)
    return f.applied("split-to-sequence", node, detail)


def _run_time_split_count(f: Folder, node: ir.Node, scope: Scope) -> int | str:
    """How many chunks a SplitToSequence makes whose split sizes are a run-time 1-D tensor of
    known length; else why not ('' when the split is not such a tensor)."""
    split = node.inputs[1] if len(node.inputs) > 1 else None
    if split is None or f.const_array(split) is not None:
        return ""
    shape = scope.shapes.shape(split)
    if shape is None or len(shape) != 1:
        return ""
    if not isinstance(shape[0], int) or shape[0] < 1:
        return "the number of sizes is not known"
    if scope.opset < 13:
        return "Split takes its sizes as an attribute before opset 13"
    return shape[0]


REWRITES: dict[str, str] = {
    "sequence-ops": "fold Construct/Empty/Insert/Erase/Identity chains; lower SequenceAt, "
    "SequenceLength, ConcatFromSequence, SplitToSequence",
    "if-inline": "inline the taken branch of an If whose condition is a constant",
    "sequence-map": "inline SequenceMap over static sequences, one body copy per element",
    "optional": "pass values through Optional / OptionalGetElement; fold OptionalHasElement",
    "loop-scan": "turn a Loop that appends to a list into a Loop with a scan output "
    "(the body's len(l) and l[-1] become values it carries)",
    "loop-unroll": "unroll a Loop with a constant trip count (<= --max-unroll) that reads "
    "a sequence",
    "function-inline": "inline model-local functions whose sequences cross their boundary, "
    "when that leaves fewer sequence ops",
}
"""The rewrite groups a caller can switch off by name (``--skip`` / ``--only``)."""

GROUP_OF_OP: dict[str, str] = {
    "If": "if-inline",
    "SequenceMap": "sequence-map",
    "Optional": "optional",
    "OptionalGetElement": "optional",
    "OptionalHasElement": "optional",
}


def select_rewrites(skip: Iterable[str] = (), only: Iterable[str] | None = None) -> frozenset[str]:
    """The set of disabled rewrite groups for ``skip``/``only``; ValueError on an unknown name."""
    names = set(skip) | set(only or ())
    unknown = sorted(names - set(REWRITES))
    if unknown:
        raise ValueError(f"unknown pass {', '.join(unknown)}; known: {', '.join(REWRITES)}")
    disabled = set(skip)
    if only is not None:
        disabled |= set(REWRITES) - set(only)
    return frozenset(disabled)


TRANSFER: dict[str, Handler] = {
    "SequenceEmpty": _sequence_empty,
    "SequenceConstruct": _sequence_construct,
    "SequenceInsert": _sequence_insert,
    "SequenceErase": _sequence_erase,
    "SequenceAt": _sequence_at,
    "SequenceLength": _sequence_length,
    "ConcatFromSequence": _concat_from_sequence,
    "SplitToSequence": _split_to_sequence,
    "Identity": _identity,
}


class FoldSequencesPass(ir.passes.InPlacePass):
    """Fold static sequences and lower the ops that read them, then drop dead producers.

    Rewrites, in the main graph, every subgraph and every model-local function:

    1. ``SequenceAt(s, const)`` -> the element.
    2. ``SequenceLength(s)`` -> int64 scalar ``Constant``.
    3. ``ConcatFromSequence`` -> ``Concat`` / ``Unsqueeze`` + ``Concat``.
    4. ``SplitToSequence`` -> ``Split`` (+ ``Squeeze``).
    5. Static sequences that must stay sequences -> one ``SequenceConstruct`` / ``SequenceEmpty``.

    ``modified`` is true only when the model really changed, so a second run reports false.
    """

    def __init__(self, options: FoldOptions | None = None, report: Report | None = None) -> None:
        super().__init__()
        self.options = options or FoldOptions()
        self.report = report if report is not None else Report()

    def call(self, model: ir.Model) -> ir.passes.PassResult:
        opset = model.opset_imports.get("", model.opset_imports.get("ai.onnx"))
        if opset is None:
            raise ValueError("the model imports no ONNX opset")
        carriers = (
            set() if "function-inline" in self.options.disabled else sequence_functions(model)
        )
        if not carriers:
            return ir.passes.PassResult(model, modified=self._fold(model, opset, self.report))
        # Sequences that cross a function boundary (a split in one function, its reads in
        # another) only fold with the functions inlined at their call sites: try that on a
        # copy, and keep it when it leaves fewer sequence ops than folding as they are.
        snapshot = ir.serde.serialize_model(model)
        kept = Report()
        modified = self._fold(model, opset, kept)
        left = count_sequence_ops(model)
        if left:
            trial, inlined = Report(), ir.serde.deserialize_model(snapshot)
            try:
                common_passes.InlinePass(criteria=lambda fn: fn.identifier() in carriers)(inlined)
            except Exception as error:  # cycles, opset clashes: fold the functions as they are
                kept.notes.append(f"functions with sequences not inlined: {error}")
            else:
                self._fold(inlined, opset, trial)
                if count_sequence_ops(inlined) < left:
                    names = ", ".join(sorted(name for _, name, _ in carriers))
                    trial.rewrites.insert(
                        0,
                        Rewrite(
                            "function-inline",
                            "",
                            "function",
                            "main",
                            f"{names}: inlined at the call sites (sequences cross them)",
                        ),
                    )
                    _adopt(model, inlined)
                    kept, modified = trial, True
        self.report.rewrites.extend(kept.rewrites)
        self.report.left.extend(kept.left)
        self.report.notes.extend(kept.notes)
        return ir.passes.PassResult(model, modified=modified)

    def _fold(self, model: ir.Model, opset: int, report: Report) -> bool:
        """Walk and clean ``model``, recording into ``report``; whether it changed."""
        before = _count_nodes(model)
        folder = Folder(self.options, report)
        for value in model.graph.inputs:
            if value.shape is not None:
                folder.input_dims.update(
                    d.value for d in value.shape if isinstance(d, ir.SymbolicDim) and d.value
                )
        folder.run_model(model, opset)
        remove_dead_nodes(model)
        if folder.created:
            # onnx_ir names new values per graph ("val_0"), which can repeat a name of an
            # enclosing graph; ONNX wants names unique across nested scopes.
            common_passes.NameFixPass()(model)
        survivors = 0
        for node in all_nodes(model):
            if node not in folder.created:
                survivors += 1
            if node.op_type in LEFT_OPS and node.domain in _DEFAULT_DOMAINS:
                reason = folder.reasons.get(node) or _why_kept(node, folder)
                report.left.append(
                    Rewrite(
                        "left",
                        node.name or "",
                        node.op_type,
                        folder.paths.get(node, ""),
                        reason,
                        folder.source(node),
                    )
                )
        return folder.rewrote or survivors != before


def sequence_functions(model: ir.Model) -> set[ir.OperatorIdentifier]:
    """The model-local functions whose bodies hold a sequence op, or call one that does."""
    calls: dict[ir.OperatorIdentifier, set[ir.OperatorIdentifier]] = {}
    found: set[ir.OperatorIdentifier] = set()
    for fid, function in model.functions.items():
        calls[fid] = set()
        for node in ir.traversal.RecursiveGraphIterator(function):
            if node.op_type in SEQUENCE_OPS and node.domain in _DEFAULT_DOMAINS:
                found.add(fid)
            elif node.op_identifier() in model.functions:
                calls[fid].add(node.op_identifier())
    grew = True
    while grew:
        grew = False
        for fid, callees in calls.items():
            if fid not in found and callees & found:
                found.add(fid)
                grew = True
    return found


def _adopt(model: ir.Model, other: ir.Model) -> None:
    """Make ``model`` hold ``other``'s graph, functions and opsets (an in-place pass keeps the
    caller's Model object)."""
    model.graph = other.graph  # (the opset imports are the graph's)
    model.functions.clear()
    model.functions.update(other.functions)


def _shape_text(shape: ir.Shape | None) -> str:
    return "[" + ",".join(str(d) for d in shape) + "]" if shape is not None else "?"


def _why_kept(node: ir.Node, folder: Folder) -> str:
    out = node.outputs[0]
    if node.op_type in OPTIONAL_OPS:
        if node.op_type == "Optional":
            users = sorted({use.node.op_type for use in out.uses()})
            where = "a graph output" if out.is_graph_output() else ", ".join(users)
            return f"the optional is needed as one ({where})"
        source = node.inputs[0] if node.inputs else None
        return "optional " + (folder.why_unknown(source) if source is not None else "missing")
    if out.is_graph_output():
        owner = folder.owners.get(id(out.graph))
        if owner is not None:
            return f"canonical form of a sequence returned by the {owner[1]} of {label(owner[0])}"
        return "canonical form of a sequence that is a graph output"
    users = sorted({use.node.op_type for use in out.uses()})
    return "canonical form of a sequence consumed by " + ", ".join(users)


def _count_nodes(model: ir.Model) -> int:
    return sum(1 for _ in all_nodes(model))


@dataclass
class Analysis:
    """What the walk learned: each sequence value's abstract value, and integers it folded."""

    sequences: dict[ir.Value, StaticSequence | Unknown]
    integers: dict[ir.Value, int]


def analyze(model: ir.Model, options: FoldOptions | None = None) -> Analysis:
    """Run the walk without changing the model's nodes, and return what it learned.

    SequenceAt/ConcatFromSequence/SequenceLength outputs get the type and shape their rewrite
    would have.
    """
    opset = model.opset_imports.get("", model.opset_imports.get("ai.onnx"))
    if opset is None:
        raise ValueError("the model imports no ONNX opset")
    folder = Folder(options or FoldOptions(), Report(), analyze_only=True)
    folder.run_model(model, opset)
    for node in folder.created:  # the descriptive nodes must not stay users of real values
        for index in range(len(node.inputs)):
            node.replace_input_with(index, None)
    return Analysis(folder.state, folder.known_ints)

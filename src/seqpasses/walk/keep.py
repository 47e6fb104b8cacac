"""What must stay at the end of a walk: :class:`Liveness`, which says which nodes dead-code
removal keeps (a check a
rewrite emitted, a node left as it is, a node dead in the model as given) and which are what a
rewrite left behind (replaced, superseded, or a stale copy).
"""

from __future__ import annotations

from collections.abc import Callable

import onnx_ir as ir

from seqpasses.core.constants import integer_array
from seqpasses.core.graph import GRAPH_HOLDERS, functions_holding, graphs, is_default, subgraphs
from seqpasses.core.ops import SEQUENCE_OPS
from seqpasses.core.sequence import FAILING_KINDS, ones_as_long_as
from seqpasses.walk.facts import Facts
from seqpasses.walk.recorder import Recorder
from seqpasses.walk.trial import CreatedNodes

__all__ = ["Liveness"]


class Liveness:
    """Which nodes stay whatever reads them, from what the walk recorded: the checks rewrites
    emit, the nodes dead in the model as given, the copies cloned bodies hold. The walk's
    :class:`~seqpasses.walk.edits.Edits` holds one (``edits.keep``); dead-code removal asks
    it (:meth:`protected`)."""

    def __init__(
        self,
        facts: Facts,
        created: CreatedNodes,
        recorder: Recorder,
        forwarded: dict[ir.Value, ir.Value],
        current: Callable[[ir.Value], ir.Value],
        check_nodes: dict[ir.Node, None],
    ) -> None:
        self.facts = facts
        self.created = created
        self.recorder = recorder
        self.forwarded = forwarded  # (a replaced value -> its replacement: the writer's)
        self.current = current
        # nodes that must stay even when nothing reads them: the checks rewrites emit (a
        # normalized run-time position, a Split of run-time sizes, a guard against an empty
        # list), in the order they were made (the order they are anchored in: a set's order
        # follows the nodes' addresses, which the result must not depend on)
        self.check_nodes = check_nodes
        self.dead_in_input: set[ir.Node] = set()  # (set before the walk)
        self.cloned: dict[ir.Node, ir.Node] = {}  # a node of a cloned body -> what it copies

    def _source(self, node: ir.Node) -> ir.Node | None:
        """The node ``node`` copies (inlined, unrolled or cloned), if any."""
        found = self.recorder.origin.get(node)
        return found if found is not None else self.cloned.get(node)

    def holds_failure(self, node: ir.Node, settled: bool = True) -> bool:
        """Whether ``node`` must stay even when nothing reads it: a check a rewrite emitted,
        a node left as it is (out of range, or any op seqpasses could not prove runs: it may
        fail at run time; not the canonical form of a sequence written for a reader), or a
        node dead in the model as given (or a copy of one) the walk neither replaced nor
        folded. Not ``settled`` (during the walk): of the nodes left, only those that fail
        whatever comes later (a read of a loop's list may yet be rewritten). Never a copy of
        a node already replaced when it was copied (an unrolled body still holding it)."""
        if (  # (most nodes: no copy, no check, not left, not dead; asked of every node)
            node not in self.facts.reasons
            and node not in self.recorder.origin
            and node not in self.cloned
            and node not in self.check_nodes
            and node not in self.dead_in_input
        ):
            return False
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
        failing = self._failing_functions(model)
        for _, graph in graphs(model):
            for node in graph:
                if self.holds_failure(node) or (failing and node.op_identifier() in failing):
                    candidates.add(node)
                for _, inner in subgraphs(node):
                    holders[id(inner)] = node
        for node in (*self.dead_in_input, *self.recorder.origin, *self.cloned):
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

    def _failing_functions(self, model: ir.Model) -> set[ir.OperatorIdentifier]:
        """The model-local functions whose body (or a function it calls) holds a node that
        must stay (:meth:`holds_failure`): a call of one stays too, whatever reads it."""
        return functions_holding(model, self.holds_failure)

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


def _unit_split(node: ir.Node) -> bool:
    """Whether ``node`` is a SplitToSequence with no split, a constant scalar split of 1, or
    a vector of ones as long as the split axis."""
    if node.op_type != "SplitToSequence" or not is_default(node):
        return False
    split = node.inputs[1] if len(node.inputs) > 1 else None
    if split is None:
        return True
    data = node.inputs[0]
    if data is not None and data.shape is not None and split.const_value is None:
        axis = node.attributes.get_int("axis", 0)
        rank = len(data.shape)
        if -rank <= axis < rank and ones_as_long_as(split, split.shape, data.shape[axis]):
            return True
    array = integer_array(split)
    return array is not None and array.ndim == 0 and int(array) == 1

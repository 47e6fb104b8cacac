"""What a transfer proposes, as values: the applier (:mod:`seqpasses.walk.apply`) writes it.

A transfer never changes a graph or the walk's facts (``tests/test_structure.py`` scans
``transfer/`` for every form of write); it returns a :data:`Proposal`:

- :class:`Fold`: the node's results are known lists; :class:`Replace`: its results are other
  values (the uses move); :class:`Restructure`: a control-flow node remade by a
  :class:`Rebuild` (its bodies given a :class:`BodyForm`); :class:`Leave`: it stays, with its
  reason; every :class:`Outcome` may also declare types, record rewrites (:class:`Record`),
  inline copies of a body (:class:`Inline`), walk a body again, and name its next step
  (``then``: a function of what the applier :class:`Made`);
- :class:`Trial`: an attempt the applier undoes when a step of it gives a reason.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import onnx_ir as ir

from seqpasses.core.sequence import Reason, StackedSequence, StaticSequence, Unknown
from seqpasses.walk.scope import Scope

__all__ = [
    "BodyForm",
    "Build",
    "Fold",
    "Inline",
    "Learned",
    "Leave",
    "Listed",
    "Made",
    "Next",
    "Outcome",
    "Proposal",
    "Rebuild",
    "Record",
    "Replace",
    "Restructure",
    "Said",
    "Stacked",
    "Trial",
]

AbstractValue = StaticSequence | StackedSequence | Unknown


class _Empty(Mapping[Any, Any]):
    """The empty mapping an outcome's fields default to (shared: nothing writes it)."""

    __slots__ = ()

    def __getitem__(self, key: object) -> Any:
        raise KeyError(key)

    def __iter__(self) -> Iterator[Any]:
        return iter(())

    def __len__(self) -> int:
        return 0

    def __hash__(self) -> int:
        return 0


EMPTY: Mapping[Any, Any] = _Empty()
Declared = tuple[ir.TypeProtocol | None, ir.Shape | None]


@dataclass(frozen=True)
class Record:
    """The rewrite an outcome applies, by its registered id, and a detail for the report.
    ``computed``: it takes effect when what reads the node is rewritten (a list held as one
    tensor): it counts only if the node is gone after dead-code removal."""

    rule: str
    detail: str = ""
    computed: bool = False


Use = tuple[ir.Value, ir.Value] | tuple[ir.Value, ir.Value, Scope]


@dataclass(frozen=True)
class Inline:
    """Copies of ``body``'s nodes before the node, walked at once (what they compute folds
    like straight-line code): ``count`` of them, copy ``i``'s inputs bound by
    ``bind(i, outputs of copy i - 1)`` (an empty list for the first)."""

    body: ir.Graph
    count: int
    bind: Callable[[int, Sequence[ir.Value]], Mapping[ir.Value, ir.Value]]


@dataclass(frozen=True, kw_only=True, slots=True)
class Learned:
    """What the walk's facts learn from an outcome besides what values hold: ``forget``,
    values whose abstract value no longer holds; ``optionals``, what an optional wraps (None:
    nothing); ``canonical``, sequences the model makes that are canonical lists (what needs
    the list as a sequence may read them); ``proven``, values whose shape seqpasses proved;
    ``diverged``, values whose shape departs from the spec's (as ONNX Runtime computes it);
    ``unrolling``, whether the node (a Loop) will be unrolled (None: as it was)."""

    forget: Sequence[ir.Value] = ()
    optionals: Mapping[ir.Value, ir.Value | None] = EMPTY
    canonical: Mapping[ir.Value, StaticSequence] = EMPTY
    proven: Sequence[ir.Value] = ()
    diverged: Sequence[ir.Value] = ()
    unrolling: bool | None = None

    @property
    def settles(self) -> bool:
        """Whether any of it is written with the graph's changes (not only with the values)."""
        return bool(self.forget or self.proven or self.diverged or self.unrolling is not None)


@dataclass(frozen=True, kw_only=True, slots=True)
class Build:
    """What changes in the graph besides moved uses and a rebuilt node, in the order it is
    written: ``clones``, ``(copy, graph)``, a clone made to be rewritten (what must stay in it
    stays as in the graph); ``bodies``, the forms bodies being built take (first of all);
    ``add``, ``(node, before)``, a node built whole; ``inline``, copies of a body, walked;
    ``take_out``, nodes a rewrite replaced inside a body; ``retire``, nodes whose subgraphs'
    work was inlined (their subgraphs stop reading outer values); ``attributes``, attributes a
    node gets; ``walk``, ``(graph, node, attribute)``, subgraphs walked (again) once all is
    written; ``sweep``, bodies whose unread nodes go; ``discard``, bodies no longer used,
    emptied."""

    clones: Sequence[tuple[ir.Graph, ir.Graph]] = ()
    bodies: Sequence[tuple[ir.Graph, BodyForm]] = ()
    add: Sequence[tuple[ir.Node, ir.Node]] = ()
    inline: Inline | None = None
    take_out: Sequence[ir.Node] = ()
    retire: Sequence[ir.Node] = ()
    attributes: Sequence[tuple[ir.Node, ir.Attr]] = ()
    walk: Sequence[tuple[ir.Graph, ir.Node, str]] = ()
    sweep: Sequence[ir.Graph] = ()
    discard: Sequence[ir.Graph] = ()


@dataclass(frozen=True, kw_only=True, slots=True)
class Said:
    """What the report learns besides the rewrites: ``notes``; ``refused``, ``(loop, attempt,
    why)``, a way of rewriting a Loop that was refused; ``noted``, a later decision added to a
    left node's reason."""

    notes: Sequence[str] = ()
    refused: Sequence[tuple[ir.Node, str, str]] = ()
    noted: Sequence[tuple[ir.Node, str]] = ()


@dataclass(kw_only=True, slots=True)
class Outcome:
    """What a transfer proposes for the node it was given; the applier
    (:mod:`seqpasses.walk.apply`) writes it, after placing the visit's tape. (A value: nothing
    changes an outcome once it is made; not frozen only because a frozen dataclass costs
    several times as much to make, once per node visited.)

    - ``values``: what a value holds (a sequence's abstract value);
    - ``declare``: the type and shape of values the model has, or a body being built has
      (each as given);
    - ``uses``: every use of ``old`` moves to ``new`` (in the node's scope, or the one given);
    - ``records``: the rewrites it applies, for the report;
    - ``learned`` (:class:`Learned`), ``build`` (:class:`Build`), ``said`` (:class:`Said`):
      what else the facts learn, the graph gets and the report is told (None: nothing);
    - ``charge``: the nodes and bytes of constants the outcome adds, taken from the run's
      budget as it is written (given back when a trial it is part of is undone);
    - ``then``: what comes next, once this is written (a function of the transfer's, given
      what the applier made: a rebuilt node, the copies' outputs): the step after a rebuild.
    """

    values: Mapping[ir.Value, AbstractValue] = EMPTY
    declare: Mapping[ir.Value, Declared] = EMPTY
    uses: Sequence[Use] = ()
    records: Sequence[Record] = ()
    learned: Learned | None = None
    build: Build | None = None
    said: Said | None = None
    charge: tuple[int, int] | None = None
    then: Callable[[Made], Proposal | Reason] | None = None

    @property
    def handled(self) -> bool:
        """Whether the transfer handled the node (else the walker's fallback runs)."""
        return True


@dataclass(kw_only=True, slots=True)
class Fold(Outcome):
    """The node's results are known (``values``); the graph keeps it until nothing reads it.
    ``canonical_inputs``: where it stays, its static list inputs are written in canonical
    form (only if something else keeps it: see ``Edits.canonical_inputs``)."""

    canonical_inputs: bool = False


@dataclass(kw_only=True, slots=True)
class Replace(Outcome):
    """The node's results are other values: ``uses`` move to them (values the tape made, or
    ones the model has)."""


@dataclass(frozen=True)
class Listed:
    """An old output that becomes a static list of the rebuilt node's outputs ``indices``,
    each declared ``types[i]``."""

    indices: Sequence[int]
    types: Sequence[Declared]
    dtype: ir.DataType | None


@dataclass(frozen=True)
class Stacked:
    """An old output that becomes a list held as one tensor ``[length, *element]``: the
    rebuilt node's output ``index``."""

    index: int
    length: int | ir.SymbolicDim
    element: ir.Shape
    dtype: ir.DataType | None
    least: int = 0
    checked: bool = False


@dataclass(kw_only=True, slots=True)
class Restructure(Outcome):
    """A control-flow node remade (``plan``); ``held``: old outputs that become lists of the
    new node's outputs."""

    plan: Rebuild
    held: Mapping[ir.Value, Listed | Stacked] = EMPTY


@dataclass(kw_only=True, slots=True)
class Leave(Outcome):
    """The node stays as it is; ``reason``: why (None: the transfer had nothing to say, such as
    an op of a form it does not take). What reads its sequence learns the reason."""

    reason: Reason | None = None

    @property
    def handled(self) -> bool:
        return False


@dataclass(kw_only=True, slots=True)
class Next(Outcome):
    """Written, then the next patterns of a drive (:mod:`seqpasses.walk.driver`) get ``node``:
    the node as this pattern leaves it (a rebuilt one, or the same); ``changed``: whether the
    pattern changed it."""

    node: ir.Node
    changed: bool = False


@dataclass(frozen=True)
class Trial:
    """Speculation: ``attempt`` is written (and its ``then`` steps); a step may instead give
    a :class:`Reason` it fails for: then everything the attempt made is undone (its nodes
    removed, what was recorded of them forgotten, ``drop``'s bodies emptied) and
    ``otherwise(reason)`` is written in its place."""

    attempt: Outcome
    otherwise: Callable[[Reason], Proposal]
    drop: Sequence[ir.Graph] = ()

    @classmethod
    def failed(cls, reason: Reason, otherwise: Callable[[Reason], Proposal]) -> Trial:
        """A trial that fails at once, for ``reason``: what its transfer built on the tape
        to try is undone, and ``otherwise(reason)`` written."""
        return cls(attempt=Outcome(then=lambda _: reason), otherwise=otherwise)


Proposal = Outcome | Trial
"""What a transfer returns."""


@dataclass
class Made:
    """What the applier made of an outcome, for its ``then`` step: the node a rebuild made,
    the outputs of each inlined copy, and (in a trial) the sequence ops left alive."""

    new: ir.Node | None = None
    copies: list[list[ir.Value]] = field(default_factory=list)
    left: Callable[[Sequence[ir.Value]], list[ir.Node]] = lambda roots: []


@dataclass(frozen=True)
class BodyForm:
    """What a body becomes. ``None``: as it is.

    ``outputs``: each one made by the body, once: a value the body had as an output keeps its
    slot's form; any other that is an input, comes from outside, is not made by a node of the
    body or repeats goes through a new Identity (a graph output must be made by its graph).
    """

    inputs: Sequence[ir.Value] | None = None
    outputs: Sequence[ir.Value] | None = None
    drop: Sequence[ir.Node] = ()  # nodes the new form replaces, taken out first
    moved: Mapping[ir.Value, ir.Value] = field(default_factory=dict)  # uses of old -> new


@dataclass(frozen=True)
class Rebuild:
    """``node`` remade: new ``inputs``, its graph attributes reshaped (attribute -> the graph
    and its :class:`BodyForm`), ``num_outputs`` outputs. ``moved``: an old output's index ->
    the index of the new output that stands for it (its uses move over, with its type and
    shape; with ``facts``, what is known of it too). Outputs not in ``moved`` are the
    transfer's to settle."""

    node: ir.Node
    inputs: Sequence[ir.Value | None]
    bodies: Mapping[str, tuple[ir.Graph, BodyForm]]
    num_outputs: int
    moved: Mapping[int, int] = field(default_factory=dict)
    facts: bool = False

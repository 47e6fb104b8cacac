"""What a run changed, and why each remaining sequence op was left."""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import onnx
import onnx_ir as ir

from seqpasses.core.ops import OPTIONAL_OPS, SEQUENCE_OPS, model_ops

__all__ = ["ORIGIN", "Report", "Rewrite", "count_ops", "count_sequence_ops"]

ORIGIN = "seqpasses.origin"
"""The ``metadata_props`` key of a node's origin tag (copies of a node keep its metadata)."""


@dataclass(frozen=True)
class Rewrite:
    """One rewrite applied (``rule``) or one sequence or optional op left (``rule == "left"``).

    ``source`` says where a left node comes from: ``""`` (the input model), ``"copy of
    NAME"`` (a copy of node NAME made by unrolling or inlining) or ``"added"`` (a canonical
    SequenceConstruct/SequenceEmpty that seqpasses wrote for a consumer that needs a sequence).
    ``origin``: the tag :data:`ORIGIN` the caller put on the input node it is or copies
    (``inspect`` tags every node, so that its table is made of these records).
    """

    rule: str
    node: str
    op_type: str
    graph: str
    detail: str = ""
    source: str = ""
    kind: str = ""  # a left node's reason kind (seqpasses.core.sequence.REASON_KINDS)
    origin: str = ""  # the input node it is, or is a copy of, when the caller tagged it

    def named(self) -> str:
        """How messages name the node: its op type, and its name when it has one."""
        return f"{self.op_type} '{self.node}'" if self.node else self.op_type

    def as_dict(self) -> dict[str, str]:
        return {
            "rule": self.rule,
            "node": self.node,
            "op_type": self.op_type,
            "graph": self.graph,
            "detail": self.detail,
            "source": self.source,
            "kind": self.kind,
        }


@dataclass
class Report:
    """The record of one optimize run: op counts, rewrites, ops left with their reasons."""

    ops_before: Counter[str] = field(default_factory=Counter)
    ops_after: Counter[str] = field(default_factory=Counter)
    rewrites: list[Rewrite] = field(default_factory=list)
    left: list[Rewrite] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)  # about the input (see seqpasses.admit)
    unchanged: str = ""  # why the model was handed back unchanged, when it was

    @property
    def changed(self) -> bool:
        """Whether optimize changed the model (a rewrite, or a different op count)."""
        return not self.unchanged and (bool(self.rewrites) or self.ops_before != self.ops_after)

    @property
    def sequence_ops_before(self) -> int:
        return sum(n for op, n in self.ops_before.items() if op in SEQUENCE_OPS)

    @property
    def sequence_ops_after(self) -> int:
        return sum(n for op, n in self.ops_after.items() if op in SEQUENCE_OPS)

    @property
    def optional_ops_before(self) -> int:
        return sum(n for op, n in self.ops_before.items() if op in OPTIONAL_OPS)

    @property
    def optional_ops_after(self) -> int:
        return sum(n for op, n in self.ops_after.items() if op in OPTIONAL_OPS)

    def table(self) -> str:
        """A short before/after table of op counts, changed rows first."""
        return "\n".join(self.table_lines())

    def table_lines(self) -> list[str]:
        """:meth:`table`, a line each (a model's op type may hold a newline)."""
        ops = sorted(
            set(self.ops_before) | set(self.ops_after),
            key=lambda op: (self.ops_before[op] == self.ops_after[op], op),
        )
        total = sum(self.ops_before.values())
        if self.ops_before == self.ops_after:  # (no row would say anything)
            kinds = len(self.ops_before)
            lines = [f"ops: {total} nodes of {kinds} op types, the same before and after"]
            return [*lines, *self.summary_lines()]
        width = max([len("total"), *(len(op) for op in ops)])
        lines = [f"{'op':<{width}}  {'before':>6}  {'after':>6}"]
        rows = [(op, self.ops_before[op], self.ops_after[op]) for op in ops]
        for op, before, after in [*rows, ("total", total, sum(self.ops_after.values()))]:
            mark = "" if before == after else f"  {after - before:+d}"
            lines.append(f"{op:<{width}}  {before:>6}  {after:>6}{mark}")
        lines.extend(self.summary_lines())
        return lines

    def summary(self) -> str:
        """The one-line verdict ``optimize`` and ``inspect`` both print (and a second for
        optional ops when the model has any)."""
        return "\n".join(self.summary_lines())

    def summary_lines(self) -> list[str]:
        """:meth:`summary`, a line each."""
        optionals = sum(1 for left in self.left if left.op_type in OPTIONAL_OPS)
        lines = [
            f"sequence ops: {self.sequence_ops_before} -> {self.sequence_ops_after}, "
            f"{len(self.rewrites)} rewrites, {len(self.left) - optionals} left"
        ]
        if self.optional_ops_before or self.optional_ops_after or optionals:
            line = f"optional ops: {self.optional_ops_before} -> {self.optional_ops_after}"
            lines.append(line + (f", {optionals} left" if optionals else ""))
        return lines

    def as_dict(self) -> dict[str, Any]:
        return {
            "ops_before": dict(sorted(self.ops_before.items())),
            "ops_after": dict(sorted(self.ops_after.items())),
            "sequence_ops_before": self.sequence_ops_before,
            "sequence_ops_after": self.sequence_ops_after,
            "optional_ops_before": self.optional_ops_before,
            "optional_ops_after": self.optional_ops_after,
            "nodes_before": sum(self.ops_before.values()),
            "nodes_after": sum(self.ops_after.values()),
            "rewrites": [r.as_dict() for r in self.rewrites],
            "left": [r.as_dict() for r in self.left],
            "notes": list(self.notes),
            "warnings": list(self.warnings),
            "changed": self.changed,
            "unchanged": self.unchanged or None,
            "timings_s": dict(self.timings),
        }


def count_ops(model: ir.Model | onnx.ModelProto | str | os.PathLike[str]) -> Counter[str]:
    """Op counts over the main graph, every subgraph and every model-local function (of a
    ``ModelProto``, an ``onnx_ir`` model or a model file).

    Ops of other domains are counted as ``domain::op_type``.
    """
    if isinstance(model, str | os.PathLike):
        from seqpasses.io import read_proto  # (the one way a file comes in; data not read)

        model = read_proto(model)
    return model_ops(model)


def count_sequence_ops(model: ir.Model | onnx.ModelProto | str | os.PathLike[str]) -> int:
    """How many default-domain sequence ops a model holds, subgraphs and functions included."""
    return sum(n for op, n in count_ops(model).items() if op in SEQUENCE_OPS)

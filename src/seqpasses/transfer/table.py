"""The transfer table: every family's rows merged, and the registry of rewrites.

Each family declares its own table (``(op_type, kind) -> Entry``) and the rewrites it applies
(``RULES``: id -> (group, doc)); this module merges them, failing on a row or an id declared
twice, and the walker is given the result. Adding an op means one row in its family's table,
one ``RULES`` entry, and one ``rules/*.rule`` file that names the rewrite id.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from seqpasses.options import GROUPS, Group
from seqpasses.transfer import (
    control,
    loops,
    optionals,
    sequence_ops,
    split_to_sequence,
    stacked,
    stacked_map,
    unit_split,
)
from seqpasses.walk.context import Entry

__all__ = ["DRY_TABLE", "RULES", "TABLE", "Rule", "merge"]


@dataclass(frozen=True)
class Rule:
    """A registered rewrite: its id, the group that switches it off, one line of doc."""

    id: str
    group: str
    doc: str


def merge(*tables: Mapping[tuple[str, str], Entry]) -> dict[tuple[str, str], Entry]:
    """One table from the families' tables; a row declared twice is an error."""
    merged: dict[tuple[str, str], Entry] = {}
    for table in tables:
        for key, entry in table.items():
            if key in merged:
                raise ValueError(f"transfer for {key} declared twice")
            merged[key] = entry
    return merged


def _rules(*families: Mapping[str, tuple[str, str]]) -> dict[str, Rule]:
    rules: dict[str, Rule] = {}
    for family in families:
        for rule_id, (group, doc) in family.items():
            if rule_id in rules:
                raise ValueError(f"rewrite id {rule_id!r} declared twice")
            if group not in GROUPS:
                raise ValueError(f"rewrite id {rule_id!r} names an unknown group {group!r}")
            rules[rule_id] = Rule(rule_id, group, doc)
    return rules


TABLE = merge(
    sequence_ops.TABLE,
    split_to_sequence.TABLE,
    unit_split.TABLE,
    stacked.TABLE,
    control.TABLE,
    optionals.TABLE,
    loops.TABLE,
)
"""The table of a real walk."""

DRY_TABLE = {key: entry for key, entry in TABLE.items() if entry.dry or entry.analyze}
"""The table of a dry walk (analysis): no row that restructures the graph (such a row runs
its ``analyze`` instead, where it has one)."""

RULES: dict[str, Rule] = _rules(
    sequence_ops.RULES,
    split_to_sequence.RULES,
    unit_split.RULES,
    stacked.RULES,
    stacked_map.RULES,
    control.RULES,
    optionals.RULES,
    loops.RULES,
    {
        "canonical-sequence-input": (
            Group.SEQUENCE_OPS,
            "a static sequence an op needs as a sequence -> one SequenceConstruct/SequenceEmpty",
        ),
        "canonical-sequence-output": (
            Group.SEQUENCE_OPS,
            "a static sequence that is a graph output -> one SequenceConstruct/SequenceEmpty",
        ),
        "function-inline": (
            Group.FUNCTION_INLINE,
            "model-local functions whose sequences cross their boundary -> inlined",
        ),
    },
)
"""Every rewrite seqpasses applies, by id (the ids reports and ``rules/*.rule`` files use)."""

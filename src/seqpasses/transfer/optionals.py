"""Optionals around sequences: ``Optional`` wraps a value that passes through,
``OptionalGetElement`` of a known optional is its content, ``OptionalHasElement`` of one a
bool ``Constant``."""

from __future__ import annotations

import numpy as np
import onnx_ir as ir

from seqpasses.core.sequence import StackedSequence, StaticSequence
from seqpasses.options import Group
from seqpasses.walk.context import Context, Entry, Scope
from seqpasses.walk.outcomes import Fold, Learned, Leave, Outcome, Record, Replace

__all__ = ["RULES", "TABLE"]


def _optional(ctx: Context, node: ir.Node, scope: Scope) -> Outcome:
    # the Optional stays where something other than its reads takes it (a graph output, a
    # Loop): then it wraps the list in canonical form (the value it was given may come from
    # a node a rewrite rebuilt, which must not stay alive)
    wrapped = node.inputs[0] if node.inputs else None
    return Fold(learned=Learned(optionals={node.outputs[0]: wrapped}), canonical_inputs=True)


def _optional_value(ctx: Context, value: ir.Value) -> tuple[bool, ir.Value | None]:
    """Whether the optional's content is known, and the content (None when empty)."""
    if value in ctx.facts.optionals:
        return True, ctx.facts.optionals[value]
    if (
        isinstance(value.type, ir.TensorType | ir.SequenceType)
        or ctx.facts.static(value) is not None
    ):
        return True, value  # a plain tensor or sequence: always present
    return False, None


def _optional_get_element(ctx: Context, node: ir.Node, scope: Scope) -> Outcome:
    source = node.inputs[0] if node.inputs else None
    if source is None:
        return Leave()
    known, content = _optional_value(ctx, source)
    if not known or content is None:
        return Leave()
    held = ctx.facts.values.get(content)
    values = {node.outputs[0]: held} if isinstance(held, StaticSequence | StackedSequence) else {}
    if (
        node.outputs[0].is_graph_output()
        and not isinstance(content.type, ir.TensorType)
        and scope.opset < 14
    ):
        return Leave(values=values)
    record = Record("optional-get-element", f"-> '{content.name}'")
    return Replace(values=values, uses=[(node.outputs[0], content)], records=[record])


def _optional_has_element(ctx: Context, node: ir.Node, scope: Scope) -> Outcome:
    source = node.inputs[0] if node.inputs else None
    known, content = (True, None) if source is None else _optional_value(ctx, source)
    if not known:
        return Leave()
    value = ctx.emitter(scope, node).constant(np.array(content is not None))
    record = Record("optional-has-element", f"{content is not None}")
    return Replace(uses=[(node.outputs[0], value)], records=[record])


TABLE: dict[tuple[str, str], Entry] = {
    ("Optional", "*"): Entry(_optional, group=Group.OPTIONAL),
    ("OptionalGetElement", "*"): Entry(_optional_get_element, group=Group.OPTIONAL),
    ("OptionalHasElement", "*"): Entry(_optional_has_element, group=Group.OPTIONAL),
}

RULES: dict[str, tuple[str, str]] = {
    "optional-get-element": (Group.OPTIONAL, "OptionalGetElement(Optional(x)) -> x"),
    "optional-has-element": (Group.OPTIONAL, "OptionalHasElement of a known optional -> a bool"),
}

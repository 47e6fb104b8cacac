"""Every choice a caller makes, spelled once: :class:`Options` (what ``optimize``, the CLI and
``inspect`` take) and :class:`FoldOptions` (the part the passes read).

No heavy imports: the command line validates its options before it loads onnx.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

__all__ = [
    "DEFAULT_MAX_SPLIT",
    "DEFAULT_MAX_UNROLL",
    "GROUPS",
    "NODE_BUDGET_FACTOR",
    "NODE_BUDGET_FLOOR",
    "FoldOptions",
    "Group",
    "Options",
    "select_rewrites",
]

DEFAULT_MAX_UNROLL = 64
"""The largest constant trip count a Loop that reads a sequence is unrolled for."""

DEFAULT_MAX_SPLIT = 4096
"""The most pieces a ``Split`` seqpasses writes may have (a static list of that many)."""

NODE_BUDGET_FLOOR = 10_000
NODE_BUDGET_FACTOR = 10
"""The nodes one run may add, by default: ``max(NODE_BUDGET_FLOOR, NODE_BUDGET_FACTOR x the
input's nodes)``, across every unrolling, inlining and split of the model together."""


class Group(StrEnum):
    """The rewrite groups a caller can switch off by name (``--skip`` / ``--only``): the one
    spelling of each, which table rows, rewrite ids and option checks all use."""

    SEQUENCE_OPS = "sequence-ops"
    IF_INLINE = "if-inline"
    SEQUENCE_MAP = "sequence-map"
    OPTIONAL = "optional"
    LOOP_SCAN = "loop-scan"
    LOOP_UNROLL = "loop-unroll"
    FUNCTION_INLINE = "function-inline"
    STACKED = "stacked"


GROUPS: dict[str, str] = {
    Group.SEQUENCE_OPS: "fold Construct/Empty/Insert/Erase/Identity chains; lower SequenceAt, "
    "SequenceLength, ConcatFromSequence, SplitToSequence",
    Group.IF_INLINE: "inline the taken branch of an If whose condition is a constant",
    Group.SEQUENCE_MAP: "inline SequenceMap over static sequences, one body copy per element",
    Group.OPTIONAL: "pass values through Optional / OptionalGetElement; fold OptionalHasElement",
    Group.LOOP_SCAN: "turn a Loop that appends to a list into a Loop with a scan output "
    "(the body's len(l) and l[-1] become values it carries)",
    Group.LOOP_UNROLL: "unroll a Loop with a constant trip count (<= --max-unroll) that reads "
    "a sequence",
    Group.FUNCTION_INLINE: "inline model-local functions whose sequences cross their boundary, "
    "when that leaves fewer sequence ops",
    Group.STACKED: "hold a list whose length or positions are known only at run time, and whose "
    "elements share one shape, as one tensor [n, *E]",
}
"""The rewrite groups a caller can switch off by name (``--skip`` / ``--only``)."""


def _names(value: Iterable[str] | str | None) -> tuple[str, ...] | None:
    if value is None:
        return None
    return (value,) if isinstance(value, str) else tuple(value)


def select_rewrites(
    skip: Iterable[str] | str = (), only: Iterable[str] | str | None = None
) -> frozenset[str]:
    """The set of disabled rewrite groups for ``skip``/``only`` (a string is one name);
    ValueError on an unknown name."""
    skipped = _names(skip) or ()
    kept = _names(only)
    names = set(skipped) | set(kept or ())
    unknown = sorted(names - set(GROUPS))
    if unknown:
        raise ValueError(f"unknown pass {', '.join(unknown)}; known: {', '.join(GROUPS)}")
    disabled = set(skipped)
    if kept is not None:
        disabled |= set(GROUPS) - set(kept)
    return frozenset(disabled)


def _check_limits(max_unroll: int, max_split: int, node_budget: int | None) -> None:
    if max_unroll < 0:
        raise ValueError("--max-unroll must be 0 or more")
    if max_split < 1:
        raise ValueError("--max-split must be at least 1")
    if node_budget is not None and node_budget < 0:
        raise ValueError("--node-budget must be 0 or more")


@dataclass(frozen=True)
class FoldOptions:
    """What the passes read: the options of :class:`~seqpasses.FoldSequencesPass` (an onnx_ir
    pass in a pipeline), a part of :class:`Options` (one ``optimize`` run, which adds what the
    run does around the passes: admission, input shapes, inlining, shape filling).

    ``freeze_inputs``: treat initializers that are also graph inputs as constants (a caller
    could override them at run time, so by default they are not).
    ``strict_spec``: follow the ONNX spec for ``SplitToSequence`` with a scalar split and
    ``keepdims=0`` (elements keep the axis) instead of ONNX Runtime and PyTorch (squeezed).
    ``max_split``: the most pieces a Split seqpasses writes may have; ``node_budget``: the
    nodes one run may add (None: the default for the model, see :data:`NODE_BUDGET_FLOOR`).
    """

    freeze_inputs: bool = False
    strict_spec: bool = False
    disabled: frozenset[str] = frozenset()  # rewrite groups that are switched off
    max_unroll: int = DEFAULT_MAX_UNROLL
    max_split: int = DEFAULT_MAX_SPLIT
    node_budget: int | None = None

    def __post_init__(self) -> None:
        """ValueError, with one line, for a value that makes no sense (as :class:`Options`
        says it): a group name no rewrite has, a negative limit."""
        unknown = sorted(set(self.disabled) - set(GROUPS))
        if unknown:
            raise ValueError(f"unknown pass {', '.join(unknown)}; known: {', '.join(GROUPS)}")
        _check_limits(self.max_unroll, self.max_split, self.node_budget)

    def enabled(self, group: Group) -> bool:
        """Whether the rewrites of ``group`` may run."""
        return group not in self.disabled


@dataclass(frozen=True)
class Options:
    """Every option of one optimize run (the API's keywords, the CLI's flags).

    ``skip``/``only`` name rewrite groups of :data:`GROUPS`; ``strict_input`` refuses a model
    the ONNX checker rejects (by default it is taken when ONNX Runtime loads it);
    ``input_shapes`` fixes graph input shapes (``(("x", (1, 3, 224, 224)),)``);
    ``inline_functions`` inlines model-local functions for back ends that reject them;
    ``infer_shapes`` fills in value types and shapes of the result (the CLI's default).
    """

    freeze_inputs: bool = False
    strict_spec: bool = False
    skip: tuple[str, ...] = ()
    only: tuple[str, ...] | None = None
    max_unroll: int = DEFAULT_MAX_UNROLL
    max_split: int = DEFAULT_MAX_SPLIT
    node_budget: int | None = None
    strict_input: bool = False
    input_shapes: tuple[tuple[str, tuple[int, ...]], ...] = field(default=())
    inline_functions: bool = False
    infer_shapes: bool = False

    @classmethod
    def of(cls, **given: Any) -> Options:
        """Options from keywords as callers write them (a string for one group name, a
        mapping of input shapes); ValueError on a value that makes no sense."""
        if "skip" in given:
            given["skip"] = _names(given["skip"]) or ()
        if "only" in given:
            given["only"] = _names(given["only"])
        shapes = given.get("input_shapes")
        if shapes is None:
            given["input_shapes"] = ()
        elif isinstance(shapes, Mapping):
            given["input_shapes"] = tuple(
                (name, tuple(int(d) for d in dims)) for name, dims in shapes.items()
            )
        options = cls(**given)
        options.validate()
        return options

    def validate(self) -> None:
        """ValueError, with one line, for a value that makes no sense."""
        select_rewrites(self.skip, self.only)
        _check_limits(self.max_unroll, self.max_split, self.node_budget)

    def fold(self) -> FoldOptions:
        return FoldOptions(
            freeze_inputs=self.freeze_inputs,
            strict_spec=self.strict_spec,
            disabled=select_rewrites(self.skip, self.only),
            max_unroll=self.max_unroll,
            max_split=self.max_split,
            node_budget=self.node_budget,
        )

    def shapes(self) -> dict[str, Sequence[int]]:
        return dict(self.input_shapes)

    def but(self, **changes: Any) -> Options:
        return replace(self, **changes)

"""The part of a model a rewrite changed, as two small models the spec oracle can run.

A node of the original's main graph is *unchanged* when the optimized model holds the same
node (same op, attributes, subgraphs, input and output names). The rest, on each side, is
the *region*: the original's sequence ops and what read them, and what replaced them
(rebuilt Loop/If bodies included). Its inputs are the values it reads from outside (graph
inputs, initializers, outputs of unchanged nodes: the same values in both models), its
outputs the values it makes that unchanged nodes or the graph outputs read (the same names in
both models). ``onnx.reference`` then runs the two regions on the inputs one ONNX Runtime run
of the original produced: it interprets what changed, not the whole model. When the two
sides do not meet at the same names the region cannot be cut, and the caller compares whole
models.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import onnx

from seqpasses.core.onnx_inference import node_reads

__all__ = ["Region", "changed_region", "with_outputs"]


def _key(node: onnx.NodeProto) -> tuple[object, ...]:
    """A node's identity up to its name: op, inputs, outputs, attributes (subgraphs too)."""
    attributes = []
    for attr in sorted(node.attribute, key=lambda a: a.name):
        copy = onnx.AttributeProto()
        copy.CopyFrom(attr)
        copy.ClearField("doc_string")
        attributes.append(copy.SerializeToString(deterministic=True))
    domain = "" if node.domain in ("", "ai.onnx") else node.domain
    return (domain, node.op_type, node.overload, tuple(node.input), tuple(node.output), *attributes)


@dataclass
class Region:
    """The changed nodes of each side as models of their own, and where they meet the rest."""

    before: onnx.ModelProto
    after: onnx.ModelProto
    captured: list[str]  # inputs produced by unchanged nodes of the original: taken from its run
    fed: list[str]  # graph inputs the regions read
    outputs: list[tuple[str, str]]  # what the two sides make that the rest reads: compared
    size: tuple[int, int]  # nodes of the region (original side) and of the original's graph

    @property
    def empty(self) -> bool:
        return not self.before.graph.node and not self.after.graph.node


def _part(
    model: onnx.ModelProto,
    nodes: list[onnx.NodeProto],
    inputs: Iterable[str],
    outputs: list[str],
) -> onnx.ModelProto:
    initializers = {init.name: init for init in model.graph.initializer}
    wanted = set(outputs)  # (an initializer may be a meeting's side, passed through)
    for node in nodes:
        wanted |= node_reads(node)
    graph = onnx.helper.make_graph(
        nodes,
        f"{model.graph.name}_region",
        [onnx.helper.make_empty_tensor_value_info(name) for name in inputs],
        [onnx.helper.make_empty_tensor_value_info(name) for name in outputs],
        [initializers[name] for name in sorted(wanted) if name in initializers],
    )
    part = onnx.helper.make_model(
        graph, opset_imports=list(model.opset_import), ir_version=model.ir_version
    )
    part.functions.extend(model.functions)
    return part


def _renamed(old: onnx.NodeProto, new: onnx.NodeProto) -> list[tuple[str, str]] | None:
    """The inputs ``new`` reads under other names than ``old``, when the two are otherwise the
    same node (a consumer of a rewritten value: only where it reads from changed); else None."""
    if (
        old.op_type != new.op_type
        or list(old.output) != list(new.output)
        or len(old.input) != len(new.input)
        or _key(old)[5:] != _key(new)[5:]
        or _key(old)[:3] != _key(new)[:3]
    ):
        return None
    pairs = [(a, b) for a, b in zip(old.input, new.input, strict=True) if a != b]
    return pairs if pairs and all(a and b for a, b in pairs) else None


def changed_region(before: onnx.ModelProto, after: onnx.ModelProto) -> Region | str:
    """The region the rewrite changed (see the module docstring), or why it cannot be cut."""
    after_keys = {_key(node) for node in after.graph.node}
    same = [_key(node) in after_keys for node in before.graph.node]
    kept_keys = {_key(n) for n, s in zip(before.graph.node, same, strict=True) if s}
    kept = [n for n, s in zip(before.graph.node, same, strict=True) if s]
    old = [n for n, s in zip(before.graph.node, same, strict=True) if not s]
    new = [n for n in after.graph.node if _key(n) not in kept_keys]
    made_old = {name for node in old for name in node.output if name}
    made_new = {name for node in new for name in node.output if name}
    # what both models have outside the region: a value of an unchanged node, a graph
    # input, an initializer of the same name
    common = {name for node in kept for name in node.output if name}
    common |= {i.name for i in before.graph.input}
    common |= {i.name for i in before.graph.initializer} & {i.name for i in after.graph.initializer}
    # a consumer that only reads a rewritten value under its new name is not part of the
    # region: the two names meet at its inputs instead (a Conv after a lowered split, reading
    # the element itself where it read a SequenceAt of a list of it), and what reads its
    # output inside the region is given the original's value (sound: every such meeting is
    # compared, so the values downstream of it are the same on both sides)
    pairs: list[tuple[str, str]] = []
    by_outputs = {tuple(node.output): node for node in new}
    peeled_old, peeled_new = [], []
    for node in old:
        twin = by_outputs.get(tuple(node.output))
        renamed = _renamed(node, twin) if twin is not None else None
        if (
            twin is None
            or renamed is None
            or not all(
                (a in made_old or b in made_new)
                and (a in made_old or a in common)
                and (b in made_new or b in common)
                for a, b in renamed
            )
        ):
            continue
        peeled_old.append(node)
        peeled_new.append(twin)
        pairs.extend(renamed)
    if peeled_old:
        gone_old, gone_new = {id(n) for n in peeled_old}, {id(n) for n in peeled_new}
        old = [n for n in old if id(n) not in gone_old]
        new = [n for n in new if id(n) not in gone_new]
        kept = [*kept, *peeled_old]
        made_old = {name for node in old for name in node.output if name}
        made_new = {name for node in new for name in node.output if name}
    made_kept = {name for node in kept for name in node.output if name}
    if made_new & made_kept:
        return "a rewritten node reuses the name of a value it did not change"
    read_outside = {o.name for o in before.graph.output}
    for node in kept:
        read_outside |= node_reads(node)
    meeting = {a for a, _ in pairs} | {b for _, b in pairs}
    outputs = sorted(((made_old | made_new) & read_outside) - meeting)
    missing = [name for name in outputs if name not in made_old or name not in made_new]
    if missing:
        return f"the two sides do not both make '{missing[0]}'"
    pairs = sorted(set(pairs)) + [(name, name) for name in outputs]
    initializers = {i.name for i in before.graph.initializer}
    initializers |= {i.name for i in after.graph.initializer}
    reads: set[str] = set()
    for node in (*old, *new):
        reads |= node_reads(node)
    # a side of a meeting its part does not make is passed through it (an input of the part)
    reads |= {a for a, _ in pairs if a not in made_old} | {b for _, b in pairs if b not in made_new}
    free = reads - made_old - made_new - initializers
    graph_inputs = {i.name for i in before.graph.input}
    unknown = free - graph_inputs - made_kept
    if unknown:
        return f"the region reads '{sorted(unknown)[0]}', made by neither model's rest"
    captured = sorted(free & made_kept)
    fed = sorted(free & graph_inputs)
    inputs = [*fed, *captured]
    return Region(
        _part(before, old, inputs, [a for a, _ in pairs]),
        _part(after, new, inputs, [b for _, b in pairs]),
        captured,
        fed,
        pairs,
        (len(old), len(before.graph.node)),
    )


def with_outputs(model: onnx.ModelProto, names: Iterable[str]) -> onnx.ModelProto:
    """A copy of ``model`` that also returns the values ``names`` (to capture them)."""
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    for name in added_outputs(model, names):
        copy.graph.output.append(onnx.helper.make_empty_tensor_value_info(name))
    return copy


def added_outputs(model: onnx.ModelProto, names: Iterable[str]) -> list[str]:
    """The outputs :func:`with_outputs` adds after ``model``'s own, in order: each of
    ``names`` once, none that is an output already."""
    present = {o.name for o in model.graph.output}
    return [name for name in dict.fromkeys(names) if name not in present]


def output_positions(model: onnx.ModelProto, names: Iterable[str]) -> dict[str, int]:
    """Where each of ``names`` is among the outputs of ``with_outputs(model, names)``."""
    names = list(names)
    order = [o.name for o in model.graph.output] + added_outputs(model, names)
    first: dict[str, int] = {}
    for k, name in enumerate(order):
        first.setdefault(name, k)
    return {name: first[name] for name in names}

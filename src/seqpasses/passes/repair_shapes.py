"""Declared shapes a rewrite made untrue, repaired so that the checker passes.

Where seqpasses follows ONNX Runtime and squeezes the chunks of a scalar split of 1 with
``keepdims=0`` (what PyTorch computed), an exporter that followed the spec declared the
elements (and what depends on them) with the axis kept; and a value that replaced one whose
declared shape it contradicts (an exporter's guess) reaches ops declared for the guess. Each
value that depends on such a diverged one is inferred again; a declared shape the result
contradicts gets the computed one, and the report's notes say so. Through a Loop body's or If
branch's outputs the repair reaches the node's own outputs.

Where a rewrite kept a shape it could not prove (a graph output declared as it was, over a
value whose shape seqpasses does not know) or made a list more precisely typed than the value
it replaced (a list written back for a Loop or SequenceMap whose body declared a guess),
:func:`repair_declarations` runs ONNX's own inference, and drops each declared shape it finds
contradicting what the graph computes.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING

import onnx
import onnx_ir as ir

from seqpasses.core.dims import contradicts, merge_shapes, shape_text, unknown
from seqpasses.core.graph import all_nodes, is_default, subgraphs
from seqpasses.core.onnx_inference import infer
from seqpasses.core.shapes import ShapeOracle
from seqpasses.core.skeleton import skeleton

if TYPE_CHECKING:  # (the walk's machinery is loaded only by what runs a walk)
    from seqpasses.walk.walker import Walker

__all__ = ["RepairShapesPass", "repair_declarations"]


def _computed(shape: ir.Shape | None) -> str:
    """What a repair note says was declared in place of a contradicted shape."""
    if shape is None:
        return "no shape known: declared without one"
    # (a dim onnx's inference names ``unk__2`` is one it does not know)
    shown = ir.Shape([ir.SymbolicDim(None) if unknown(d) else d for d in shape])
    return f"{shape_text(shown)}: declared so instead"


class RepairShapesPass(ir.passes.InPlacePass):
    """Re-infer what depends on the walk's diverged values (see the module docstring)."""

    def __init__(self, walker: Walker) -> None:
        super().__init__()
        self.walker = walker

    def call(self, model: ir.Model) -> ir.passes.PassResult:
        facts, ctx, edits = self.walker.facts, self.walker.ctx, self.walker.edits
        work = list(edits.recorder.diverged)  # a node is inferred again each time an input changes
        modified = False
        while work:
            value = work.pop()
            for use in value.uses():
                node = use.node
                if not is_default(node):
                    continue
                oracle = ShapeOracle(
                    facts.opset_of(node), ctx.constant, self.walker.functions, writes=True
                )
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
                        edits.recorder.note(
                            f"'{out.name}': declared shape {shape_text(out.shape)} contradicts "
                            f"what the graph computes, {_computed(shape)}"
                        )
                    out.type = out.type or type_
                    out.shape = shape
                    work.append(out)
                    modified = True
            changed = self._owner_outputs(value)
            work.extend(changed)
            modified |= bool(changed)
        return ir.passes.PassResult(model, modified=modified)

    def _owner_outputs(self, value: ir.Value) -> list[ir.Value]:
        """A repaired output of a Loop body or If branch: the Loop's scan output is
        ``[K, *shape]``; any other output of the node that the new shape contradicts loses
        its declared shape (it cannot be inferred without running the loop)."""
        owner = self.walker.facts.owner(value.graph)
        if owner is None or not value.is_graph_output() or value.shape is None:
            return []
        node, _ = owner
        graph = value.graph
        assert graph is not None
        changed: list[ir.Value] = []
        for k, output in enumerate(graph.outputs):
            if output is not value:
                continue
            out, shape = self._owner_output(node, k, value)
            if out is None or out.shape is None:
                continue
            if not contradicts(out.shape, value.shape if shape is None else shape):
                continue
            if shape is None and out.is_graph_output():
                # a graph output must declare a shape, and none fits every case: left as is
                self.walker.edits.recorder.note(
                    f"'{out.name}': declared shape {shape_text(out.shape)} may not hold after "
                    "the rewrite (its rank differs between iterations or branches)"
                )
                continue
            computed = (
                f"{shape_text(shape)}: declared so instead"
                if shape is not None
                else ("no shape known: declared without one")
            )
            self.walker.edits.recorder.note(
                f"'{out.name}': declared shape {shape_text(out.shape)} contradicts what the "
                f"graph computes, {computed}"
            )
            out.shape = shape
            changed.append(out)
        return changed

    @staticmethod
    def _owner_output(
        node: ir.Node, k: int, value: ir.Value
    ) -> tuple[ir.Value | None, ir.Shape | None]:
        """The output of ``node`` that body/branch output ``k`` (``value``) feeds, and the
        shape it has (None: unknown)."""
        assert value.shape is not None
        carried = len(node.inputs) - 2
        if node.op_type == "Loop" and k >= 1 + carried:
            out = node.outputs[k - 1]
            first = out.shape[0] if out.shape is not None and len(out.shape) else None
            return out, ir.Shape(
                [first if first is not None else ir.SymbolicDim(None), *value.shape]
            )
        if node.op_type == "If":
            branches = [
                a.as_graph() for a in node.attributes.values() if a.type == ir.AttributeType.GRAPH
            ]
            shapes = [b.outputs[k].shape for b in branches if len(b.outputs) > k]
            return node.outputs[k], merge_shapes(shapes)
        if node.op_type == "Loop" and k >= 1:
            # a carried value: the initial one after zero iterations, the body's after more
            initial = node.inputs[k + 1] if k + 1 < len(node.inputs) else None
            shapes = [initial.shape if initial is not None else None, value.shape]
            return node.outputs[k - 1], merge_shapes(shapes)
        return None, None


_CONFLICT = re.compile(
    r"\(op_type:[^,()]*, node name: ([^()]*)\): \[ShapeInferenceError\] (?:Inferred shape and "
    r"existing shape differ|Can't merge shape info)"
)
_ROUNDS = 16


def repair_declarations(model: ir.Model, note: Callable[[str], None]) -> bool:
    """Declared shapes that contradict what ONNX's own inference computes for the graph as
    it now is, replaced (see the module docstring); whether any were. ONNX's strict inference
    names each node whose inferred output shape contradicts the declared one; that node's
    outputs (and, for a Loop or an If, its subgraphs' outputs, which its outputs follow) have
    their declared shapes set aside and get what ONNX infers without them (none where it
    infers none), until the inference finds no contradiction (or names no node it can find:
    nothing else is touched)."""
    unnamed = [node for node in all_nodes(model) if not node.name]
    for k, node in enumerate(unnamed):  # (ONNX names a node it finds fault with by its name)
        node.name = f"seqpasses_unnamed_{k}"
    try:
        return _repair_declarations(model, note)
    finally:
        for node in unnamed:
            node.name = None


def _repair_declarations(model: ir.Model, note: Callable[[str], None]) -> bool:
    changed = False
    for _ in range(_ROUNDS):
        try:
            infer(skeleton(model).proto, strict=True)  # (onnx's, in linear pieces; no weights)
            return changed
        except onnx.shape_inference.InferenceError as error:
            names = set(_CONFLICT.findall(str(error)))
        except Exception:
            return changed
        dropped: list[tuple[ir.Value, ir.Shape]] = []
        for node in all_nodes(model):
            if node.name not in names:
                continue
            for value in [*node.outputs, *(o for _, g in subgraphs(node) for o in g.outputs)]:
                if value.shape is not None:
                    dropped.append((value, value.shape))
                    value.shape = None
        if not dropped:
            return changed
        inferred = _inferred_shapes(model)
        for value, declared in dropped:
            value.shape = inferred.get(value)
            if value.shape is None or contradicts(declared, value.shape):
                note(
                    f"'{value.name}': declared shape {shape_text(declared)} contradicts what "
                    f"the graph computes, {_computed(value.shape)}"
                )
        changed = True
    return changed


def _inferred_shapes(model: ir.Model) -> dict[ir.Value, ir.Shape]:
    """What ONNX's (lenient) inference gives the values of the main graph and its subgraphs
    (the graphs of the model and of its serialized copy walked side by side)."""
    found: dict[ir.Value, ir.Shape] = {}
    try:
        inferred = infer(skeleton(model).proto)
    except Exception:
        return found
    _collect(model.graph, inferred.graph, found)
    return found


def _collect(graph: ir.Graph, proto: onnx.GraphProto, found: dict[ir.Value, ir.Shape]) -> None:
    types = {v.name: v.type for v in (*proto.input, *proto.value_info, *proto.output)}
    values = [*graph.inputs, *(out for node in graph for out in node.outputs), *graph.outputs]
    for value in values:
        type_proto = types.get(value.name or "")
        shape = ir.serde.deserialize_type_proto_for_shape(type_proto) if type_proto else None
        if shape is not None:
            found[value] = shape
    if len(proto.node) != len(graph):
        return
    for node, node_proto in zip(graph, proto.node, strict=True):
        held = {a.name: a for a in node_proto.attribute}
        for name, attr in node.attributes.items():
            inner = held.get(name)
            if attr.is_ref() or inner is None:
                continue
            if attr.type == ir.AttributeType.GRAPH:
                _collect(attr.as_graph(), inner.g, found)
            elif attr.type == ir.AttributeType.GRAPHS:
                for sub, sub_proto in zip(attr.as_graphs(), inner.graphs, strict=False):
                    _collect(sub, sub_proto, found)

"""Shapes on demand: ask ONNX's own per-node inference only for values a rewrite needs.

A rewrite that needs a rank or a dim (SplitToSequence's chunk count, ConcatFromSequence's axis
check) asks :meth:`ShapeOracle.shape`. When the value has no shape yet, the oracle walks back
through its producers (iteratively, each node at most once) and runs
``onnx.shape_inference.infer_node_outputs`` on each: no whole-graph inference. The answers
are kept by the oracle, not written: the walk's applier declares them after the transfer
that asked (so that they also end up in the output model).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np
import onnx
import onnx_ir as ir

from seqpasses.core.calls import call_types
from seqpasses.core.constants import MAX_ELEMENTS, constant_array
from seqpasses.core.dims import (
    contradicts,
    fill_shape,
    merge_shapes,
)
from seqpasses.core.graph import GRAPH_HOLDERS, is_default
from seqpasses.core.partial import Known, partial_vector
from seqpasses.core.shape_rules import (
    BROADCASTING,
    COMPARISONS,
    ELEMENTWISE,
    SAME_AS_INPUT,
    SHAPED_BY_VECTOR,
    TypeAndShape,
    broadcast,
    constant_tensor,
    named_dims,
    sequence_type,
    vector_shape,
)
from seqpasses.core.slices import constant_gap, slice_dims

__all__ = ["ShapeOracle", "TypeAndShape"]


class ShapeOracle:
    """Finds the missing types and shapes of tensor values, one producer at a time. What it
    finds it keeps (:meth:`seen`) and never writes: the walk's applier declares it
    (:meth:`settle`), after the transfer that asked; a pass of its own (``writes``) has it
    declared at once."""

    def __init__(
        self,
        opset: int,
        constant: Callable[[ir.Value], np.ndarray | None] | None = None,
        functions: Mapping[ir.OperatorIdentifier, ir.Function] | None = None,
        *,
        writes: bool = False,
    ) -> None:
        self.opset = opset
        self.writes = writes  # (a pass of its own: what it finds is declared at once)
        self.constant = constant  # what a value holds before run time, beyond constants
        self.functions = functions or {}  # the model-local functions calls are inferred through
        self.tried: set[ir.Node] = set()
        self.found: dict[ir.Value, TypeAndShape] = {}  # (what is not declared yet)
        self._protos: dict[int, onnx.FunctionProto] = {}

    def _infer_call(
        self, node: ir.Node, inputs: list[TypeAndShape | None]
    ) -> list[TypeAndShape] | None:
        return call_types(self.functions, self._protos, node, inputs)

    def seen(self, value: ir.Value) -> TypeAndShape:
        """``value``'s type and shape as declared, or as found since (no inference)."""
        found = self.found.get(value)
        return found if found is not None else (value.type, value.shape)

    def shape(self, value: ir.Value) -> ir.Shape | None:
        """``value``'s shape: as declared, else inferred through its producers (a constant's:
        its tensor's, whatever its declaration says)."""
        return self.known(value)[1]

    def type(self, value: ir.Value) -> ir.TypeProtocol | None:
        """``value``'s type: as declared, else inferred through its producers."""
        return self.known(value)[0]

    def known(self, value: ir.Value) -> TypeAndShape:
        """``value``'s type and shape (see :meth:`shape`)."""
        type_, shape = self.seen(value)
        tensor = constant_tensor(value)
        if tensor is not None:  # a constant's tensor says what its declaration may not
            real = ir.Shape([d if isinstance(d, int) else None for d in tensor.shape])
            if shape != real or type_ is None:
                type_ = ir.TensorType(tensor.dtype) if type_ is None else type_
                shape = real
                self._found(value, (type_, shape))
        if shape is None:
            self._infer_upstream(value)
            type_, shape = self.seen(value)
        return type_, shape

    def _found(self, value: ir.Value, type_and_shape: TypeAndShape) -> None:
        if self.writes:
            value.type, value.shape = type_and_shape
        else:
            self.found[value] = type_and_shape

    def settle(self) -> dict[ir.Value, TypeAndShape]:
        """What was found since the last call, to be declared (and forgotten here)."""
        found, self.found = self.found, {}
        return found

    def _infer_upstream(self, value: ir.Value) -> None:
        stack: list[ir.Node] = []
        producer = value.producer()
        if producer is not None and producer not in self.tried:
            stack.append(producer)
        while stack:
            node = stack[-1]
            pending = [
                p
                for v in node.inputs
                if v is not None and self.seen(v)[1] is None
                for p in [v.producer()]
                if p is not None and p not in self.tried and p is not node
            ]
            if pending:
                stack.extend(pending)
                continue
            stack.pop()
            if node not in self.tried:
                self.tried.add(node)
                self._infer_node(node)

    def _infer_node(self, node: ir.Node) -> None:
        inputs = [self.seen(v) if v is not None else None for v in node.inputs]
        for out, (type_, shape) in zip(node.outputs, self.infer(node, inputs), strict=True):
            declared_type, declared_shape = self.seen(out)
            if declared_type is None or declared_shape is None:
                self._found(
                    out,
                    (
                        type_ if declared_type is None else declared_type,
                        shape if declared_shape is None else declared_shape,
                    ),
                )

    def infer(
        self,
        node: ir.Node,
        inputs: list[TypeAndShape | None],
        errors: list[str] | None = None,
        known: Mapping[ir.Value, TypeAndShape] | None = None,
    ) -> list[TypeAndShape]:
        """The types and shapes of ``node``'s outputs for inputs of the given types and shapes.

        Unknown outputs are ``(None, None)``; nothing is stored on the values. Where onnx's
        inference rejects the inputs (incompatible dims: the node would fail the checker),
        its message goes to ``errors`` when given. ``known`` holds the shapes of the values
        around ``node`` where their declarations are not to be trusted (a loop body's, inferred
        afresh): a value it lacks is read as declared (or inferred)."""
        unknown: list[TypeAndShape] = [(None, None)] * len(node.outputs)
        if not is_default(node):
            return self._infer_call(node, inputs) or unknown
        if node.op_type == "If":
            return self._branches(node, known) or unknown
        if node.op_type in GRAPH_HOLDERS:
            return unknown  # (a node's own inference does not see into its subgraphs)
        first = inputs[0] if inputs else None
        if (
            node.op_type in SAME_AS_INPUT
            and first is not None
            and len(node.outputs) == 1
            and isinstance(first[0], ir.TensorType)
        ):
            return [(first[0], ir.Shape(list(first[1])) if first[1] is not None else None)]
        if (
            node.op_type in ELEMENTWISE
            and len(inputs) == 2
            and len(node.outputs) == 1
            and first is not None
            and inputs[1] is not None
            and isinstance(first[0], ir.TensorType)
            and first[0] == inputs[1][0]
            and first[1] is not None
            and first[1] == inputs[1][1]
            and all(isinstance(d, int) for d in first[1])
        ):  # the same numeric shape on both sides: no broadcasting to work out
            return [(first[0], ir.Shape(list(first[1])))]
        listed = sequence_type(node, inputs)
        if listed is not None:
            return [(listed, None)]
        pairs = list(zip(node.inputs, inputs, strict=True))
        if any(v is not None and (t is None or t[0] is None) for v, t in pairs):
            return unknown
        try:
            schema = onnx.defs.get_schema(node.op_type, self.opset, "")
            proto = ir.serde.serialize_node(node)
            # the node's own names are not unique while a walk runs (onnx_ir names new values
            # per graph: a Split's output and an axes Constant of a body can both be "val_1"),
            # so inputs and outputs are named by position for the inference
            types = {}
            data: dict[str, onnx.TensorProto] = {}
            for k, (v, given) in enumerate(zip(node.inputs, inputs, strict=True)):
                if v is None or not v.name or given is None:
                    continue
                name = proto.input[k] = f"input_{k}"
                probe = ir.Value(name=name, type=given[0], shape=given[1])
                types[name] = ir.serde.serialize_value(probe).type
                if v.is_graph_input():
                    continue
                array = self.constant(v) if self.constant is not None else constant_array(v)
                if array is not None and array.size <= MAX_ELEMENTS:
                    data[name] = onnx.numpy_helper.from_array(array, name)
            for k in range(len(proto.output)):
                if proto.output[k]:
                    proto.output[k] = f"output_{k}"
            opsets = [onnx.helper.make_opsetid("", self.opset)]
            inferred = onnx.shape_inference.infer_node_outputs(
                schema, proto, types, data, opset_imports=opsets
            )
        except onnx.shape_inference.InferenceError as error:
            if errors is not None:
                errors.append(f"{node.op_type}: {str(error).strip()}")
            return unknown
        except Exception:
            return unknown
        result: list[TypeAndShape] = []
        for k, out in enumerate(node.outputs):
            type_proto = inferred.get(f"output_{k}") if out.name else None
            if type_proto is None:
                result.append((None, None))
                continue
            result.append(
                (
                    ir.serde.deserialize_type_proto_for_type(type_proto),
                    ir.serde.deserialize_type_proto_for_shape(type_proto),
                )
            )
        if node.op_type == "Slice" and result and result[0][1] is not None:
            result[0] = (result[0][0], self.slice_dims(node, inputs, result[0][1], known))
        if node.op_type in BROADCASTING and len(result) == 1 and result[0][1] is None:
            # (onnx's inference of the comparisons it defines as functions gives no shape)
            shapes = [given[1] if given is not None else None for given in inputs]
            if node.op_type == "Where":
                shapes = shapes[:3]
            broadened = broadcast(shapes)
            if broadened is not None:
                type_ = result[0][0]
                if type_ is None and node.op_type in COMPARISONS:
                    type_ = ir.TensorType(ir.DataType.BOOL)
                result[0] = (type_, broadened)
        if node.op_type in ("Range", "Concat") and len(result) == 1:  # (arange(n), M+N)
            read = lambda k: self.vector(node, k, inputs, known)  # noqa: E731
            result[0] = (result[0][0], named_dims(node, inputs, result[0][1], read))
        if node.op_type in SHAPED_BY_VECTOR and len(result) == 1:
            shaped = self.vector_shape(node, inputs, known)
            type_, shape = result[0]
            if shaped is not None and not contradicts(shape, shaped):
                result[0] = (type_, fill_shape(shape, shaped, numbers_win=True) or shaped)
        return result

    def vector(
        self,
        node: ir.Node,
        k: int,
        inputs: list[TypeAndShape | None],
        known: Mapping[ir.Value, TypeAndShape] | None,
    ) -> list[Known] | None:
        """The entries of ``node``'s input ``k`` known before run time (a partial vector:
        numbers, named dims, or None), read through the shapes given and known."""
        value = node.inputs[k] if k < len(node.inputs) else None
        if value is None:
            return None
        given = inputs[k] if k < len(inputs) else None

        def shape_of(v: ir.Value) -> ir.Shape | None:
            if v is value and given is not None:
                return given[1]
            if known is not None and v in known:
                return known[v][1]
            return self.shape(v)

        return partial_vector(value, self.constant or constant_array, shape_of)

    def vector_shape(
        self,
        node: ir.Node,
        inputs: list[TypeAndShape | None],
        known: Mapping[ir.Value, TypeAndShape] | None,
    ) -> ir.Shape | None:
        """The output shape of an op shaped by a vector input, that vector read in part
        (:func:`~seqpasses.core.shape_rules.vector_shape`)."""
        return vector_shape(node, inputs, lambda k: self.vector(node, k, inputs, known))

    def _branches(
        self, node: ir.Node, known: Mapping[ir.Value, TypeAndShape] | None
    ) -> list[TypeAndShape] | None:
        """An If's outputs: what both branches give, each followed node by node from what is
        known around the If (``known``: values whose declarations are not trusted), the type
        where they agree and the dims they share (None where a branch cannot be followed)."""
        given: list[list[TypeAndShape]] = []
        for name in ("then_branch", "else_branch"):
            attr = node.attributes.get(name)
            if attr is None or attr.is_ref() or attr.type != ir.AttributeType.GRAPH:
                return None
            branch = attr.as_graph()
            if len(branch.outputs) != len(node.outputs):
                return None
            local: dict[ir.Value, TypeAndShape] = dict(known or {})
            for inner in branch:
                inputs = [self._read(v, branch, local) for v in inner.inputs]
                inferred = self.infer(inner, inputs, None, local)
                local.update(zip(inner.outputs, inferred, strict=True))
            given.append([self._read(v, branch, local) or (None, None) for v in branch.outputs])
        merged: list[TypeAndShape] = []
        for (then_type, then_shape), (else_type, else_shape) in zip(*given, strict=True):
            if then_type is None or then_type != else_type:
                merged.append((None, None))
                continue
            merged.append((then_type, merge_shapes([then_shape, else_shape])))
        return merged

    def most_entries(
        self,
        value: ir.Value | None,
        given: TypeAndShape | None = None,
        known: Mapping[ir.Value, TypeAndShape] | None = None,
    ) -> int | None:
        """The most entries a 1-D value can hold (None: not known): its dim when that is a
        number; for a ``Slice`` of a 1-D tensor along its one axis, at most the tensor's
        length, and at most ``k`` where its ends are its starts plus a constant ``k`` (step 1):
        ``x[i:i+1]`` holds one entry, or none."""
        if value is None:
            return None
        shape = given[1] if given is not None else None
        if shape is None and known is not None and value in known:
            shape = known[value][1]
        if shape is None:
            shape = self.seen(value)[1]
        if shape is not None and len(shape) == 1 and isinstance(shape[0], int):
            return shape[0]
        node = value.producer()
        if node is None or node.op_type != "Slice" or not is_default(node) or len(node.inputs) < 3:
            return None
        data = node.inputs[0]
        if data is None:
            return None
        data_shape = (known[data][1] if known is not None and data in known else None) or (
            self.shape(data)
        )
        if data_shape is None or len(data_shape) != 1:
            return None
        bounds = [data_shape[0]] if isinstance(data_shape[0], int) else []
        steps = node.inputs[4] if len(node.inputs) > 4 else None
        if steps is None:
            gap = constant_gap(node.inputs[1], node.inputs[2], self.constant or constant_array)
            if gap is not None:
                bounds.append(max(gap, 0))
        return min(bounds) if bounds else None

    def _read(
        self, v: ir.Value | None, graph: ir.Graph, local: Mapping[ir.Value, TypeAndShape]
    ) -> TypeAndShape | None:
        """What is known of ``v`` where ``graph`` is followed afresh (``local``): a value made
        in ``graph`` and not in ``local`` is unknown; a constant of it, or an outer value, is
        as the oracle says."""
        if v is None:
            return None
        if v in local:
            return local[v]
        if v.graph is graph and v.producer() is not None:
            return (None, None)
        return self.known(v)

    def slice_dims(
        self,
        node: ir.Node,
        inputs: list[TypeAndShape | None],
        shape: ir.Shape,
        known: Mapping[ir.Value, TypeAndShape] | None,
    ) -> ir.Shape:
        """A Slice's output dims beyond onnx's (:func:`~seqpasses.core.slices.slice_dims`)."""

        def vector(k: int) -> list[Known] | None:
            return self.vector(node, k, inputs, known)

        def most() -> int | None:
            return self.most_entries(node.inputs[1], inputs[1] if len(inputs) > 1 else None, known)

        return slice_dims(node, inputs, shape, vector, most)


def _contradicts(a: ir.Shape, b: ir.Shape) -> bool:
    return len(a) != len(b) or any(
        isinstance(x, int) and isinstance(y, int) and x != y for x, y in zip(a, b, strict=True)
    )

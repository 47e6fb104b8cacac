"""What a call of a model-local function gives: onnx's inference of the function's body for
the call's input types (the shape oracle asks it of a node that calls one)."""

from __future__ import annotations

from collections.abc import Mapping

import onnx
import onnx_ir as ir

from seqpasses.core.shape_rules import TypeAndShape

__all__ = ["call_types"]


def call_types(
    functions: Mapping[ir.OperatorIdentifier, ir.Function],
    protos: dict[int, onnx.FunctionProto],
    node: ir.Node,
    inputs: list[TypeAndShape | None],
) -> list[TypeAndShape] | None:
    """What a call of a model-local function (of ``functions``) gives for inputs of these
    types (onnx's inference of the function body; ``protos``: the functions serialized so
    far); None when it cannot tell."""
    function = functions.get(node.op_identifier())
    if function is None or any(i is None or i[0] is None for i in inputs):
        return None
    proto = protos.get(id(function))
    if proto is None:
        proto = protos[id(function)] = ir.serde.serialize_function(function)
    try:
        types = [
            ir.serde.serialize_value(ir.Value(name="x", type=i[0], shape=i[1])).type
            for i in inputs
            if i is not None
        ]
        attributes = [
            ir.serde.serialize_attribute(a) for a in node.attributes.values() if not a.is_ref()
        ]
        found = onnx.shape_inference.infer_function_output_types(proto, types, attributes)
    except Exception:
        return None
    if len(found) != len(node.outputs):
        return None
    return [
        (
            ir.serde.deserialize_type_proto_for_type(t) if t.WhichOneof("value") else None,
            ir.serde.deserialize_type_proto_for_shape(t) if t.WhichOneof("value") else None,
        )
        for t in found
    ]

"""The constants seqpasses wrote in the main graph become initializers.

A rewrite needs small constants (Unsqueeze axes, Split sizes, positions). Written as
``Constant`` nodes they are one more op for a back end to convert, and some have no converter
for every opset's ``Constant`` (onnx2torch at opset 19+); an initializer is data every back end
takes. Only the main graph's (a subgraph's initializers are not taken everywhere), only the
nodes this run made (the model's own ``Constant`` nodes stay as they are), and only from IR
version 4 (before it an initializer must also be a graph input).
"""

from __future__ import annotations

from collections.abc import Container

import onnx_ir as ir

from seqpasses.core.graph import is_default

__all__ = ["constants_to_initializers"]


def constants_to_initializers(model: ir.Model, created: Container[ir.Node]) -> int:
    """Turn the ``Constant`` nodes of ``created`` in ``model``'s main graph into initializers;
    how many."""
    if model.ir_version < 4:
        return 0
    graph = model.graph
    moved = 0
    for node in list(graph):
        if node not in created or node.op_type != "Constant" or not is_default(node):
            continue
        attr = node.attributes.get("value")
        out = node.outputs[0]
        if (
            attr is None
            or attr.is_ref()
            or attr.type != ir.AttributeType.TENSOR
            or out.is_graph_output()
            or not out.name
            or out.name in graph.initializers
        ):
            continue
        # a copy: an initializer takes its value's name, and the tensor may be the caller's
        # (a copy of one of the model's own Constant nodes, inlined from a branch)
        array = attr.as_tensor().numpy()
        tensor = ir.tensor(array) if array.dtype == object else ir.Tensor(array)
        value = ir.Value(name=None, type=out.type, shape=out.shape, const_value=tensor)
        out.replace_all_uses_with(value)
        graph.remove(node, safe=True)
        value.name, out.name = out.name, None
        graph.register_initializer(value)
        moved += 1
    return moved

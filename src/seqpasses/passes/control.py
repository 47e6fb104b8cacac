"""Transfer functions for control flow and optionals around static sequences.

1. ``If`` with a constant condition: the taken branch is inlined (then walked, so what it
   computes folds like straight-line code).
2. ``SequenceMap`` over static sequences: one copy of the body per element, no SequenceMap left.
3. ``Optional`` / ``OptionalGetElement`` / ``OptionalHasElement``: a wrapped value passes through;
   ``OptionalHasElement`` of a known optional becomes a bool ``Constant``.

Loops are in :mod:`seqpasses.passes.loops`. Inlining copies nodes with onnx_ir's cloner, so
nested subgraphs keep their references to the copied values.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import onnx_ir as ir

from seqpasses.passes.fold import TRANSFER, Folder, Scope, drop_subgraphs
from seqpasses.sequence import StaticSequence

__all__ = ["drop_subgraphs", "inline_graph"]


def inline_graph(
    f: Folder, scope: Scope, anchor: ir.Node, body: ir.Graph, inputs: Mapping[ir.Value, ir.Value]
) -> tuple[list[ir.Node], list[ir.Value]]:
    """Copy ``body``'s nodes before ``anchor`` with its inputs bound; return nodes and outputs.

    The copies are walked at once, so static sequences inside them are known to what follows.
    """
    base = anchor.name or anchor.op_type
    copy = body.clone(allow_outer_scope_values=True)
    bound = {
        mine: inputs.get(theirs) for theirs, mine in zip(body.inputs, copy.inputs, strict=True)
    }
    outputs = [bound.get(out) or out for out in copy.outputs]
    copy.outputs.clear()
    for mine, value in bound.items():
        if value is not None:
            mine.replace_all_uses_with(value)
    copy.inputs.clear()
    constants: list[ir.Node] = []
    for name in list(copy.initializers):
        init = copy.initializers.pop(name)
        fresh = f.next_name(base, name).replace("/", "_")
        if init.const_value is not None:
            # the clone shares the tensor (and, for a loaded model, the caller's TensorProto):
            # renaming the value would rename it there too
            init.const_value = ir.tensor(init.const_value.numpy(), name=fresh)
        init.name = fresh
        if isinstance(scope.graph, ir.Graph):
            scope.graph.register_initializer(init)
            f.registered.append((scope.graph, init.name))
        elif init.const_value is not None:  # a function has no initializers: a Constant
            constant = ir.node("Constant", [], {"value": init.const_value}, name=init.name)
            constant.outputs[0].type, constant.outputs[0].shape = init.type, init.shape
            init.replace_all_uses_with(constant.outputs[0])
            constants.append(constant)
    nodes = list(copy)
    copy.remove(nodes)
    for new, node in zip(nodes, body, strict=True):
        f.origin[new] = node
        for inner, original in zip(_nested(new), _nested(node), strict=True):
            f.origin[inner] = original
        new.name = f.next_name(base, node.name or node.op_type)
        for out in new.outputs:
            out.name = None
            # a body's declared shapes are guesses, often true of one iteration only (an
            # exporter's dim names would claim copies of different shapes are alike)
            out.shape = None
    scope.graph.insert_before(anchor, [*constants, *nodes])
    f.created.update(constants)
    f.created.update(nodes)
    for node in nodes:
        f.visit(node, scope)
    # the walk may have replaced an output (an inner If inlined, a Loop rebuilt)
    return nodes, [f.current(v) for v in outputs]


def _nested(node: ir.Node) -> list[ir.Node]:
    """The nodes of ``node``'s subgraphs, in one fixed order (a copy lists its own alike)."""
    found: list[ir.Node] = []
    for attr in node.attributes.values():
        if attr.is_ref() or attr.type not in (ir.AttributeType.GRAPH, ir.AttributeType.GRAPHS):
            continue
        graphs = [attr.as_graph()] if attr.type == ir.AttributeType.GRAPH else attr.as_graphs()
        for graph in graphs:
            found.extend(ir.traversal.RecursiveGraphIterator(graph))
    return found


def _outputs_can_move(f: Folder, node: ir.Node, scope: Scope, outputs: list[ir.Value]) -> str:
    """Why an If's outputs cannot be replaced by ``outputs`` (empty when they can).

    A graph output that must become an Identity of a non-tensor value needs opset 14+.
    """
    for old, new in zip(node.outputs, outputs, strict=True):
        if not old.is_graph_output() or new.producer() in f.created:
            continue
        if not isinstance(new.type, ir.TensorType) and f.static(new) is None and scope.opset < 14:
            return "a non-tensor graph output would need Identity, which opset < 14 lacks"
    return ""


def _branch_outputs(body: ir.Graph, values: list[ir.Value]) -> list[ir.Value]:
    """``values`` as outputs of ``body``: an Identity for outer values and repeats."""
    seen: set[ir.Value] = set()
    result = []
    for value in values:
        producer = value.producer()
        if producer is None or producer.graph is not body or value in seen:
            ident = ir.node("Identity", [value])
            body.append(ident)
            ident.outputs[0].type, ident.outputs[0].shape = value.type, value.shape
            value = ident.outputs[0]
        seen.add(value)
        result.append(value)
    return result


def _if_static_sequences(f: Folder, node: ir.Node, scope: Scope) -> bool:
    """Run-time condition: sequence outputs static in both branches with one length become
    one tensor output per element, so what reads them can be lowered."""
    then_attr, else_attr = node.attributes.get("then_branch"), node.attributes.get("else_branch")
    if then_attr is None or else_attr is None:
        return False
    branches = (then_attr.as_graph(), else_attr.as_graph())
    converted: dict[int, tuple[StaticSequence, StaticSequence]] = {}
    for k in range(len(node.outputs)):
        pair = (f.static(branches[0].outputs[k]), f.static(branches[1].outputs[k]))
        if pair[0] is None or pair[1] is None or len(pair[0]) != len(pair[1]):
            continue
        for value in (*pair[0].elements, *pair[1].elements):
            scope.shapes.shape(value)  # types for the new If outputs
        converted[k] = (pair[0], pair[1])
    if not converted:
        return False
    for b, branch in enumerate(branches):
        outputs: list[ir.Value] = []
        for k, out in enumerate(list(branch.outputs)):
            outputs.extend(converted[k][b].elements if k in converted else [out])
        outputs = _branch_outputs(branch, outputs)
        while len(branch.outputs):
            branch.outputs.pop()
        branch.outputs.extend(outputs)
    count = len(branches[0].outputs)
    new = ir.Node(
        "",
        "If",
        [node.inputs[0]],
        [
            ir.Attr("then_branch", ir.AttributeType.GRAPH, branches[0]),
            ir.Attr("else_branch", ir.AttributeType.GRAPH, branches[1]),
        ],
        num_outputs=count,
        name=node.name,
    )
    scope.graph.insert_before(node, new)
    f.created.add(new)
    index = 0
    for k, old in enumerate(node.outputs):
        if k in converted:
            first, second = converted[k]
            elements = list(new.outputs)[index : index + len(first)]
            for element, in_then, in_else in zip(
                elements, first.elements, second.elements, strict=True
            ):
                element.type = in_then.type or in_else.type
                element.shape = in_then.shape if in_then.shape == in_else.shape else None
            f.state[old] = StaticSequence(tuple(elements), first.dtype or second.dtype)
            index += len(first)
        else:
            new.outputs[index].type, new.outputs[index].shape = old.type, old.shape
            f.replace(old, new.outputs[index], scope)
            index += 1
    node.attributes.pop("then_branch")
    node.attributes.pop("else_branch")
    return f.applied("if-static-sequences", node, f"{len(converted)} sequence output(s) as tensors")


def _if(f: Folder, node: ir.Node, scope: Scope) -> bool:
    cond = node.inputs[0] if node.inputs else None
    if cond is None or f.analyze_only:
        return False
    if cond.is_graph_input() and not f.options.freeze_inputs:
        return _if_static_sequences(f, node, scope)
    array = f.constant(cond)
    if array is None or array.size != 1:
        return _if_static_sequences(f, node, scope)
    taken = "then_branch" if bool(array.reshape(-1)[0]) else "else_branch"
    attr = node.attributes.get(taken)
    if attr is None or attr.type != ir.AttributeType.GRAPH:
        return False
    branch = attr.as_graph()
    if len(branch.outputs) != len(node.outputs):
        return False
    _, outputs = inline_graph(f, scope, node, branch, {})
    why = _outputs_can_move(f, node, scope, outputs)
    if why:
        return f.leave(node, why)
    for old, new in zip(node.outputs, outputs, strict=True):
        if old in f.state:
            f.state.pop(old)
        f.replace(old, new, scope)
    drop_subgraphs(node)
    return f.applied("if-constant-condition", node, f"inlined {taken}")


def _is_sequence(f: Folder, value: ir.Value) -> bool:
    return f.static(value) is not None or isinstance(value.type, ir.SequenceType)


def _sequence_map(f: Folder, node: ir.Node, scope: Scope) -> bool:
    body_attr = node.attributes.get("body")
    if body_attr is None or body_attr.type != ir.AttributeType.GRAPH:
        return False
    body = body_attr.as_graph()
    inputs = list(node.inputs)
    if any(v is None for v in inputs) or len(inputs) != len(body.inputs):
        return f.leave(node, "SequenceMap inputs do not match its body")
    sequences: dict[int, StaticSequence] = {}
    for index, value in enumerate(inputs):
        assert value is not None
        if index == 0 or _is_sequence(f, value):
            seq = f.static(value)
            if seq is None:
                return f.leave(node, f"input {index}: {f.why_unknown(value)}")
            sequences[index] = seq
        elif value.type is None:
            return f.leave(node, f"input {index}: not known to be a tensor or a sequence")
    lengths = {len(s) for s in sequences.values()}
    if len(lengths) != 1:
        return f.leave(
            node, f"sequence inputs have different lengths {sorted(lengths)}: fails at run time"
        )
    if f.analyze_only:
        return False
    length = lengths.pop()
    mark = f.checkpoint()
    results: list[list[ir.Value]] = [[] for _ in node.outputs]
    for i in range(length):
        bound = {
            body.inputs[j]: (sequences[j].elements[i] if j in sequences else value)
            for j, value in enumerate(inputs)
            if value is not None
        }
        _, outputs = inline_graph(f, scope, node, body, bound)
        for k, out in enumerate(outputs):
            results[k].append(out)
    left = f.left_since(mark, [v for values in results for v in values])
    if left:  # one copy per element would only multiply what stays
        cause = next((n for n in left if n in f.reasons), left[0])
        f.rollback(mark)
        return f.leave(
            node,
            f"inlining would leave {len(left)} sequence op(s) in the copies "
            f"({cause.op_type}: {f.reasons.get(cause) or 'needed as a sequence'})",
        )
    for k, out in enumerate(node.outputs):
        dtype = out.type.dtype if out.type is not None else body.outputs[k].dtype
        f.state[out] = StaticSequence(tuple(results[k]), dtype)
    return f.applied("sequence-map-inline", node, f"{length} copies of the body")


def _optional(f: Folder, node: ir.Node, scope: Scope) -> bool:
    wrapped = node.inputs[0] if node.inputs else None
    f.optionals[node.outputs[0]] = wrapped
    return True


def _optional_value(f: Folder, value: ir.Value) -> tuple[bool, ir.Value | None]:
    """Whether the optional's content is known, and the content (None when empty)."""
    if value in f.optionals:
        return True, f.optionals[value]
    if isinstance(value.type, ir.TensorType | ir.SequenceType) or f.static(value) is not None:
        return True, value  # a plain tensor or sequence: always present
    return False, None


def _optional_get_element(f: Folder, node: ir.Node, scope: Scope) -> bool:
    source = node.inputs[0] if node.inputs else None
    if source is None:
        return False
    known, content = _optional_value(f, source)
    if not known or content is None:
        return False
    seq = f.static(content)
    if seq is not None:
        f.state[node.outputs[0]] = seq
    if (
        node.outputs[0].is_graph_output()
        and not isinstance(content.type, ir.TensorType)
        and scope.opset < 14
    ):
        return False
    f.replace(node.outputs[0], content, scope)
    return f.applied("optional-get-element", node, f"-> '{content.name}'")


def _optional_has_element(f: Folder, node: ir.Node, scope: Scope) -> bool:
    source = node.inputs[0] if node.inputs else None
    if source is None:
        known, content = True, None
    else:
        known, content = _optional_value(f, source)
    if not known:
        return False
    value = f.emitter(scope, node).constant(np.array(content is not None))
    f.replace(node.outputs[0], value, scope)
    return f.applied("optional-has-element", node, f"{content is not None}")


TRANSFER.update(
    {
        "If": _if,
        "SequenceMap": _sequence_map,
        "Optional": _optional,
        "OptionalGetElement": _optional_get_element,
        "OptionalHasElement": _optional_has_element,
    }
)

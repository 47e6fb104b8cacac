"""The self-check every written or returned model passes: never a wrong or bigger model.

Before :func:`seqpasses.optimize` returns a model or the CLI writes one, the result must

1. pass onnx's own ``onnx.checker.check_model(full_check=True)`` wherever the input did, and
2. hold no more sequence ops than the input.

A result that does not is a fault of seqpasses (:class:`SelfCheckError`): the API raises, the
CLI prints one line and exits with 3, and nothing is written. Whether the input passed the
checker is only asked when the output fails it. A model nothing changed is not checked again.
"""

from __future__ import annotations

from collections.abc import Callable

import onnx

from seqpasses.core.onnx_inference import infer
from seqpasses.core.ops import model_sequence_ops
from seqpasses.errors import SelfCheckError, first_line

__all__ = ["SelfCheckError", "passes_checker", "self_check", "without_inner_shapes"]


def passes_checker(model: onnx.ModelProto) -> str:
    """'' when ``model`` passes onnx's full check, else its first line. The full check is
    onnx's checker and its strict shape inference; the inference runs in linear pieces
    (:mod:`seqpasses.core.onnx_inference`: onnx's own, with its own errors), where onnx's
    ``check_model(full_check=True)`` is quadratic in subgraphs and calls. Give it a skeleton
    (:mod:`seqpasses.core.skeleton`): the check needs the weights' dims, not their bytes."""
    try:
        onnx.checker.check_model(model)
        infer(model, strict=True)
    except Exception as error:
        return first_line(error)
    return ""


def self_check(
    after: onnx.ModelProto,
    sequence_ops_before: int,
    input_passes: Callable[[], bool],
    why: str | None = None,
    sequence_ops_after: int | None = None,
) -> None:
    """Raise :class:`SelfCheckError` when ``after`` is invalid where the input was valid, or
    holds more sequence ops than the input's ``sequence_ops_before`` (``why``: what
    :func:`passes_checker` said of ``after``, and ``sequence_ops_after`` its count, when the
    caller has them already)."""
    if sequence_ops_after is None:
        sequence_ops_after = model_sequence_ops(after)
    if sequence_ops_after > sequence_ops_before:
        raise SelfCheckError(
            f"the optimized model has more sequence ops than the input "
            f"({sequence_ops_before} -> {sequence_ops_after})",
            kind="more-sequence-ops",
        )
    if why is None:
        why = passes_checker(after)
    if why and input_passes():
        raise SelfCheckError(
            f"the optimized model fails the ONNX checker where the input passed: {why}"
        )


def _clear_shape(type_proto: onnx.TypeProto) -> None:
    kind = type_proto.WhichOneof("value")
    if kind == "tensor_type":
        type_proto.tensor_type.ClearField("shape")
    elif kind in ("sequence_type", "optional_type"):
        _clear_shape(getattr(type_proto, kind).elem_type)


def _strip(holder: onnx.GraphProto | onnx.FunctionProto, inner: bool) -> None:
    """No declared shapes in ``holder`` and its subgraphs (an ``inner`` graph's inputs and
    outputs too)."""
    del holder.value_info[:]
    if inner:
        assert isinstance(holder, onnx.GraphProto)
        for value in [*holder.input, *holder.output]:
            _clear_shape(value.type)
    for node in holder.node:
        for attr in node.attribute:
            for graph in [attr.g] if attr.type == onnx.AttributeProto.GRAPH else attr.graphs:
                _strip(graph, True)


def without_inner_shapes(model: onnx.ModelProto) -> onnx.ModelProto:
    """A copy of ``model`` with no declared shape but the main graph's inputs and outputs: what
    a rewrite proved about a value that a node fails on at run time (an axis out of a scalar's
    range, shapes that cannot broadcast) lets onnx's full check reject a model whose input, with
    those facts hidden in sequences, it took. Without the declarations it infers what it can."""
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    for holder in [copy.graph, *copy.functions]:
        _strip(holder, False)
    return copy

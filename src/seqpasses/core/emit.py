"""Build the plain ops that replace sequence ops, in the form the model's opset allows.

- ``Unsqueeze``/``Squeeze``: ``axes`` is an attribute before opset 13, a 1-D int64 input from 13.
- ``Split``: ``split`` is an attribute before 13, an input from 13; seqpasses always passes
  explicit sizes, so ``num_outputs`` (opset 18+) is never needed.

Every new value gets its dtype and, where it follows from the inputs, its shape.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import onnx_ir as ir

from seqpasses.core.dims import Dim, concat_dims, dims_of
from seqpasses.core.sequence import sequence_dtype
from seqpasses.core.shape_rules import TypeAndShape
from seqpasses.core.strings import string_gather

__all__ = ["Emitter", "EmitterCaches"]


@dataclass(frozen=True)
class EmitterCaches:
    """What emitters share across a walk: each constant made once per graph, the squeezes a
    later Unsqueeze undoes, each Split's axis, and static lists already held as ``[n, *E]``.
    (A walk's journal drops an entry when a rollback removes the node it names.)"""

    constants: dict[tuple[int, str, tuple[int, ...]], ir.Value]
    squeezed: dict[ir.Value, tuple[ir.Value, int]]
    split_axis: dict[ir.Node, int]
    stacks: dict[tuple[int, tuple[ir.Value, ...]], ir.Value]


class Owner(Protocol):
    """Who places new nodes and keeps their record: their names, where they go (in a dry
    walk, nowhere: the node only describes a value), and the caches emitters share."""

    caches: EmitterCaches

    def next_name(self, base: str, op_type: str) -> str: ...

    def place(self, graph: ir.Graph | ir.Function, anchor: ir.Node | None, node: ir.Node) -> None:
        """Put ``node`` into ``graph`` before ``anchor`` (at the end when ``None``), or record
        it there (a tape, which the applier places)."""

    def check(self, value: ir.Value) -> ir.Value:
        """The node making ``value`` checks something at run time: it stays whatever reads it."""

    def diverges(self, value: ir.Value, note: str) -> None:
        """``value``'s shape departs from the spec's (it follows ONNX Runtime); ``note`` says
        why, in the report."""


class Emitter:
    """Inserts new nodes into ``graph`` before ``anchor`` (at the end when ``None``)."""

    def __init__(
        self,
        graph: ir.Graph | ir.Function,
        anchor: ir.Node | None,
        opset: int,
        owner: Owner,
        seen: Callable[[ir.Value], TypeAndShape] | None = None,
    ) -> None:
        self.graph = graph
        self.anchor = anchor
        self.opset = opset
        self.owner = owner
        self.base: str | None = None  # what new nodes are named after (default: the anchor)
        self.seen: Callable[[ir.Value], TypeAndShape] = seen or _declared  # (as known so far)

    def type_of(self, x: ir.Value) -> ir.TypeProtocol | None:
        """``x``'s type, as declared or as found so far (what a new node reading it takes)."""
        return self.seen(x)[0]

    def _dims(self, x: ir.Value) -> list[Dim] | None:
        return dims_of(self.seen(x)[1])

    def _add(
        self,
        op_type: str,
        inputs: Sequence[ir.Value | None],
        attributes: dict[str, object] | list[ir.Attr] | None = None,
        num_outputs: int = 1,
    ) -> ir.Node:
        base = self.base or ((self.anchor.name or self.anchor.op_type) if self.anchor else "output")
        name = self.owner.next_name(base, op_type)
        if isinstance(attributes, list) or not attributes:
            # ready-made attributes, or none: no conversion to pay for
            ready: list[ir.Attr] = attributes if isinstance(attributes, list) else []
            node = ir.Node("", op_type, list(inputs), ready, num_outputs=num_outputs, name=name)
        else:
            node = ir.node(
                op_type,
                list(inputs),
                attributes,  # type: ignore[arg-type]
                num_outputs=num_outputs,
                name=name,
            )
        self.owner.place(self.graph, self.anchor, node)
        return node

    def op(
        self,
        op_type: str,
        inputs: Sequence[ir.Value | None],
        *,
        type: ir.TypeProtocol | None = None,
        shape: ir.Shape | None = None,
        **attributes: object,
    ) -> ir.Value:
        """Any single-output op, for rewrites with no dedicated builder: its output gets
        ``type`` and ``shape`` (what the caller knows of it)."""
        gathered = None
        if op_type == "Gather" and _is_string(inputs[0]) and self.opset >= 11:
            gathered = string_gather(self, inputs[0], inputs[1], attributes.get("axis", 0))
        if gathered is not None:
            out = gathered
        else:
            out = self._add(op_type, inputs, attributes or None).outputs[0]
        _declare(out, type, shape)
        return out

    def check(self, value: ir.Value) -> ir.Value:
        """``value``'s node checks something at run time (it fails where the op it stands for
        fails): it stays, whatever reads it. Returns ``value``."""
        return self.owner.check(value)

    def diverges(self, value: ir.Value, note: str) -> None:
        """``value``'s shape follows ONNX Runtime, not the spec: the report says ``note``."""
        self.owner.diverges(value, note)

    def constant(self, array: np.ndarray) -> ir.Value:
        # ir.Tensor directly: ir.tensor's protocol checks cost 8x more, once per constant
        tensor = ir.Tensor(array) if array.dtype != object else ir.tensor(array)
        out = self._add("Constant", [], [ir.AttrTensor("value", tensor)]).outputs[0]
        out.type = ir.TensorType(tensor.dtype)
        out.shape = ir.Shape(list(array.shape))
        out.const_value = tensor
        return out

    def int64s(self, values: Sequence[int]) -> ir.Value:
        """A 1-D int64 Constant, shared by every use in the same graph during one walk."""
        return self._shared(np.array(list(values), dtype=np.int64))

    def int64(self, value: int) -> ir.Value:
        """A scalar int64 Constant, shared like :meth:`int64s`."""
        return self._shared(np.array(value, dtype=np.int64))

    def true(self) -> ir.Value:
        """A scalar bool true Constant (a Loop's condition), shared like :meth:`int64s`."""
        return self._shared(np.array(True))

    def _shared(self, array: np.ndarray) -> ir.Value:
        key = (id(self.graph), f"{array.dtype}{array.shape}", tuple(map(int, array.ravel())))
        cached = self.owner.caches.constants.get(key)
        if cached is None:
            # made at the start of the graph, so that every later use may share it: one made
            # before the anchor would come after a node a rebuild puts before that anchor
            first = next(iter(self.graph), None)
            maker = Emitter(self.graph, first, self.opset, self.owner, self.seen)
            maker.base = (self.anchor.name or self.anchor.op_type) if self.anchor else "output"
            cached = maker.constant(array)
            if first is not None:
                self.owner.caches.constants[key] = cached
        return cached

    def identity(self, x: ir.Value, *, shape: ir.Shape | None = None) -> ir.Value:
        out = self._add("Identity", [x]).outputs[0]
        _copy_type(self.seen(x), out)
        _declare(out, None, shape)
        return out

    def _axis_op(self, op_type: str, x: ir.Value, axis: int) -> ir.Value:
        """Squeeze/Unsqueeze of one axis: an attribute before opset 13, an input from 13."""
        if self.opset < 13:
            return self._add(op_type, [x], {"axes": [axis]}).outputs[0]
        return self._add(op_type, [x, self.int64s([axis])]).outputs[0]

    def unsqueeze(self, x: ir.Value, axis: int) -> ir.Value:
        # Unsqueeze(Squeeze(y, a), a) == y: undo a Squeeze seqpasses made itself.
        source = self.owner.caches.squeezed.get(x)
        if source is not None and source[1] == axis:
            return source[0]
        out = self._axis_op("Unsqueeze", x, axis)
        out.type = self.type_of(x)
        dims = self._dims(x)
        if dims is not None and 0 <= axis <= len(dims):
            out.shape = ir.Shape([*dims[:axis], 1, *dims[axis:]])
        return out

    def squeeze(self, x: ir.Value, axis: int) -> ir.Value:
        out = self._axis_op("Squeeze", x, axis)
        out.type = self.type_of(x)
        dims = self._dims(x)
        if dims is not None and 0 <= axis < len(dims):
            out.shape = ir.Shape(dims[:axis] + dims[axis + 1 :])
        self.owner.caches.squeezed[out] = (x, axis)
        return out

    def concat(
        self,
        inputs: Sequence[ir.Value],
        axis: int,
        *,
        type: ir.TypeProtocol | None = None,
        shape: ir.Shape | None = None,
    ) -> ir.Value:
        """``Concat`` (its type and shape derived, else ``type`` and ``shape``: those win on a
        new node; a value the model has keeps its own)."""
        # Concat of every output of one Split, in order, on the Split's axis == its input.
        split = inputs[0].producer()
        if (
            split is not None
            and self.owner.caches.split_axis.get(split) == axis
            and tuple(inputs) == tuple(split.outputs)
            and split.inputs[0] is not None
        ):
            return split.inputs[0]
        out = self._add("Concat", inputs, {"axis": axis}).outputs[0]
        out.type = self.type_of(inputs[0])
        out.shape = concat_dims([self._dims(v) for v in inputs], axis)
        _declare(out, type, shape)
        return out

    def split(self, x: ir.Value, axis: int, sizes: Sequence[int]) -> list[ir.Value]:
        if self.opset < 13:
            node = self._add("Split", [x], {"axis": axis, "split": list(sizes)}, len(sizes))
        else:
            node = self._add("Split", [x, self.int64s(sizes)], {"axis": axis}, len(sizes))
        self.owner.caches.split_axis[node] = axis
        dims = self._dims(x)
        for out, size in zip(node.outputs, sizes, strict=True):
            out.type = self.type_of(x)
            if dims is not None and 0 <= axis < len(dims):
                out.shape = ir.Shape([*dims[:axis], size, *dims[axis + 1 :]])
        return list(node.outputs)

    def split_by(self, x: ir.Value, axis: int, sizes: ir.Value, count: int) -> list[ir.Value]:
        """``Split`` into ``count`` chunks whose sizes are the run-time 1-D tensor ``sizes``
        (opset 13 and later: the sizes are an input, int64 only: SplitToSequence's int32
        sizes are cast)."""
        sizes_type = self.type_of(sizes)
        if not isinstance(sizes_type, ir.TensorType) or sizes_type.dtype != ir.DataType.INT64:
            cast = self._add("Cast", [sizes], {"to": int(ir.DataType.INT64)}).outputs[0]
            cast.type, cast.shape = ir.TensorType(ir.DataType.INT64), self.seen(sizes)[1]
            sizes = cast
        node = self._add("Split", [x, sizes], {"axis": axis}, count)
        dims = self._dims(x)
        for out in node.outputs:
            out.type = self.type_of(x)
            if dims is not None and 0 <= axis < len(dims):
                out.shape = ir.Shape([*dims[:axis], ir.SymbolicDim(None), *dims[axis + 1 :]])
        return list(node.outputs)

    def sequence_construct(
        self, elements: Sequence[ir.Value], dtype: ir.DataType | None, like: ir.Value
    ) -> ir.Value:
        out = self._add("SequenceConstruct", elements).outputs[0]
        _sequence_type(out, dtype, like)
        return out

    def sequence_empty(self, dtype: ir.DataType | None, like: ir.Value) -> ir.Value:
        """An empty list of ``dtype`` (else of the type ``like`` declares; SequenceEmpty's
        default, float, only when neither is known)."""
        attributes: dict[str, object] = {}
        dtype = dtype or sequence_dtype(like)
        if dtype is not None:
            attributes["dtype"] = int(dtype)
        out = self._add("SequenceEmpty", [], attributes).outputs[0]
        _sequence_type(out, dtype or ir.DataType.FLOAT, like)
        return out


def _is_string(value: ir.Value | None) -> bool:
    return value is not None and value.dtype == ir.DataType.STRING


def _sequence_type(out: ir.Value, dtype: ir.DataType | None, like: ir.Value) -> None:
    """A written-back list's type: what ``like`` (the list it stands for) declares, unless
    that contradicts the elements' type ``dtype``; then only that type, derived."""
    declared = sequence_dtype(like)
    if dtype is None or declared == dtype:
        _copy_type(_declared(like), out)
    else:
        out.type = ir.SequenceType(ir.TensorType(dtype))


def _declare(out: ir.Value, type: ir.TypeProtocol | None, shape: ir.Shape | None) -> None:
    """Give a value just made the ``type``/``shape`` its maker knows (None: leave it)."""
    if type is not None:
        out.type = type
    if shape is not None:
        out.shape = shape


def _declared(value: ir.Value) -> TypeAndShape:
    return value.type, value.shape


def _copy_type(source: TypeAndShape, target: ir.Value) -> None:
    type_, shape = source
    if type_ is not None:
        target.type = type_
    if shape is not None:
        target.shape = shape

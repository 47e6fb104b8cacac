"""The element shape of the lists a Loop carries out, by induction over its body.

A list a ``Loop`` carries starts with the elements it is given and grows by what its body
inserts each iteration: the elements' common shape is found by assuming one, following the
body under that assumption (each tensor's shape by onnx's inference of its node, each list's
element shape by the sequence op that makes it), and merging what the body gives back until
the assumption holds (a dim that differs becomes unknown; ranks that differ give nothing).
Loops inside bodies are followed; an ``If``'s outputs are what either branch gives. The
list half of :mod:`.induction` (which proves what carried tensors keep): the dry walk's
``Loop`` row (``analyze``) asks it, and declares what it proves.
"""

from __future__ import annotations

from collections import ChainMap
from collections.abc import Callable, Iterable, Mapping, MutableMapping
from dataclasses import dataclass, field
from typing import Any

import onnx_ir as ir

from seqpasses.core.dims import merge_shapes, named_only, same_shape
from seqpasses.core.sequence import StackedSequence, StaticSequence
from seqpasses.core.shape_rules import BodyFacts
from seqpasses.core.shapes import ShapeOracle

__all__ = ["BodyFacts", "Held", "carried_lists"]

"""What is proved of values inside bodies: their type and shape."""

Held = Callable[[ir.Value], object]
"""What the walk holds of a list from outside the loops followed (None: nothing)."""


_EMPTY = ir.Shape([])  # (a marker: the list has no element; compared by identity)
Elements = ir.Shape | None


def _merge(a: Elements, b: Elements) -> Elements:
    """The element shape of a list holding the elements of two (``_EMPTY``: none)."""
    if a is _EMPTY:
        return b
    if b is _EMPTY:
        return a
    return merge_shapes([a, b])


@dataclass
class _Known:
    """What a body knows of a list it hands an inner Loop: its elements' shape."""

    elements: Elements


def _element_type(
    listed: ir.Value | None, out: ir.Value, types: MutableMapping[ir.Value, Any]
) -> None:
    """The type of a tensor read off a list: its elements' (when ``out`` has none)."""
    type_ = types.get(listed, listed.type) if listed is not None else None
    tensor = type_.elem_type if isinstance(type_, ir.SequenceType) else None
    if out.type is None and isinstance(tensor, ir.TensorType):
        types[out] = tensor


def _held_elements(known: object) -> Elements:
    """The element shape of a list as held: by the walk (a list of known elements, a list
    held as one tensor) or by an enclosing body (:class:`_Known`); None when not known."""
    if isinstance(known, _Known):
        return known.elements
    if isinstance(known, StaticSequence):
        found: Elements = _EMPTY
        for element in known.elements:
            found = _merge(found, named_only(element.shape))
        return found
    if isinstance(known, StackedSequence):
        return named_only(known.element)
    return None


def _outside_list(value: ir.Value, held: Held) -> Elements:
    """The element shape of a list from outside the loops followed: a graph input's declared
    one (the model's signature, as for a tensor input), what the walk holds of it, or else
    what onnx's inference says of its elements (as induction reads an outer tensor)."""
    if value.is_graph_input() and isinstance(value.type, ir.SequenceType):
        return value.shape
    found = _held_elements(held(value))
    if found is None and isinstance(value.type, ir.SequenceType):
        return named_only(value.shape)
    return found


def _same(a: Elements, b: Elements) -> bool:
    """Whether a list's element shape came back as assumed (no element and no element; not
    known and not known; or the same dims)."""
    if a is _EMPTY or b is _EMPTY:
        return a is b
    return _alike(a, b)


def _alike(a: Elements, b: Elements) -> bool:
    """The same shape, dim for dim (an unknown dim alike an unknown one)."""
    if a is None or b is None:
        return a is b
    return len(a) == len(b) and all(
        x == y
        if isinstance(x, int) or isinstance(y, int)
        else getattr(x, "value", None) == getattr(y, "value", None)
        for x, y in zip(a, b, strict=True)
    )


def carried_lists(
    node: ir.Node, held: Held, oracle: ShapeOracle
) -> tuple[dict[ir.Value, ir.Shape], BodyFacts]:
    """The element shape of each list a main graph's ``Loop`` carries out, by induction (see
    the module docstring; ``held``: what the walk holds of the lists outside; ``oracle``:
    the walk's, for what the values around the loop are), and the type and shape of each of
    its body's own tensors under what that induction proves."""
    record: BodyFacts = {}
    found = _loop_lists(node, held, oracle, 0, {}, {}, record)
    return found, record


def _loop_lists(
    node: ir.Node,
    held: Held,
    oracle: ShapeOracle,
    depth: int,
    outer: Mapping[ir.Value, ir.Shape | None],
    outer_types: Mapping[ir.Value, Any],
    record: BodyFacts | None = None,
) -> dict[ir.Value, ir.Shape]:
    """:func:`carried_lists` of ``node``, ``depth`` loops deep, inside bodies whose tensors
    have the shapes and types ``outer`` and ``outer_types`` (what is not there: as declared);
    ``record`` gets what the body's own tensors are proved to be."""
    found: dict[ir.Value, ir.Shape] = {}
    if node.op_type != "Loop" or node.domain not in ("", "ai.onnx") or depth > 4:
        return found
    body_attr = node.attributes.get("body")
    if body_attr is None or body_attr.type != ir.AttributeType.GRAPH:
        return found
    body = body_attr.as_graph()
    guesses: dict[int, Elements] = {}
    for j, initial in enumerate(node.inputs[2:]):
        if initial is None or j + 2 >= len(body.inputs) or j >= len(node.outputs):
            continue
        if isinstance(body.inputs[2 + j].type, ir.SequenceType):
            guesses[j] = _held_elements(held(initial))
    if all(guess is None for guess in guesses.values()):
        return found
    carried = [  # (a carried tensor: its initial shape, while the body keeps it)
        None
        if v is None or isinstance(body.inputs[2 + k].type, ir.SequenceType)
        else outer[v]
        if v in outer
        else named_only(oracle.seen(v)[1])
        for k, v in enumerate(node.inputs[2 : len(body.inputs)])
    ]
    env = _Env(ChainMap(dict(outer)), ChainMap(dict(outer_types)), held, oracle, depth)
    # every list at once: one list's elements may hang on another's (a vocoder's outputs,
    # computed from GRU states it carries in a list read by position)
    for _ in range(6 + len(guesses)):
        ends, kept = _body_elements(body, guesses, carried, env)
        after = {
            j: _merge(guess, ends.get(j)) if guess is not None and ends.get(j) is not None else None
            for j, guess in guesses.items()
        }
        held_up = [
            c if c is not None and k is not None and same_shape(c, k) else None
            for c, k in zip(carried, kept, strict=True)
        ]
        if held_up == carried and all(_same(after[j], guesses[j]) for j in guesses):
            for j, guess in guesses.items():
                if guess is not _EMPTY and guess is not None:
                    found[node.outputs[j]] = guess
            if record is not None and found:  # (what the body computes, the lists so)
                _body_elements(body, guesses, carried, env, record)
                _carried_tensors(node, carried, env, record)
            break
        guesses, carried = after, held_up
    return found


def _carried_tensors(
    node: ir.Node, carried: list[ir.Shape | None], env: _Env, record: BodyFacts
) -> None:
    """The final values of the tensors a loop carries whose shape the induction proved
    (``carried``: what held at every iteration, the lists' elements assumed with it)."""
    for k, shape in enumerate(carried):
        initial = node.inputs[2 + k]
        if shape is None or initial is None or k >= len(node.outputs):
            continue
        type_ = env.type(initial)
        if isinstance(type_, ir.TensorType):
            record.setdefault(node.outputs[k], (type_, shape))


@dataclass
class _Env:
    """What the induction's walk (:func:`_body_elements`) knows where it is: the tensors'
    shapes and types and the lists' element shapes, each scope a child of the one it is in;
    what the walk holds of the main graph's lists; the oracle; how deep in loops it is."""

    shapes: ChainMap[ir.Value, ir.Shape | None]
    types: ChainMap[ir.Value, Any]
    held: Held
    oracle: ShapeOracle
    depth: int
    elements: ChainMap[ir.Value, Elements] = field(default_factory=ChainMap)

    def child(self) -> _Env:
        """A scope inside this one (a body's, a branch's)."""
        return _Env(
            self.shapes.new_child(),
            self.types.new_child(),
            self.held,
            self.oracle,
            self.depth,
            self.elements.new_child(),
        )

    def shape(self, v: ir.Value | None) -> ir.Shape | None:
        if v is None:
            return None
        if v in self.shapes:
            return self.shapes[v]
        return named_only(self.oracle.seen(v)[1])  # (outside: as declared or found)

    def type(self, v: ir.Value) -> Any:
        return self.types[v] if v in self.types else self.oracle.seen(v)[0]

    def listed(self, v: ir.Value | None) -> Elements:
        if v is None:
            return None
        return self.elements[v] if v in self.elements else _outside_list(v, self.held)


def _body_elements(
    body: ir.Graph,
    guesses: Mapping[int, Elements],
    carried: list[ir.Shape | None],
    around: _Env,
    record: BodyFacts | None = None,
) -> tuple[dict[int, Elements], list[ir.Shape | None]]:
    """The element shapes of the lists a Loop's ``body`` gives back (by carried value index:
    None where it cannot be told), its lists coming in with elements of the shapes
    ``guesses`` (a list not there: not known) and its carried tensors of the shapes
    ``carried``; and the shapes of the carried values it gives back (the tensors').
    ``record`` gets the shapes of the body's own tensors."""
    env = around.child()
    env.shapes[body.inputs[0]] = ir.Shape([])
    env.shapes[body.inputs[1]] = ir.Shape([])
    for k, value in enumerate(body.inputs[2:]):
        if isinstance(value.type, ir.SequenceType):
            env.elements[value] = guesses.get(k)
        else:  # (as assumed: the caller checks that the body keeps it)
            env.shapes[value] = carried[k] if k < len(carried) else None
    _step(body, env)
    if record is not None:  # (the body's own tensors, by what this run proves)
        for node in body:
            for out in node.outputs:
                found = env.shapes.maps[0].get(out)
                type_ = env.type(out)
                if found is not None and isinstance(type_, ir.TensorType) and out not in record:
                    record[out] = (type_, found)
    kept = [env.shape(v) for v in body.outputs[1 : 1 + len(carried)]]
    kept += [None] * (len(carried) - len(kept))
    ends = {
        j: env.elements.get(body.outputs[1 + j]) if j + 1 < len(body.outputs) else None
        for j in guesses
    }
    return ends, kept


def _step(nodes: Iterable[ir.Node], env: _Env) -> None:
    """Follow ``nodes`` (a body's, a branch's) for :func:`_body_elements`: each tensor's shape
    into ``env.shapes`` (what it cannot tell: None), each list's element shape into
    ``env.elements``."""
    shapes, types, elements = env.shapes, env.types, env.elements
    shape, listed = env.shape, env.listed
    for node in nodes:
        op, ins, outs = node.op_type, list(node.inputs), list(node.outputs)
        if node.domain not in ("", "ai.onnx"):
            op = ""
        if op == "SequenceEmpty":
            elements[outs[0]] = _EMPTY
        elif op == "SequenceConstruct":
            merged: Elements = _EMPTY
            for v in ins:
                merged = _merge(merged, shape(v))
            elements[outs[0]] = merged
        elif op == "SequenceInsert" and len(ins) >= 2:
            elements[outs[0]] = (
                _merge(listed(ins[0]), shape(ins[1])) if listed(ins[0]) is not None else None
            )
        elif op == "SequenceErase" or (op == "Identity" and ins and ins[0] in elements):
            elements[outs[0]] = listed(ins[0])
        elif op == "SequenceAt":
            got = listed(ins[0])
            shapes[outs[0]] = None if got is _EMPTY else got
            _element_type(ins[0], outs[0], types)
        elif op == "ConcatFromSequence":
            shapes[outs[0]] = _concatenation(listed(ins[0]), node)
            _element_type(ins[0], outs[0], types)
        elif op == "If":
            _branches(node, env)
        elif op == "Loop":
            _inner_loop(node, env)
        else:
            for out in outs:
                if isinstance(out.type, ir.SequenceType):
                    elements[out] = None
            if any(isinstance(v, ir.Value) and v in elements for v in ins) or op in (
                "",
                "Scan",
                "SequenceMap",
                "SequenceLength",
            ):
                for out in outs:
                    shapes.setdefault(out, None)
                if op == "SequenceLength":
                    shapes[outs[0]] = ir.Shape([])
                    types[outs[0]] = ir.TensorType(ir.DataType.INT64)
                continue
            inputs = [(env.type(v), shape(v)) if v is not None else None for v in ins]
            for out, (type_, inferred) in zip(outs, env.oracle.infer(node, inputs), strict=True):
                shapes[out] = inferred
                if out.type is None and type_ is not None:
                    types[out] = type_


def _concatenation(got: Elements, node: ir.Node) -> ir.Shape | None:
    """A ConcatFromSequence's shape over elements of shape ``got``: their rank (one more with
    ``new_axis``), the axis unknown."""
    if got is None or got is _EMPTY:
        return None
    new_axis = node.attributes.get_int("new_axis", 0)
    rank = len(got) + new_axis
    axis = node.attributes.get_int("axis", 0)
    if not -rank <= axis < rank:
        return None
    axis %= rank
    dims: list[int | ir.SymbolicDim] = list(got)
    if new_axis:
        dims.insert(axis, ir.SymbolicDim(None))
    else:
        dims[axis] = ir.SymbolicDim(None)
    return ir.Shape(dims)


def _inner_loop(node: ir.Node, env: _Env) -> None:
    """A Loop inside a body for :func:`_step`: its lists by :func:`_loop_lists`, with what
    this body knows of those it hands in; its tensors unknown."""
    inner: dict[ir.Value, object] = {v: env.held(v) for v in node.inputs if v is not None}
    for v in node.inputs:  # (what this body knows of the lists it hands the inner loop)
        if v is not None and v in env.elements:
            inner[v] = _Known(env.listed(v))
    lists = _loop_lists(node, inner.get, env.oracle, env.depth + 1, env.shapes, env.types)
    inner_body = node.attributes.get("body")
    gives = list(inner_body.as_graph().inputs[2:]) if inner_body is not None else []
    for k, out in enumerate(node.outputs):  # (a carried list: the body's input says so)
        if out in lists or (k < len(gives) and isinstance(gives[k].type, ir.SequenceType)):
            env.elements[out] = lists.get(out)
        else:
            env.shapes[out] = None


def _branches(node: ir.Node, env: _Env) -> None:
    """An If for :func:`_step`: both branches followed, each output what either gives."""
    outs = list(node.outputs)
    given: list[list[tuple[bool, Any]]] = []
    for name in ("then_branch", "else_branch"):
        attr = node.attributes.get(name)
        if attr is None or attr.type != ir.AttributeType.GRAPH:
            given = []
            break
        branch = attr.as_graph()
        inner = env.child()
        _step(branch, inner)
        given.append(
            [
                (True, inner.elements[v]) if v in inner.elements else (False, inner.shape(v))
                for v in branch.outputs
            ]
        )
        for v, out in zip(branch.outputs, outs, strict=False):
            if out.type is None and inner.type(v) is not None:
                env.types.setdefault(out, inner.type(v))
    for k, out in enumerate(outs):
        got = [branch[k] for branch in given if k < len(branch)]
        if len(got) != 2 or got[0][0] != got[1][0]:
            env.shapes[out] = None
            if isinstance(out.type, ir.SequenceType):
                env.elements[out] = None
        elif got[0][0]:
            env.elements[out] = _merge(got[0][1], got[1][1])
        else:
            env.shapes[out] = merge_shapes([got[0][1], got[1][1]])

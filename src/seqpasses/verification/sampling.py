"""Outputs that depend on a random op: two runs of the original give different values, so
``--check`` cannot compare them (an unseeded ``Multinomial`` in a sampling loop differs from
itself by as much as any rewrite could). They are set aside, with a note naming the ops, and
the other outputs are compared."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import onnx

__all__ = ["RANDOM_OPS", "random_outputs", "without_outputs"]

RANDOM_OPS = frozenset(
    {
        "Bernoulli",
        "Multinomial",
        "RandomNormal",
        "RandomNormalLike",
        "RandomUniform",
        "RandomUniformLike",
    }
)
"""The ONNX ops whose values are drawn at random (``Dropout`` too, in training mode)."""


def random_outputs(model: onnx.ModelProto) -> tuple[list[str], list[str]]:
    """The main graph's outputs that depend on a random op, and those ops' labels (each once),
    through bodies and model-local functions."""
    functions = {(f.domain, f.name): f for f in model.functions}
    random_functions: dict[tuple[str, str], bool] = {}

    def calls_random(key: tuple[str, str]) -> bool:
        if key not in random_functions:
            random_functions[key] = False  # (a call cycle is refused by the gate before)
            function = functions[key]
            random_functions[key] = any(_labels(list(function.node), calls_random, functions))
        return random_functions[key]

    tainted: set[str] = set()
    labels: list[str] = []
    for node in model.graph.node:
        own = list(_labels([node], calls_random, functions))
        if own or any(name in tainted for name in node.input if name):
            tainted.update(name for name in node.output if name)
            labels.extend(label for label in own if label not in labels)
    outputs = [out.name for out in model.graph.output if out.name in tainted]
    return outputs, labels


def _labels(
    nodes: list[onnx.NodeProto],
    calls_random: Callable[[tuple[str, str]], bool],
    functions: dict[tuple[str, str], onnx.FunctionProto],
) -> Iterator[str]:
    """A label for each node of ``nodes`` that draws at random, in its bodies too."""
    for node in nodes:
        key = (node.domain, node.op_type)
        own = node.domain in ("", "ai.onnx") and (node.op_type in RANDOM_OPS or _dropout(node))
        if own or (key in functions and calls_random(key)):
            yield f"{node.op_type} '{node.name}'" if node.name else node.op_type
        for attr in node.attribute:
            bodies = [attr.g] if attr.type == onnx.AttributeProto.GRAPH else list(attr.graphs)
            for body in bodies:
                found = next(_labels(list(body.node), calls_random, functions), None)
                if found is not None:
                    yield f"{node.op_type} '{node.name}' (its body: {found})"
                    break


def _dropout(node: onnx.NodeProto) -> bool:
    """A Dropout that may run in training mode: its ``training_mode`` input is given (a
    constant false one is also taken as random: it is cheap to set the output aside)."""
    return node.op_type == "Dropout" and len(node.input) >= 3 and bool(node.input[2])


def without_outputs(model: onnx.ModelProto, names: list[str]) -> onnx.ModelProto:
    """A copy of ``model`` whose main graph no longer returns ``names``."""
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    kept = [out for out in copy.graph.output if out.name not in names]
    del copy.graph.output[:]
    copy.graph.output.extend(kept)
    return copy

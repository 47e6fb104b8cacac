"""What an exporter declares of values that control flow makes is a guess, not a fact.

TorchScript and tf2onnx declare the shapes inside loop bodies and branches from one trace
(the first iteration, the branch taken), name their dims after the inputs' (a body's
``[batch, alphas_length]`` is ``[2, 32]`` at run time while the input's ``alphas_length`` is
90), and write lists' elements as rank 0. ONNX Runtime holds a run to none of these
declarations. Trusted, such a guess would reach what seqpasses rewrites (a ``Split`` into 90
pieces of a tensor of 32) or declares (a value ONNX Runtime's optimizer then folds to a wrong
constant). So, before anything reads them, they are forgotten, and what holds is inferred
again from what the values are made of (:func:`forget_guesses`):

- the shapes declared for values made inside a body or branch;
- the shapes declared for a body's or branch's outputs (but a ``Loop``'s or ``Scan``'s scan
  outputs: their declaration is what a run of no iterations gives), and for the values a
  ``Loop``'s body carries in (induction proves what holds at every iteration);
- the shapes declared (``value_info``) for what a ``Loop``, ``If``, ``Scan`` or
  ``SequenceMap`` gives, wherever it sits, unless it is a graph output (the model's
  signature);
- the names (not the numbers) declared on a scan output, a ``Scan``'s state and the elements
  a ``SequenceMap``'s body takes;
- the element shape declared for a list a node makes, wherever it sits, a graph output
  included: ONNX Runtime holds no list's elements to it (an exporter's ``seq(float[2])`` on a
  list of rows 2, 4 and 6 long runs as it is), while a rewrite trusting it writes a
  ``Concat`` that fails. (A list the model takes in, a graph input, keeps its signature; a
  list graph output is written with what seqpasses proves of its elements, or nothing.)
"""

from __future__ import annotations

import onnx_ir as ir

from seqpasses.core.graph import all_nodes, subgraphs

__all__ = ["forget_guesses", "set_aside_output_numbers"]

_CONTROL_FLOW = frozenset({"If", "Loop", "Scan", "SequenceMap"})


def forget_guesses(model: ir.Model, *, declared: bool = False) -> None:
    """Forget what ``model`` declares of the values its control flow makes (see the module
    docstring); with ``declared``, the shape declared for any value a node makes but a graph
    output, where it holds a number (a shape of names only stays): onnx's inference and
    seqpasses' own find what holds. A traced ``value_info`` of ``[5, 3]`` on an ``[N, 3]`` value is what
    one run gave; ONNX Runtime runs the model whatever it says, and a rewrite that built a
    ``Reshape`` target from it computed something else."""
    for node in all_nodes(model):
        inner = subgraphs(node)
        if declared:
            for value in node.outputs:
                if _numbered(value.shape) and not value.is_graph_output():
                    value.shape = None  # (inferred again, from what the value is made of)
        for value in node.outputs:
            if isinstance(value.type, ir.SequenceType) and value.shape is not None:
                value.shape = None
        if node.op_type in _CONTROL_FLOW and node.domain in ("", "ai.onnx"):
            for value in node.outputs:
                if value.shape is not None and not value.is_graph_output():
                    value.shape = None
        for attr, graph in inner:
            if node.op_type == "Loop" and attr == "body":  # (its carried values: what they
                for value in graph.inputs[2:]:  # hold is what induction proves of them)
                    value.shape = None
            guessed = _guessed_outputs(node, graph)
            kept = set(graph.outputs) - set(guessed)
            for made in graph:
                for value in made.outputs:
                    if value not in kept:
                        value.shape = None
            for value in guessed:
                value.shape = None
            named = [*kept, *(graph.inputs if node.op_type in ("Scan", "SequenceMap") else ())]
            for value in named:  # (a scan output: its numbers are what no iteration gives;
                shape = value.shape  # a name there, on a Scan's state or on the elements a
                # SequenceMap's body takes, is only a guess)
                if shape is not None and any(isinstance(d, ir.SymbolicDim) for d in shape):
                    value.shape = ir.Shape(
                        [d if isinstance(d, int) else ir.SymbolicDim(None) for d in shape]
                    )


def set_aside_output_numbers(model: ir.Model) -> list[tuple[int, ir.Value, ir.Shape]]:
    """Forget, for the rewrites, the shape a graph output made by a node declares where it
    holds a number (ONNX Runtime runs a model whose output is ``[4, 3, 4]`` where it declares
    ``[5, 3, 2]``: see :func:`forget_guesses`); returns each one's slot, value and shape, the
    model's signature to declare again after them."""
    kept: list[tuple[int, ir.Value, ir.Shape]] = []
    for k, value in enumerate(model.graph.outputs):
        shape = value.shape
        if value.is_graph_input() or value.producer() is None:
            continue
        if shape is not None and isinstance(value.type, ir.TensorType) and _numbered(shape):
            kept.append((k, value, shape))
            value.shape = None
    return kept


def _numbered(shape: ir.Shape | None) -> bool:
    return shape is not None and any(isinstance(d, int) for d in shape)


def _guessed_outputs(node: ir.Node, graph: ir.Graph) -> list[ir.Value]:
    """The outputs of ``node``'s subgraph ``graph`` whose declared shape is only a guess: all
    of them, but a ``Loop``'s scan outputs and a ``Scan``'s, whose declared shape is what a
    run of no iterations gives ([0, *declared], in onnx.reference and ONNX Runtime alike)."""
    if node.op_type == "Loop":
        return list(graph.outputs[: max(len(node.inputs) - 1, 1)])
    if node.op_type == "Scan":
        return []
    return list(graph.outputs)

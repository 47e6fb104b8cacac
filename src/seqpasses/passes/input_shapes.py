"""Input-shape overrides (``--input-shape NAME:2,3,224,224``): fixing a symbolic dim of a graph
input often makes a list static (an unbind over a batch dim), as onnxsim users know.

A fixed input dim that was symbolic is fixed wherever the model's signature (its graph
inputs and outputs) names that dim, which ONNX holds to one size; not in what the graph
declares of the values it makes, nor inside bodies: there a namesake is an exporter's
guess, not the same dim (a loop body's ``[batch, alphas_length]`` is ``[2, 32]`` while the
input's ``alphas_length`` is 90). What follows from the fixed inputs is inferred again. An
override that contradicts what the model declares (another rank, another number) or names
no graph input is refused.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

import onnx
import onnx_ir as ir

from seqpasses.errors import BadInputError

__all__ = ["fix_input_shapes", "parse_input_shape", "with_input_shapes"]


def parse_input_shape(text: str) -> tuple[str, tuple[int, ...]]:
    """``NAME:2,3,224,224`` -> ``("NAME", (2, 3, 224, 224))``; ``NAME:`` is a scalar."""
    name, colon, dims = text.rpartition(":")
    if not colon or not name:
        raise BadInputError(f"--input-shape {text!r}: expected NAME:D1,D2,... (e.g. x:1,3,224,224)")
    try:
        shape = tuple(int(d) for d in dims.split(",")) if dims.strip() else ()
    except ValueError:
        raise BadInputError(f"--input-shape {text!r}: dims must be whole numbers") from None
    if any(d < 0 for d in shape):
        raise BadInputError(f"--input-shape {text!r}: dims must not be negative")
    return name, shape


def fix_input_shapes(model: ir.Model, shapes: Mapping[str, Sequence[int]]) -> list[str]:
    """Give the named graph inputs these shapes (see the module docstring); one note per
    input changed."""
    inputs = {value.name: value for value in model.graph.inputs}
    named: dict[str, int] = {}
    notes = []
    for name, dims in shapes.items():
        value = inputs.get(name)
        if value is None:
            known = ", ".join(sorted(n for n in inputs if n)) or "none"
            raise BadInputError(f"--input-shape {name}: no graph input of that name ({known})")
        old = value.shape
        if old is not None and len(old) != len(dims):
            raise BadInputError(
                f"--input-shape {name}: rank {len(dims)}, but the model declares {_text(old)}"
            )
        for axis, dim in enumerate(dims):
            declared = old[axis] if old is not None else None
            if isinstance(declared, int) and declared != dim:
                raise BadInputError(
                    f"--input-shape {name}: dim {axis} is {dim}, but the model declares "
                    f"{_text(old)}"
                )
            if isinstance(declared, ir.SymbolicDim) and declared.value:
                if named.get(declared.value, dim) != dim:
                    raise BadInputError(
                        f"--input-shape: dim '{declared.value}' fixed to both "
                        f"{named[declared.value]} and {dim}"
                    )
                named[declared.value] = dim
        notes.append(f"input shape {name}: {_text(old)} -> {_text(ir.Shape(list(dims)))}")
        value.shape = ir.Shape(list(dims))
    if named:
        for value in _values(model.graph):
            shape = value.shape
            if shape is not None and any(
                isinstance(d, ir.SymbolicDim) and d.value in named for d in shape
            ):
                value.shape = ir.Shape(
                    [
                        named[d.value] if isinstance(d, ir.SymbolicDim) and d.value in named else d
                        for d in shape
                    ]
                )
    return notes


def with_input_shapes(
    proto: onnx.ModelProto, shapes: Mapping[str, Sequence[int]]
) -> onnx.ModelProto:
    """A copy of ``proto`` whose graph inputs declare these shapes (nothing else changed): the
    original as --check must run it, on inputs of the fixed shapes."""
    copy = onnx.ModelProto()
    copy.CopyFrom(proto)
    for info in copy.graph.input:
        if info.name in shapes and info.type.HasField("tensor_type"):
            shape = info.type.tensor_type.shape
            shape.ClearField("dim")
            for dim in shapes[info.name]:
                shape.dim.add().dim_value = dim
    return copy


def _values(graph: ir.Graph) -> Iterator[ir.Value]:
    """The values of the model's signature: the main graph's inputs and outputs."""
    yield from graph.inputs
    yield from graph.outputs


def _text(shape: ir.Shape | None) -> str:
    if shape is None:
        return "(no shape)"
    return "[" + ", ".join(str(d) if isinstance(d, int) else (d.value or "?") for d in shape) + "]"

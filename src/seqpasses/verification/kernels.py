"""Spec-exact kernels that replace onnx.reference's where it departs from the ONNX spec.

The reference evaluator of onnx 1.23 has known faults on sequences (and a lenient Split and
Gather); the
verifier swaps these kernels in (:data:`REFERENCE_OVERRIDES`) so that a correct rewrite is not
reported as a mismatch and a wrong one is not hidden. ``tests/test_verify.py`` shows each
fault next to the spec's answer.
"""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import onnx
from onnx.reference.op_run import OpRun
from onnx.reference.ops.op_gather import Gather as _ReferenceGather
from onnx.reference.ops.op_loop import Loop as _ReferenceLoop
from onnx.reference.ops.op_split import CommonSplit

from seqpasses.core.sequence import split_squeezes

__all__ = ["REFERENCE_OVERRIDES", "overrides"]


def _as_list(sequence: Any) -> list[Any]:
    if sequence is None:
        return []
    if isinstance(sequence, np.ndarray) and sequence.ndim == 0:
        return []
    return list(sequence)


def _scalar(position: Any) -> int:
    return int(np.asarray(position).reshape(-1)[0])


class SequenceInsert(OpRun):
    """Spec-exact SequenceInsert: ``position == len`` appends; an empty sequence accepts 0."""

    op_domain = ""

    def _run(self, S: Any, T: Any, ind: Any = None) -> tuple[list[Any]]:
        items = _as_list(S)
        if ind is None:
            items.append(T)
            return (items,)
        position = _scalar(ind)
        n = len(items)
        if not -n <= position <= n:
            raise ValueError(f"SequenceInsert position {position} outside [-{n}, {n}]")
        items.insert(position + n if position < 0 else position, T)
        return (items,)


class SequenceErase(OpRun):
    """Spec-exact SequenceErase: range ``[-n, n-1]``, default the last element."""

    op_domain = ""

    def _run(self, S: Any, ind: Any = None) -> tuple[list[Any]]:
        items = _as_list(S)
        n = len(items)
        position = n - 1 if ind is None else _scalar(ind)
        if n == 0 or not -n <= position <= n - 1:
            raise ValueError(f"SequenceErase position {position} outside [-{n}, {n - 1}]")
        del items[position]
        return (items,)


class Optional(OpRun):
    """Spec-exact Optional: the value itself (the reference wraps it in a list), or None."""

    op_domain = ""

    def _run(self, x: Any = None, type: Any = None) -> tuple[Any]:
        return (x,)

    def _check_and_fix_outputs(self, res: tuple[Any, ...]) -> tuple[Any, ...]:
        # An empty optional is None; the reference's output check knows no such value.
        return res if len(res) == 1 and res[0] is None else super()._check_and_fix_outputs(res)


class SequenceMap(OpRun):
    """Spec-exact SequenceMap: any mix of sequence and tensor inputs; empty input, empty output."""

    op_domain = ""

    def _run(
        self, input_sequence: Any, *additional: Any, body: Any = None, attributes: Any = None
    ) -> tuple[Any, ...]:
        inputs = [input_sequence, *additional]
        length = len(input_sequence)
        results: list[list[Any]] = [[] for _ in body.output_names]
        for i in range(length):
            feeds = {
                name: (value[i] if isinstance(value, list) else value)
                for name, value in zip(body.input_names, inputs, strict=True)
            }
            for k, out in enumerate(body.run(None, feeds, attributes=attributes)):
                results[k].append(out)
        return tuple(results)


class Loop(_ReferenceLoop):
    """Loop whose scan outputs are stacked along a new axis 0, as the spec says.

    The reference joins them with ``np.vstack``, which concatenates rank >= 2 outputs
    (``[M*4, 3]`` instead of ``[M, 4, 3]``), and runs no iteration at all when the condition
    is absent (the spec: an absent condition is true).
    """

    op_domain = ""

    def _run(
        self,
        M: Any,
        cond: Any,
        *args: Any,
        context: Any = None,
        body: Any = None,
        attributes: Any = None,
        bindings: Any = None,
    ) -> tuple[Any, ...]:
        body = self.body  # type: ignore[attr-defined]
        names = body.input_names
        inputs: dict[str, Any] = dict.fromkeys(names)
        for name, value in zip(names[2:], args, strict=False):
            inputs[name] = value
        if context is not None:
            inputs.update(context)
        scans: list[list[Any]] = [[] for _ in range(self.K)]
        outputs: list[Any] = []
        it = 0
        if cond is None:  # an absent condition is true, and the body is given true
            cond = np.array(True)
        # ONNX Runtime gives the iteration number the shape the body declares ([1] in some
        # TorchScript exports), where a Slice may need it 1-D
        counter_shape = _declared_ones(body.input_types[0] if body.input_types else None)
        while (cond is None or bool(cond)) and (M is None or it < M):
            if names and names[0]:
                number = np.array(it, dtype=np.int64 if M is None else M.dtype)
                inputs[names[0]] = number.reshape(counter_shape)
            if len(names) > 1 and names[1]:
                inputs[names[1]] = cond
            run_body = self._run_body  # type: ignore[attr-defined]
            outputs = list(run_body(inputs, attributes=attributes, bindings=bindings))
            for k in range(self.K):
                scans[k].append(outputs[len(outputs) - self.K + k])
            cond = outputs[0]
            for name, value in zip(names[2:], outputs[1 : 1 + self.N], strict=False):
                inputs[name] = value
            it += 1
        final = [inputs[name] for name in names[2:]]
        types = self.body.output_types  # type: ignore[attr-defined]
        for k, values in enumerate(scans):
            final.append(
                np.stack(values) if values else _no_iteration(types[len(types) - self.K + k])
            )
        return self._check_and_fix_outputs(tuple(final))


def _declared_ones(type_proto: onnx.TypeProto | None) -> tuple[int, ...]:
    """``(1,)`` when a body input is declared ``[1]``, else ``()`` (a scalar)."""
    if type_proto is None or not type_proto.tensor_type.HasField("shape"):
        return ()
    dims = type_proto.tensor_type.shape.dim
    return (1,) if len(dims) == 1 and dims[0].dim_value == 1 else ()


def _no_iteration(type_proto: onnx.TypeProto) -> np.ndarray:
    """A scan output after zero iterations, as ONNX Runtime makes it: ``[0, *dims]`` when the
    body declares its output with numbers only, else ``[0]``."""
    tensor = type_proto.tensor_type
    dtype = np.dtype(
        onnx.helper.tensor_dtype_to_np_dtype(tensor.elem_type) if tensor.elem_type else np.float32
    )
    dims = [int(d.dim_value) for d in tensor.shape.dim if d.HasField("dim_value")]
    known = tensor.HasField("shape") and len(dims) == len(tensor.shape.dim)
    shape: tuple[int, ...] = (0, *dims) if known else (0,)
    return np.empty(shape, dtype=dtype)


def _checked_sizes(split: Any, dim: int, op: str) -> list[int]:
    """Explicit split sizes as the spec requires them: none negative, summing to the dim
    (onnx.reference slices whatever it is given; ONNX Runtime fails, as the spec says)."""
    sizes = [int(s) for s in np.asarray(split).reshape(-1)]
    if any(s < 0 for s in sizes) or sum(sizes) != dim:
        raise ValueError(f"{op}: split sizes {sizes} do not divide a dim of {dim}")
    return sizes


class Split(CommonSplit):
    """Spec-exact Split: explicit sizes must be non-negative and sum to the axis's dim."""

    op_domain = ""

    def _run(
        self, mat: Any, split: Any = None, axis: int = 0, num_outputs: Any = None
    ) -> tuple[Any, ...]:
        axis = axis + mat.ndim if axis < 0 else axis
        if split is not None:
            split = _checked_sizes(split, mat.shape[axis], "Split")
            if len(split) != self.n_outputs:
                raise ValueError(f"Split: {len(split)} sizes for {self.n_outputs} outputs")
        result = self.common_run(mat, split, axis=axis, num_outputs=num_outputs)  # type: ignore[no-untyped-call]
        return tuple(result)


class _SplitToSequenceBase(OpRun):
    strict_spec = False

    def _run(
        self, mat: Any, split: Any = None, axis: int = 0, keepdims: int = 1
    ) -> tuple[list[Any]]:
        axis = axis + mat.ndim if axis < 0 else axis
        dim = mat.shape[axis]
        rank = None if split is None else np.asarray(split).ndim
        if split is None:
            sizes = [1] * dim
        elif rank == 0:
            chunk = int(split)
            if chunk <= 0:
                raise ValueError(f"SplitToSequence: scalar split {chunk} is not positive")
            sizes = [chunk] * (dim // chunk) + ([dim % chunk] if dim % chunk else [])
        else:
            sizes = _checked_sizes(split, dim, "SplitToSequence")
        unit = all(s == 1 for s in sizes)
        squeeze = split_squeezes(rank, bool(keepdims), unit, self.strict_spec, mat.size == 0)
        if squeeze is None:
            raise ValueError(
                f"SplitToSequence: chunks {sizes} with keepdims=0 cannot drop the axis "
                "(ONNX Runtime fails here)"
            )
        bounds = np.cumsum([0, *sizes])
        parts = [np.take(mat, np.arange(a, b), axis=axis) for a, b in itertools.pairwise(bounds)]
        if squeeze:  # (empty chunks of any length: a reshape dropping the axis, as ORT does)
            parts = [p.reshape(p.shape[:axis] + p.shape[axis + 1 :]) for p in parts]
        return (parts,)


class SplitToSequence(_SplitToSequenceBase):
    """SplitToSequence as ONNX Runtime runs it: a scalar split with keepdims=0 drops the axis
    from chunks of one (and from empty chunks), and fails on other chunks."""

    op_domain = ""


class SplitToSequenceStrict(_SplitToSequenceBase):
    """SplitToSequence exactly as the spec says: keepdims is ignored when split is given."""

    op_domain = ""
    strict_spec = True


SplitToSequenceStrict.__name__ = "SplitToSequence"


class Gather(_ReferenceGather):
    """Spec-exact Gather: an index out of range fails, even where the result has no element
    (``numpy.take`` then takes nothing and raises nothing; ONNX Runtime fails)."""

    op_domain = ""

    def _run(self, x: Any, indices: Any, axis: Any = None) -> tuple[Any]:
        dim = np.asarray(x).shape[axis or 0]
        index = np.asarray(indices)
        if index.size and ((index < -dim) | (index >= dim)).any():
            raise IndexError(f"Gather: an index of {index.tolist()} is outside [-{dim}, {dim - 1}]")
        return super()._run(x, indices, axis=axis)  # type: ignore[no-untyped-call,no-any-return]


def overrides(strict_spec: bool = False) -> list[type[OpRun]]:
    """The kernels to swap in; ``strict_spec`` picks the spec's SplitToSequence (keepdims
    ignored when a split is given) over ONNX Runtime's."""
    split = SplitToSequenceStrict if strict_spec else SplitToSequence
    return [SequenceInsert, SequenceErase, split, Split, Gather, Optional, SequenceMap, Loop]


REFERENCE_OVERRIDES: tuple[type[OpRun], ...] = tuple(overrides())
"""Kernels the verifier swaps into the reference evaluator (see the module docstring)."""

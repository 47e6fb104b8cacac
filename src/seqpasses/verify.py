"""Differential verification: run the model before and after on the same inputs.

Both ``onnx.reference.ReferenceEvaluator`` and ONNX Runtime (when installed and able to
load the model) run both models on seeded random inputs made from the graph inputs' types.
Outputs are compared with dtype-aware tolerances, sequences element by element, shapes and
dtypes exactly.  A model that fails at run time must fail after optimizing too.

The reference evaluator of onnx 1.23 has known faults on sequences; the verifier replaces
those kernels with spec-exact ones (:data:`REFERENCE_OVERRIDES`) so that a correct rewrite is
not reported as a mismatch and a wrong one is not hidden.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnx
from onnx.reference import ReferenceEvaluator
from onnx.reference.op_run import OpRun
from onnx.reference.ops.op_loop import Loop as _ReferenceLoop
from onnx.reference.ops.op_split import CommonSplit

__all__ = ["REFERENCE_OVERRIDES", "VerifyReport", "random_inputs", "verify"]


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
    squeeze_scalar_one = True

    def _run(
        self, mat: Any, split: Any = None, axis: int = 0, keepdims: int = 1
    ) -> tuple[list[Any]]:
        axis = axis + mat.ndim if axis < 0 else axis
        dim = mat.shape[axis]
        squeeze = False
        if split is None:
            sizes = [1] * dim
            squeeze = not keepdims
        elif np.asarray(split).ndim == 0:
            chunk = int(split)
            if chunk <= 0:
                raise ValueError(f"SplitToSequence: scalar split {chunk} is not positive")
            sizes = [chunk] * (dim // chunk) + ([dim % chunk] if dim % chunk else [])
            squeeze = self.squeeze_scalar_one and chunk == 1 and not keepdims
        else:
            sizes = _checked_sizes(split, dim, "SplitToSequence")
        bounds = np.cumsum([0, *sizes])
        parts = [np.take(mat, np.arange(a, b), axis=axis) for a, b in itertools.pairwise(bounds)]
        if squeeze:
            parts = [np.squeeze(p, axis=axis) for p in parts]
        return (parts,)


class SplitToSequence(_SplitToSequenceBase):
    """SplitToSequence as ONNX Runtime runs it: a scalar split of 1 with keepdims=0 squeezes."""

    op_domain = ""


class SplitToSequenceStrict(_SplitToSequenceBase):
    """SplitToSequence exactly as the spec says: keepdims is ignored when split is given."""

    op_domain = ""
    squeeze_scalar_one = False


SplitToSequenceStrict.__name__ = "SplitToSequence"

REFERENCE_OVERRIDES: tuple[type[OpRun], ...] = (
    SequenceInsert,
    SequenceErase,
    SplitToSequence,
    Split,
    Optional,
    SequenceMap,
    Loop,
)
"""Kernels the verifier swaps into the reference evaluator (see the module docstring)."""


def _overrides(strict_spec: bool) -> list[type[OpRun]]:
    split = SplitToSequenceStrict if strict_spec else SplitToSequence
    return [SequenceInsert, SequenceErase, split, Split, Optional, SequenceMap, Loop]


# -- inputs ----------------------------------------------------------------------------------


def _random_tensor(
    tensor_type: onnx.TypeProto.Tensor, sizes: dict[str, int], rng: np.random.Generator
) -> np.ndarray:
    shape: list[int] = []
    if tensor_type.HasField("shape"):
        for dim in tensor_type.shape.dim:
            if dim.HasField("dim_value"):
                shape.append(dim.dim_value)
            else:
                name = dim.dim_param or ""
                if name not in sizes:
                    sizes[name] = int(rng.integers(2, 4))
                shape.append(sizes[name])
    dtype = onnx.helper.tensor_dtype_to_np_dtype(tensor_type.elem_type)
    if dtype == np.bool_:
        return rng.integers(0, 2, size=shape).astype(np.bool_)
    if np.issubdtype(dtype, np.integer):
        return rng.integers(-3, 4, size=shape).astype(dtype)
    if np.issubdtype(dtype, np.complexfloating):
        return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    if dtype == np.object_:
        return np.array(
            [f"s{int(v)}" for v in rng.integers(0, 9, size=shape).reshape(-1)], dtype=object
        ).reshape(shape)
    return rng.standard_normal(shape).astype(dtype)


def _random_value(
    type_proto: onnx.TypeProto, sizes: dict[str, int], rng: np.random.Generator
) -> Any:
    kind = type_proto.WhichOneof("value")
    if kind == "tensor_type":
        return _random_tensor(type_proto.tensor_type, sizes, rng)
    if kind == "sequence_type":
        element = type_proto.sequence_type.elem_type
        return [_random_value(element, sizes, rng) for _ in range(3)]
    if kind == "optional_type":
        return _random_value(type_proto.optional_type.elem_type, sizes, rng)
    raise ValueError(f"cannot make a random input of type {kind}")


def random_inputs(model: onnx.ModelProto, seed: int = 0) -> dict[str, Any]:
    """Seeded random feeds for the graph inputs that are not initializers.

    Symbolic dims are bound to one small size each, shared by every input that names them.
    """
    rng = np.random.default_rng(seed)
    initializers = {init.name for init in model.graph.initializer}
    sizes: dict[str, int] = {}
    return {
        inp.name: _random_value(inp.type, sizes, rng)
        for inp in model.graph.input
        if inp.name not in initializers
    }


# -- running and comparing ---------------------------------------------------------------------


@dataclass
class VerifyReport:
    """The result of :func:`verify`: ``ok`` unless some output differed."""

    ok: bool = True
    runs: int = 0
    engines: list[str] = field(default_factory=list)
    mismatch: str = ""
    notes: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        if self.ok:
            return f"verified: {self.runs} run(s) on {', '.join(self.engines) or 'no engine'}, outputs agree"
        return f"MISMATCH: {self.mismatch}"


def _tolerance(dtype: np.dtype[Any]) -> tuple[float, float]:
    if dtype == np.float16:
        return 1e-3, 1e-3
    if dtype in (np.float32, np.complex64):
        return 1e-5, 1e-6
    return 1e-9, 1e-12


def _compare(name: str, a: Any, b: Any) -> str:
    """'' when equal, else what differs."""
    if isinstance(a, list) or isinstance(b, list):
        if not (isinstance(a, list) and isinstance(b, list)):
            return f"{name}: one is a sequence, the other is not"
        if len(a) != len(b):
            return f"{name}: sequence length {len(a)} vs {len(b)}"
        for i, (x, y) in enumerate(zip(a, b, strict=False)):
            diff = _compare(f"{name}[{i}]", x, y)
            if diff:
                return diff
        return ""
    if a is None or b is None:
        return "" if a is None and b is None else f"{name}: one is None"
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype != b.dtype:
        return f"{name}: dtype {a.dtype} vs {b.dtype}"
    if a.shape != b.shape:
        return f"{name}: shape {a.shape} vs {b.shape}"
    if a.dtype == object or a.dtype.kind in "biuSU":
        return "" if np.array_equal(a, b) else f"{name}: values differ"
    rtol, atol = _tolerance(a.dtype)
    if np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=True):
        return ""
    worst = float(np.max(np.abs(a.astype(np.complex128) - b.astype(np.complex128))))
    return f"{name}: max abs difference {worst:g}"


Runner = Callable[[dict[str, Any]], list[Any]]


def _reference_runner(model: onnx.ModelProto, strict_spec: bool) -> Runner:
    try:
        evaluator = ReferenceEvaluator(model, new_ops=_overrides(strict_spec))
    except Exception as error:
        return _failing(f"{type(error).__name__}: {error}")
    return lambda feeds: list(evaluator.run(None, feeds))


def _ort_runner(model: onnx.ModelProto) -> Runner | str | None:
    """A runner on ONNX Runtime; None when it is not installed, or why it cannot load the model."""
    try:
        import onnxruntime as ort
    except ImportError:
        return None
    try:
        options = ort.SessionOptions()
        options.log_severity_level = 4
        session = ort.InferenceSession(
            model.SerializeToString(), options, providers=["CPUExecutionProvider"]
        )
    except Exception as error:
        text = str(error).strip()
        return text.splitlines()[0] if text else type(error).__name__
    return lambda feeds: list(session.run(None, feeds))


def _failing(message: str) -> Runner:
    def fail(feeds: dict[str, Any]) -> list[Any]:
        raise RuntimeError(message)

    return fail


def _outcome(runner: Runner, feeds: dict[str, Any]) -> tuple[list[Any] | None, str]:
    try:
        return runner(feeds), ""
    except Exception as error:
        text = str(error).strip()
        return None, f"{type(error).__name__}: {text.splitlines()[0] if text else ''}"


def _check_pair(
    engine: str,
    names: Sequence[str],
    before: tuple[list[Any] | None, str],
    after: tuple[list[Any] | None, str],
) -> str:
    (out_b, err_b), (out_a, err_a) = before, after
    if out_b is None and out_a is None:
        return ""
    if out_b is None:
        return f"{engine}: original failed ({err_b}) but optimized ran"
    if out_a is None:
        return f"{engine}: optimized failed ({err_a}) but original ran"
    for name, x, y in zip(names, out_b, out_a, strict=False):
        diff = _compare(name, x, y)
        if diff:
            return f"{engine}: {diff}"
    return ""


def verify(
    before: onnx.ModelProto,
    after: onnx.ModelProto,
    *,
    runs: int = 3,
    seed: int = 0,
    strict_spec: bool = False,
    use_ort: bool = True,
) -> VerifyReport:
    """Run ``before`` and ``after`` on ``runs`` seeded random inputs and compare their outputs."""
    report = VerifyReport()
    names = [out.name for out in before.graph.output]
    if names != [out.name for out in after.graph.output]:
        report.ok = False
        report.mismatch = "graph output names differ"
        return report
    engines: list[tuple[str, Runner, Runner]] = [
        (
            "onnx.reference",
            _reference_runner(before, strict_spec),
            _reference_runner(after, strict_spec),
        )
    ]
    if use_ort:
        ort_before, ort_after = _ort_runner(before), _ort_runner(after)
        if callable(ort_before):
            # An optimized model ONNX Runtime cannot load is a failure on every input: fine only
            # where the original fails at run time too.
            after_runner = (
                ort_after if callable(ort_after) else _failing(f"cannot load: {ort_after}")
            )
            engines.append(("onnxruntime", ort_before, after_runner))
    report.engines = [name for name, _, _ in engines]
    for run in range(runs):
        feeds = random_inputs(before, seed + run)
        for name, run_before, run_after in engines:
            diff = _check_pair(name, names, _outcome(run_before, feeds), _outcome(run_after, feeds))
            if diff:
                report.ok = False
                report.mismatch = f"run {run} (seed {seed + run}): {diff}"
                return report
        report.runs += 1
    return report

"""Value-by-value comparison of two models' outputs: dtypes and shapes exactly, floats with
tolerances from the dtype and the outputs' magnitude, sequences element by element.

Strings are strings however an engine hands them over (numpy ``object``, ``<U``, ``S``):
onnx.reference gives ``<U`` where ONNX Runtime gives ``object``. The dtypes numpy holds
through ml_dtypes (bfloat16, the float8 and float4 kinds, int4, uint4, int2) are compared
as the numbers they hold, floats with their own dtype's tolerance."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["compare"]


_TEXT = "OSU"


def _text(value: object) -> str:
    return value.decode("utf-8", "surrogateescape") if isinstance(value, bytes) else str(value)


def _as_text(a: np.ndarray) -> np.ndarray:
    """``a``'s strings as an array of ``str`` objects."""
    out = np.empty(a.shape, dtype=object)
    for index, value in np.ndenumerate(a):
        out[index] = _text(value)
    return out


def _tolerance(a: np.ndarray) -> tuple[float, float]:
    """rtol and atol for outputs of ``a``'s dtype and magnitude: a few units in the last place
    of the largest value (summation order differs between equivalent graphs)."""
    dtype = a.dtype
    if dtype.kind == "V" or (dtype.kind == "f" and dtype.itemsize == 1):  # (ml_dtypes' floats)
        eps = float(np.finfo(dtype).eps)
        finite = a.astype(np.float64)
        finite = np.abs(finite[np.isfinite(finite)])
        scale = float(finite.max()) if finite.size else 0.0
        return eps, max(eps, 16 * eps * scale)
    if dtype in (np.float16, np.float32, np.complex64):
        rtol = 1e-3 if dtype == np.float16 else 1e-5
    else:
        rtol = 1e-9
    eps = float(np.finfo(dtype).eps)
    finite = np.abs(a[np.isfinite(a)]) if a.size else np.zeros(0)
    scale = float(finite.max()) if finite.size else 0.0
    base = 1e-3 if dtype == np.float16 else 1e-6 if dtype in (np.float32, np.complex64) else 1e-12
    return rtol, max(base, 16 * eps * scale)


def compare(name: str, a: Any, b: Any) -> str:
    """'' when equal, else what differs."""
    if isinstance(a, list) or isinstance(b, list):
        if not (isinstance(a, list) and isinstance(b, list)):
            return f"{name}: one is a sequence, the other is not"
        if len(a) != len(b):
            return f"{name}: sequence length {len(a)} vs {len(b)}"
        for i, (x, y) in enumerate(zip(a, b, strict=False)):
            diff = compare(f"{name}[{i}]", x, y)
            if diff:
                return diff
        return ""
    if a is None or b is None:
        return "" if a is None and b is None else f"{name}: one is None"
    a, b = np.asarray(a), np.asarray(b)
    if a.dtype.kind in _TEXT and b.dtype.kind in _TEXT:
        if a.shape != b.shape:
            return f"{name}: shape {a.shape} vs {b.shape}"
        return "" if np.array_equal(_as_text(a), _as_text(b)) else f"{name}: values differ"
    if a.dtype != b.dtype:
        return f"{name}: dtype {a.dtype} vs {b.dtype}"
    if a.shape != b.shape:
        return f"{name}: shape {a.shape} vs {b.shape}"
    if a.dtype.kind in "biu":
        return "" if np.array_equal(a, b) else f"{name}: values differ"
    if a.dtype.kind == "V":  # (ml_dtypes' numbers)
        try:
            np.finfo(a.dtype)
        except (TypeError, ValueError):  # (int4, uint4, int2: integers)
            same = np.array_equal(a.astype(np.int64), b.astype(np.int64))
            return "" if same else f"{name}: values differ"
    rtol, atol = _tolerance(a)
    if a.dtype.kind == "V" or a.dtype.itemsize == 1:
        a, b = a.astype(np.float64), b.astype(np.float64)
    if np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=True):
        return ""
    worst = float(np.max(np.abs(a.astype(np.complex128) - b.astype(np.complex128))))
    return f"{name}: max abs difference {worst:g}"

"""Value-by-value comparison of two models' outputs: dtypes and shapes exactly, floats with
tolerances from the dtype and the outputs' magnitude, sequences element by element."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["compare"]


def _tolerance(a: np.ndarray) -> tuple[float, float]:
    """rtol and atol for outputs of ``a``'s dtype and magnitude: a few units in the last place
    of the largest value (summation order differs between equivalent graphs)."""
    dtype = a.dtype
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
    if a.dtype != b.dtype:
        return f"{name}: dtype {a.dtype} vs {b.dtype}"
    if a.shape != b.shape:
        return f"{name}: shape {a.shape} vs {b.shape}"
    if a.dtype == object or a.dtype.kind in "biuSU":
        return "" if np.array_equal(a, b) else f"{name}: values differ"
    rtol, atol = _tolerance(a)
    if np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=True):
        return ""
    worst = float(np.max(np.abs(a.astype(np.complex128) - b.astype(np.complex128))))
    return f"{name}: max abs difference {worst:g}"

"""Issue 18: the self-check's full ONNX check, run slice by slice (seqpasses.fullcheck), fails
exactly the models onnx's own ``check_model(full_check=True)`` fails."""

from __future__ import annotations

from pathlib import Path

import onnx
import onnx.parser
import pytest

from helpers import ROOT, SHARED
from seqpasses.fullcheck import _sliced_inference, full_check

HEADER = '<ir_version: 8, opset_import: ["" : 18, "local" : 1]>'

# Each valid model reads across slices of 1-3 nodes: a Constant's data (the Reshape shape), a
# small initializer's data, an outer value inside a Loop body and an If branch, and a function
# called late. BROKEN lists one-line edits, each of which onnx's full check rejects.
VALID = (
    HEADER
    + """
main (float[2, 3] x, int64 n, bool flag) => (float[3, 2] y, float[6] z, float[2, 3] w)
    <int64[1] flat = {6}> {
    shape = Constant <value = int64[2] {3, 2}> ()
    a = Relu (x)
    b = Neg (a)
    y = Reshape (b, shape)
    c = Abs (x)
    z = Reshape (c, flat)
    d = Sigmoid (x)
    e = Loop (n, flag) <body = body (int64 i, bool cond) => (bool cond_out, float[2, 3] row) {
        cond_out = Identity (cond)
        row = Add (d, x)
    }>
    f = If (flag) <then_branch = then () => (float[2, 3] t) { t = Mul (d, x) },
                   else_branch = other () => (float[2, 3] o) { o = Sub (d, x) }>
    g = local.twice (f)
    w = Add (g, d)
}
<domain: "local", opset_import: ["" : 18]>
twice (v) => (u) {
    u = Add (v, v)
}
"""
)

BROKEN = {
    "a declared shape that the Constant's data contradicts": (
        "float[3, 2] y, float[6] z",
        "float[2, 3] y, float[6] z",
    ),
    "a declared shape that the initializer's data contradicts": (
        "float[3, 2] y, float[6] z",
        "float[3, 2] y, float[5] z",
    ),
    "a Loop body that adds an int64 to a float": ("row = Add (d, x)", "row = Add (d, n)"),
    "an If branch whose type differs from the declared output": (
        "(float[2, 3] t) { t = Mul (d, x) }",
        "(int64[2, 3] t) { t = Mul (d, x) }",
    ),
    "a function called with an int64": ("g = local.twice (f)", "g = local.twice (n)"),
    "a declared output shape that the function's result contradicts": (
        "float[2, 3] w)",
        "float[2, 4] w)",
    ),
}


def _model(text: str) -> onnx.ModelProto:
    return onnx.parser.parse_model(text)


def _onnx_passes(model: onnx.ModelProto) -> bool:
    try:
        onnx.checker.check_model(model, full_check=True)
    except Exception:
        return False
    return True


def test_the_valid_model_passes_every_slicing() -> None:
    model = _model(VALID)
    assert _onnx_passes(model)
    for size in (1, 2, 3, 5):
        _sliced_inference(model, size)
        full_check(model, slice_size=size)


@pytest.mark.parametrize("edit", sorted(BROKEN))
def test_a_broken_model_fails_every_slicing(edit: str) -> None:
    before, after = BROKEN[edit]
    assert before in VALID
    model = _model(VALID.replace(before, after))
    assert not _onnx_passes(model), "the edit must break the model for onnx's own check"
    for size in (1, 2, 3, 5):
        with pytest.raises(Exception):  # noqa: B017 (onnx raises several kinds)
            _sliced_inference(model, size)
        with pytest.raises((onnx.checker.ValidationError, onnx.shape_inference.InferenceError)):
            full_check(model, slice_size=size)


def _sample_models() -> list[Path]:
    paths = sorted((ROOT / "sample_models").rglob("*.onnx"))
    if SHARED.exists():
        paths += sorted((SHARED / "conformance").rglob("*.onnx"))
    return paths


def test_slices_agree_with_onnx_on_every_stored_model() -> None:
    # A sliced run that failed a valid model would only cost time (onnx's own check confirms
    # every complaint), but it must not happen: each slicing must agree with onnx.
    disagree = []
    for path in _sample_models():
        model = onnx.load(path)
        valid = _onnx_passes(model)
        for size in (1, 3):
            try:
                onnx.checker.check_model(model)
                _sliced_inference(model, size)
                sliced = True
            except Exception:
                sliced = False
            if sliced != valid:
                disagree.append(f"{path.name} (slice {size}): onnx {valid}, sliced {sliced}")
    assert not disagree

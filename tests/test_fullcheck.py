"""Issue 18: the self-check's full ONNX check, run slice by slice (seqpasses.fullcheck), fails
exactly the models onnx's own ``check_model(full_check=True)`` fails."""

from __future__ import annotations

import random
from pathlib import Path

import onnx
import onnx.parser
import pytest

from helpers import ROOT, SHARED
from seqpasses.fullcheck import _sliced_inference, full_check
from seqpasses.report import all_proto_graphs

HEADER = '<ir_version: 8, opset_import: ["" : 18, "local" : 1]>'

# Each valid model reads across slices of 1-3 nodes: a Constant's data (the Reshape shape), a
# small initializer's data, an outer value inside a Loop body and an If branch, and a function
# called late. BROKEN lists one-line edits, each of which onnx's full check rejects.
VALID = (
    HEADER
    + """
main (float[2, 3] x, int64 n, bool flag) => (float[3, 2] y, float[6] z, float[2, 3] w, float[2, 3] x)
    <int64[1] flat = {6}, float[2, 3] d, float[2, 3] x> {
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
    "a graph input returned as an output of another shape": (
        "float[2, 3] w, float[2, 3] x)",
        "float[2, 3] w, float[2, 4] x)",
    ),
    "a value_info that contradicts what a later slice reads": (
        "float[2, 3] d, float[2, 3] x>",
        "float[2, 2] d, float[2, 3] x>",
    ),
    "a declared output shape that the function's result contradicts": (
        "float[2, 3] w, float[2, 3] x)",
        "float[2, 4] w, float[2, 3] x)",
    ),
}


def _model(text: str) -> onnx.ModelProto:
    return onnx.parser.parse_model(text)


def _sliced_passes(model: onnx.ModelProto, size: int) -> bool:
    """Whether the structural check and the sliced inference (slices of ``size``) pass."""
    try:
        onnx.checker.check_model(model)
        _sliced_inference(model, size)
    except Exception:
        return False
    return True


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
            sliced = _sliced_passes(model, size)
            if sliced != valid:
                disagree.append(f"{path.name} (slice {size}): onnx {valid}, sliced {sliced}")
    assert not disagree


def _mutant(model: onnx.ModelProto, rng: random.Random) -> onnx.ModelProto | None:
    """``model`` with one declared type or one int64 Constant changed at random."""
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    graph = rng.choice([g for g in all_proto_graphs(copy) if isinstance(g, onnx.GraphProto)])
    if rng.random() < 0.2:
        constants = [
            n.attribute[0].t
            for n in graph.node
            if n.op_type == "Constant"
            and n.attribute[0].type == onnx.AttributeProto.TENSOR
            and n.attribute[0].t.data_type == onnx.TensorProto.INT64
            and len(n.attribute[0].t.int64_data)
        ]
        if not constants:
            return None
        tensor = rng.choice(constants)
        tensor.int64_data[rng.randrange(len(tensor.int64_data))] = rng.choice([0, 1, 2, -1, 6])
        return copy
    declared = [
        v
        for v in [*graph.value_info, *graph.output, *graph.input]
        if v.type.HasField("tensor_type")
    ]
    if not declared:
        return None
    tensor_type = rng.choice(declared).type.tensor_type
    dims = tensor_type.shape.dim if tensor_type.HasField("shape") else []
    if dims and rng.random() < 0.6:
        rng.choice(dims).dim_value = rng.choice([1, 2, 3, 4, 5, 7])
    else:
        tensor_type.elem_type = rng.choice([1, 6, 7, 9, 10, 11])
    return copy


def test_slices_agree_with_onnx_on_mutants_of_the_stored_models() -> None:
    # One declared type or constant changed at random: onnx's check fails about half of
    # them, and slicing must fail exactly those (a false pass would weaken the self-check).
    rng = random.Random(0)
    models = [onnx.load(path) for path in sorted((ROOT / "sample_models").rglob("*.onnx"))]
    models = [m for m in models if _onnx_passes(m)]
    tried, failing, disagree = 0, 0, []
    while tried < 300:
        model = _mutant(rng.choice(models), rng)
        if model is None:
            continue
        try:
            onnx.checker.check_model(model)
        except Exception:
            continue  # (the structural check runs on the whole model either way)
        tried += 1
        valid = _onnx_passes(model)
        failing += not valid
        for size in (1, 3):
            sliced = _sliced_passes(model, size)
            if sliced != valid:
                disagree.append(f"mutant {tried} (slice {size}): onnx {valid}, sliced {sliced}")
    assert failing > 50  # (the mutants do break models)
    assert not disagree

"""Dims that ``seqpasses shapes -o`` writes as arithmetic on the inputs' names, where onnx's
inference leaves them unknown: a convolution's or pooling window's spatial dims
(``floor((H-1)/2)+1``), a transposed convolution's (``2*H+1``), a concatenation's axis
(``M+N``), a slice to a named end (``min(N,128)``, ``floor(N/2)``) and what broadcasts with
it, a slice a size is sure to reach (``x[:-2]`` of ``T+2``), a reshape to a product (``B*N``,
``4*N``, ``3*H*W``), a range to a name (``N``, ``N+2``), an expand to a shape torch computes,
a resize (to another's size, ``2*P``), and a graph output an exporter declared with
made-up names (``Relu_dim_0``). Each written expression is checked on ONNX Runtime runs at several sizes: evaluated with
the sizes the inputs were given, it is the size every value has."""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest

from helpers import run_cli

HEADER = '<ir_version: 8, opset_import: ["" : 17]>\n'

CONV = (
    HEADER
    + """
g (float[N,3,H,W] x, float[8,3,3,3] w, float[8,8,3,3] w8, float[8,8,2,2] wt)
    => (float[N,8,?,?] a, float[N,8,?,?] t, float[N,8,?,?] s, float[N,8,?,?] v,
        float[N,8,?,?] m) {
  c1 = Conv <strides = [2, 2], pads = [1, 1, 1, 1]> (x, w)
  r = Relu (c1)
  c2 = Conv <dilations = [2, 2]> (r, w8)
  p = MaxPool <kernel_shape = [3, 3], strides = [2, 2], pads = [1, 1, 1, 1]> (c2)
  a = AveragePool <kernel_shape = [2, 2]> (p)
  t = ConvTranspose <strides = [2, 2]> (r, wt)
  s = Conv <auto_pad = "SAME_UPPER", strides = [3, 3]> (r, w8)
  v = Conv <auto_pad = "VALID", strides = [2, 1]> (r, w8)
  m = MaxPool <kernel_shape = [3, 2], strides = [2, 2], ceil_mode = 1> (r)
}
"""
)

CONCAT_SLICE = (
    HEADER
    + """
g (float[B,N,16] x, float[B,M,16] y, float[1,128,16] pos) => (float[B,?,16] o, float[B,?,16] h) {
  c = Concat <axis = 1> (x, y)
  cx = Concat <axis = 1> (x, x, y)
  o = Relu (cx)
  s = Shape (x)
  i1 = Constant <value = int64 {1}> ()
  n = Gather (s, i1)
  ax0 = Constant <value = int64[1] {0}> ()
  z1 = Constant <value = int64[1] {0}> ()
  one1 = Constant <value = int64[1] {1}> ()
  nu = Unsqueeze (n, ax0)
  p = Slice (pos, z1, nu, one1)
  a = Add (x, p)
  two = Constant <value = int64 {2}> ()
  half = Div (n, two)
  hu = Unsqueeze (half, ax0)
  h = Slice (a, z1, hu, one1)
}
"""
)

RESHAPE = (
    HEADER
    + """
g (float[B,N,16] x) => (float[Relu_dim_0, Relu_dim_1, Relu_dim_2] r, float[B,?,4] v) {
  s = Shape (x)
  i0 = Constant <value = int64 {0}> ()
  i1 = Constant <value = int64 {1}> ()
  b = Gather (s, i0)
  n = Gather (s, i1)
  ax0 = Constant <value = int64[1] {0}> ()
  bu = Unsqueeze (b, ax0)
  m1 = Constant <value = int64[1] {-1}> ()
  four = Constant <value = int64[1] {4}> ()
  target = Concat <axis = 0> (bu, m1, four)
  v = Reshape (x, target)
  bn = Mul (b, n)
  bnu = Unsqueeze (bn, ax0)
  sixteen = Constant <value = int64[1] {16}> ()
  target2 = Concat <axis = 0> (bnu, sixteen)
  v2 = Reshape (x, target2)
  flat = Constant <value = int64[2] {-1, 16}> ()
  v3 = Reshape (x, flat)
  reps = Constant <value = int64[3] {1, 2, 1}> ()
  ti = Tile (x, reps)
  r = Relu (x)
}
"""
)

_SIZES = {
    "conv": [{"N": 1, "H": 9, "W": 12}, {"N": 2, "H": 16, "W": 13}, {"N": 1, "H": 30, "W": 21}],
    "concat_slice": [
        {"B": 1, "N": 5, "M": 2},
        {"B": 2, "N": 128, "M": 7},
        {"B": 1, "N": 1, "M": 1},
    ],
    "reshape": [{"B": 1, "N": 5}, {"B": 3, "N": 2}],
}


RANGE = (
    HEADER
    + """
g (float[B,N] x) => (int64[?] a, int64[?] b, int64[?] c, int64[?] d, float[?] e) {
  s = Shape (x)
  one = Constant <value = int64 {1}> ()
  n = Gather <axis = 0> (s, one)
  zero = Constant <value = int64 {0}> ()
  a = Range (zero, n, one)
  minus2 = Constant <value = int64 {-2}> ()
  b = Range (minus2, n, one)
  c = Range (one, n, one)
  two = Constant <value = int64 {2}> ()
  d = Range (zero, n, two)
  nf = Cast <to = 1> (n)
  zf = Constant <value = float {0}> ()
  of = Constant <value = float {1}> ()
  e = Range (zf, nf, of)
}
"""
)
_SIZES["range"] = [{"B": 2, "N": 5}, {"B": 1, "N": 1}, {"B": 1, "N": 0}]

VISION = (
    HEADER
    + """
g (float[B,T,4] x, float[B,2,4] z, float[1,1,4] cls, float[B,15,H,W] f, float[B,3,P,Q] img)
    => (float[B,?,4] tokens, float[B,?,5] flat3, float[?,?,?,?] up) {
  c = Concat <axis = 1> (x, z)
  s0 = Constant <value = int64[1] {0}> ()
  one = Constant <value = int64[1] {1}> ()
  m1 = Constant <value = int64[1] {-1}> ()
  m2 = Constant <value = int64[1] {-2}> ()
  big = Constant <value = int64[1] {9223372036854775807}> ()
  chomp = Slice (c, s0, m2, one)
  tail = Slice (c, m2, big, one)
  mid = Slice (c, one, m1, one)
  sx = Shape (x)
  i0 = Constant <value = int64 {0}> ()
  b = Gather (sx, i0)
  bu = Unsqueeze (b, s0)
  target = Concat <axis = 0> (bu, m1, m1)
  flat = Reshape (target, m1)
  st = Shape (flat)
  ones = ConstantOfShape <value = int64[1] {1}> (st)
  neg = Mul (ones, m1)
  eq = Equal (flat, neg)
  wanted = Where (eq, ones, flat)
  e = Expand (cls, wanted)
  tokens = Concat <axis = 1> (e, x)
  hw = Shape <start = 2> (f)
  wl = Shape <start = 3> (f)
  three = Constant <value = int64[1] {3}> ()
  five = Constant <value = int64[1] {5}> ()
  t5 = Concat <axis = 0> (bu, three, five, m1, wl)
  v = Reshape (f, t5)
  tp = Transpose <perm = [0, 3, 4, 1, 2]> (v)
  t3 = Concat <axis = 0> (bu, m1, five)
  flat3 = Reshape (tp, t3)
  bc = Shape <end = 2> (img)
  sizes = Concat <axis = 0> (bc, hw)
  r = Resize (img, "", "", sizes)
  sc = Constant <value = float[4] {1, 1, 2, 2}> ()
  up = Resize <mode = "nearest"> (img, "", sc)
}
"""
)
_SIZES["vision"] = [
    {"B": 1, "T": 5, "H": 3, "W": 4, "P": 5, "Q": 6},
    {"B": 2, "T": 0, "H": 1, "W": 7, "P": 2, "Q": 1},
]


def _evaluate(expression: str, sizes: dict[str, int]) -> int:
    """The size an expression seqpasses writes stands for, the names bound to ``sizes``."""
    python = re.sub(r"\bceil\(", "_ceil(", re.sub(r"\bfloor\(", "_floor(", expression))
    scope = {"_floor": math.floor, "_ceil": math.ceil, "min": min, **sizes}
    return int(eval(python, {"__builtins__": {}}, scope))


def _written(model: str, tmp_path: Path) -> tuple[Path, dict[str, list[int | str | None]]]:
    source, out = tmp_path / "in.onnx", tmp_path / "typed.onnx"
    onnx.save(onnx.parser.parse_model(model), source)
    result = run_cli("shapes", source, "-o", out, "-q")
    assert result.returncode == 0, result.stderr
    written = onnx.load(out)
    claims: dict[str, list[int | str | None]] = {}
    for info in (*written.graph.value_info, *written.graph.output):
        shape = info.type.tensor_type.shape
        claims[info.name] = [
            d.dim_value if d.HasField("dim_value") else (d.dim_param or None) for d in shape.dim
        ]
    return out, claims


def _every_value(path: Path, feeds: dict[str, np.ndarray]) -> dict[str, tuple[int, ...]]:
    model = onnx.load(path)
    present = {o.name for o in model.graph.output}
    for node in model.graph.node:
        for name in node.output:
            if name not in present:
                model.graph.output.append(onnx.helper.make_empty_tensor_value_info(name))
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    session = ort.InferenceSession(model.SerializeToString(), options)
    names = [o.name for o in model.graph.output]
    return {n: np.asarray(v).shape for n, v in zip(names, session.run(None, feeds), strict=True)}


def _feeds(case: str, sizes: dict[str, int]) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    if case == "conv":
        n, h, w = sizes["N"], sizes["H"], sizes["W"]
        shapes = {"x": (n, 3, h, w), "w": (8, 3, 3, 3), "w8": (8, 8, 3, 3), "wt": (8, 8, 2, 2)}
    elif case == "reshape":
        shapes = {"x": (sizes["B"], sizes["N"], 16)}
    elif case == "range":
        shapes = {"x": (sizes["B"], sizes["N"])}
    elif case == "vision":
        b, t, h, w, p, q = (sizes[k] for k in "BTHWPQ")
        shapes = {
            "x": (b, t, 4),
            "z": (b, 2, 4),
            "cls": (1, 1, 4),
            "f": (b, 15, h, w),
            "img": (b, 3, p, q),
        }
    else:
        b, n, m = sizes["B"], sizes["N"], sizes["M"]
        shapes = {"x": (b, n, 16), "y": (b, m, 16), "pos": (1, 128, 16)}
    return {k: rng.standard_normal(s).astype(np.float32) for k, s in shapes.items()}


@pytest.mark.parametrize(
    ("case", "model", "expected"),
    [
        (
            "conv",
            CONV,
            {
                "c1": ["N", 8, "floor((H-1)/2)+1", "floor((W-1)/2)+1"],
                "r": ["N", 8, "floor((H-1)/2)+1", "floor((W-1)/2)+1"],
                "c2": ["N", 8, "floor((H-1)/2)-3", "floor((W-1)/2)-3"],
                "p": ["N", 8, "floor(floor((H-1)/2)/2)-1", "floor(floor((W-1)/2)/2)-1"],
                "t": ["N", 8, "2*floor((H-1)/2)+2", "2*floor((W-1)/2)+2"],
                "m": ["N", 8, "ceil(floor((H-1)/2)/2)", "ceil((floor((W-1)/2)-1)/2)+1"],
            },
        ),
        (
            "concat_slice",
            CONCAT_SLICE,
            {
                "c": ["B", "M+N", 16],
                "cx": ["B", "M+2*N", 16],
                "o": ["B", "M+2*N", 16],
                "p": [1, "min(N,128)", 16],
                "a": ["B", "N", 16],
                "h": ["B", "floor(N/2)", 16],
            },
        ),
        (
            "reshape",
            RESHAPE,
            {
                "v": ["B", "4*N", 4],
                "v2": ["B*N", 16],
                "v3": ["B*N", 16],
                "ti": ["B", "2*N", 16],
                # a graph output an exporter declared with made-up names gets the inputs'
                "r": ["B", "N", 16],
            },
        ),
        (
            # arange(n) (torchvision's anchor grids): a length a name gives, from a start at
            # or below 0 by steps of 1; none claimed where it could be below 0 or is a ratio
            "range",
            RANGE,
            {"a": ["N"], "b": ["N+2"], "c": [None], "d": [None], "e": ["N"]},
        ),
        (
            # what vision and sequence exports do with sizes: a causal conv's chomp x[:, :-2]
            # and the slices a size is sure to reach; torch's expand(b, -1, -1) of a class
            # token; view(B, 3, 5, -1, W) and its flattening; a resize to another's size
            # and by whole scales
            "vision",
            VISION,
            {
                "chomp": ["B", "T", 4],
                "tail": ["B", 2, 4],
                "mid": ["B", "T", 4],
                "e": ["B", 1, 4],
                "tokens": ["B", "T+1", 4],
                "v": ["B", 3, 5, "H", "W"],
                "flat3": ["B", "3*H*W", 5],
                "r": ["B", 3, "H", "W"],
                "up": ["B", 3, "2*P", "2*Q"],
            },
        ),
    ],
)
def test_written_arithmetic_on_names_holds_on_runs(
    case: str, model: str, expected: dict[str, list[int | str]], tmp_path: Path
) -> None:
    out, claims = _written(model, tmp_path)
    for name, dims in expected.items():
        assert claims[name] == dims, name
    for sizes in _SIZES[case]:
        ran = _every_value(out, _feeds(case, sizes))
        for name, dims in claims.items():
            if name not in ran:
                continue
            assert len(dims) == len(ran[name]), name
            for claimed, actual in zip(dims, ran[name], strict=True):
                if isinstance(claimed, int):
                    assert claimed == actual, (name, dims, ran[name])
                elif claimed is not None:
                    assert _evaluate(claimed, sizes) == actual, (name, claimed, sizes, actual)


def test_floor_division_keeps_one_spelling_and_simplifies_what_divides() -> None:
    import onnx_ir as ir

    from seqpasses.core.dims import add_dims, floor_div, scale_dim

    h = ir.SymbolicDim("H")
    assert floor_div(9, 2) == 4 and floor_div(9, 2, ceil=True) == 5
    assert floor_div(h, 1) is h
    assert floor_div(scale_dim(h, 4), 2) == ir.SymbolicDim("2*H")
    assert floor_div(add_dims([h, 4]), 2) == ir.SymbolicDim("floor(H/2)+2")
    assert floor_div(add_dims([h, -1]), 2) == ir.SymbolicDim("floor((H-1)/2)")
    assert floor_div(h, 3, ceil=True) == ir.SymbolicDim("ceil(H/3)")
    # what was written parses back into its terms: sums of it stay one expression
    written = add_dims([floor_div(add_dims([h, -1]), 2), 1])
    assert add_dims([written, written, -2]) == ir.SymbolicDim("2*floor((H-1)/2)")
    assert floor_div(ir.SymbolicDim(None), 2).value is None


def test_products_multiply_out_and_sizes_settle_comparisons() -> None:
    import onnx_ir as ir

    from seqpasses.core.arithmetic import at_least, divide_dims, multiply_dims, scale_dim
    from seqpasses.core.dims import add_dims

    h, w, t = ir.SymbolicDim("H"), ir.SymbolicDim("W"), ir.SymbolicDim("T")
    assert multiply_dims(add_dims([h, 1]), add_dims([w, 1])) == ir.SymbolicDim("H+H*W+W+1")
    assert divide_dims(scale_dim(add_dims([h, 1]), 4), 2) == ir.SymbolicDim("2*H+2")
    assert divide_dims(add_dims([h, 1]), 2) == ir.SymbolicDim(None)  # (not exact: unknown)
    assert at_least(add_dims([t, 2]), 2) and not at_least(add_dims([t, 2]), 3)
    assert not at_least(add_dims([t, -1]), 0)  # (T-1 is -1 where T is 0)
    assert at_least(t, 0) and not at_least(ir.SymbolicDim(None), 0)


def test_labels_and_zero_entries_give_no_number_a_run_refutes(tmp_path: Path) -> None:
    # an input dim named like arithmetic ("T+2") is a label: any size, not two more than a T
    model = (
        HEADER
        + """
g (float[N,"T+2"] x) => (float[N,?] tail) {
  m2 = Constant <value = int64[1] {-2}> ()
  big = Constant <value = int64[1] {9223372036854775807}> ()
  one = Constant <value = int64[1] {1}> ()
  tail = Slice (x, m2, big, one)
}
"""
    )
    _, claims = _written(model, tmp_path)
    assert claims["tail"] == ["N", None]  # (not 2: the label may be 1 or 0)


def test_a_reshape_entry_that_may_be_zero_is_not_claimed_where_it_would_copy() -> None:
    import onnx_ir as ir

    from seqpasses.core.shape_rules import _reshaped

    a, b, k, n = (ir.SymbolicDim(x) for x in "ABKN")
    # [K, -1] of [A, B]: K = 0 takes A there (without allowzero)
    assert list(_reshaped([a, b], [k, -1], False)) == [ir.SymbolicDim(None)] * 2
    assert _reshaped([a, b], [k, -1], True) == ir.Shape([k, ir.SymbolicDim(None)])  # (allowzero)
    # [B*N, 16] of [B, N, 16]: a run with B*N = 0 that succeeds has B = 0 there too
    bn = ir.SymbolicDim("B*N")
    assert list(_reshaped([b, n, 16], [bn, 16], False)) == [bn, 16]

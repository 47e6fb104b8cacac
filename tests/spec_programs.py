"""Spec-driven random ONNX programs with sequence ops, and a differential judge for seqpasses.

Written from the ONNX operator specification and seqpasses' public API only (an outside view).

The generator builds each program top-down: a request ("an int64 tensor of shape [2, N]", "a
list of float tensors of shapes [2,3], [1,3]", "a list of any length whose elements are [4]")
is met by a production chosen at random (SequenceAt of a list, ConcatFromSequence, a Loop, an
If, a model-local function, ...), whose operands are requested in turn. So every node feeds a
graph output and no dead code is made on purpose. Shapes are tracked exactly: an ``int`` is a
dim that is the same in every input set, a name (``"N"``) is an input dim that changes between
input sets, a name starting with ``?`` is a dim known only at run time.

Input sets: set 0 is the nominal one (positions in range, so the original usually runs);
set 1 keeps the shapes and trip counts but moves positions (to other valid ones) and flips
run-time conditions; set 2 is wild (other symbolic dims, trip counts, positions that may be out
of range). Declared shapes never claim what only holds for one input set.

The judge runs the original and ``seqpasses.optimize``'s output on ONNX Runtime (optimizations
off) and compares; ``onnx.reference.ReferenceEvaluator`` (with its known sequence faults
patched here) settles ORT-vs-spec disagreements.

Campaign: ``python tests/spec_programs.py --seed S --count N [--out DIR] [--jobs K]``.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import dataclasses
import multiprocessing
import shutil
import signal
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F = int(TensorProto.FLOAT)
F64 = int(TensorProto.DOUBLE)
F16 = int(TensorProto.FLOAT16)
I64 = int(TensorProto.INT64)
I32 = int(TensorProto.INT32)
B = int(TensorProto.BOOL)
U8 = int(TensorProto.UINT8)
NUMERIC = (F, F64, I32, I64)
FLOATS = (F, F64, F16)
DT_NAME = {
    F: "float",
    F64: "double",
    F16: "float16",
    I64: "int64",
    I32: "int32",
    B: "bool",
    U8: "uint8",
}
DT_WEIGHTS = {F: 0.42, I64: 0.22, I32: 0.1, F64: 0.06, F16: 0.06, B: 0.07, U8: 0.07}
# SplitToSequence has no ONNX Runtime kernel for 8-bit ints.
SPLIT_DTS = (F, F64, F16, I64, I32, B)
# Safe casts: no float -> uint8 (out-of-range float to int conversion is undefined in C++).
CAST_FROM = {
    F: (F64, I32, I64, F16, B, U8),
    F64: (F, I32, I64),
    I64: (F, I32, B, U8, F64),
    I32: (F, I64, B, U8),
    F16: (F,),
    B: (F, I64, I32, U8),
    U8: (I32, I64, B),
}
IR_FOR_OPSET = {11: 6, 12: 7, 13: 7, 14: 7, 15: 8, 16: 8, 17: 8, 18: 8, 19: 9, 20: 9, 21: 10}
SEQ_OPS = frozenset(
    {
        "SequenceConstruct",
        "SequenceEmpty",
        "SequenceInsert",
        "SequenceErase",
        "SequenceAt",
        "SequenceLength",
        "ConcatFromSequence",
        "SplitToSequence",
        "SequenceMap",
    }
)
NSETS = 3
FN_DOMAIN = "local.fn"

Dim = int | str
Shape = tuple[Dim, ...]


@dataclass(frozen=True)
class TT:
    """A tensor: element type and shape."""

    dt: int
    shape: Shape


@dataclass(frozen=True)
class ST:
    """A list of tensors.

    ``elems``: the shape of each element, the same in every input set and context (the length
    is then ``len(elems)``); ``None`` when the length is known only at run time or changes
    between loop iterations. ``uni``: the shape every element has, when they all agree.
    ``lo``/``hi``: the range of the length under the nominal inputs, over every context (loop
    iteration, branch) the value is seen in.
    """

    dt: int
    elems: tuple[Shape, ...] | None
    uni: Shape | None
    lo: int
    hi: int

    @staticmethod
    def exact(dt: int, elems: list[Shape] | tuple[Shape, ...]) -> ST:
        el = tuple(elems)
        uni = el[0] if el and all(e == el[0] for e in el) else None
        return ST(dt, el, uni, len(el), len(el))


@dataclass(frozen=True)
class OT:
    """An optional holding a value."""

    inner: TT | ST


Info = TT | ST | OT


class Skip(Exception):
    """A production does not apply to the request."""


@dataclass
class Scope:
    kind: str  # "main", "sub" (If branch, Loop or SequenceMap body) or "func"
    parent: Scope | None
    depth: int = 0  # control-flow nesting
    nodes: list[onnx.NodeProto] = field(default_factory=list)
    vals: dict[str, Info] = field(default_factory=dict)
    local: dict[str, None] = field(default_factory=dict)  # names made by nodes of this scope
    tag: str = ""  # "if" for a branch, "loop" for a body
    params: list[tuple[str, TT]] = field(default_factory=list)  # func: formal inputs
    loop_iter: str | None = None  # Loop body: the iteration-number input
    loop_trips: int | None = None  # Loop body: the nominal trip count
    used: set[str] = field(default_factory=set)


@dataclass
class InputSpec:
    name: str
    info: TT
    values: list[np.ndarray]


@dataclass
class Program:
    seed: int
    index: int
    opset: int
    model: onnx.ModelProto
    feeds: list[dict[str, np.ndarray]]
    features: set[str]
    strict: bool
    quirk: bool  # holds the documented ORT-vs-spec SplitToSequence case (scalar split, keepdims=0)


def _dims_int(shape: Shape, syms: dict[str, list[int]], k: int) -> tuple[int, ...]:
    return tuple(d if isinstance(d, int) else syms[d][k] for d in shape)


class Gen:
    """Builds one random program."""

    def __init__(self, seed: int, index: int, opset: int | None = None) -> None:
        self.seed = seed
        self.index = index
        self.rng = np.random.default_rng([seed, index])
        r = self.rng
        self.opset = int(opset) if opset is not None else int(r.choice(list(IR_FOR_OPSET)))
        self.ir = IR_FOR_OPSET[self.opset]
        self.features: set[str] = {f"opset:{self.opset}"}
        self.counter = 0
        self.budget = int(r.integers(8, 34))
        self.p_fail = float(r.choice([0.0, 0.02, 0.06]))
        self.p_reuse = float(r.choice([0.15, 0.3, 0.45]))
        self.main = Scope("main", None)
        self.cur = self.main
        self.inputs: list[InputSpec] = []
        self.inits: list[onnx.TensorProto] = []
        self.functions: list[onnx.FunctionProto] = []
        self.fn_sigs: list[tuple[str, Info, list[TT]]] = []
        self.quirk = False
        self.derived: dict[str, int] = {}
        self.extra_outputs: list[tuple[str, Info]] = []
        # Input symbols: name -> value in each input set.
        self.syms: dict[str, list[int]] = {}
        for name in ("N", "M", "K")[: int(r.choice([0, 0, 1, 1, 2, 3]))]:
            nom = int(r.integers(1, 5))
            other = int(r.choice([v for v in range(0, 6) if v != nom]))
            self.syms[name] = [nom, nom, other]
        if self.syms:
            self.features.add("sym-dims")
        self.value_info: list[onnx.ValueInfoProto] = []
        self.input_decl: dict[str, list[int | str | None]] = {}

    # ------------------------------------------------------------------ basics
    def fresh(self, prefix: str = "v") -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def nom(self, d: Dim) -> int:
        if isinstance(d, int):
            return d
        if d in self.syms:
            return self.syms[d][0]
        return self.derived[d]

    def new_derived(self, nominal: int) -> str:
        name = f"?{len(self.derived)}"
        self.derived[name] = nominal
        return name

    def chance(self, p: float) -> bool:
        return bool(self.rng.random() < p)

    def pick(self, seq: list[Any] | tuple[Any, ...]) -> Any:
        return seq[int(self.rng.integers(len(seq)))]

    def emit(
        self, op: str, ins: list[str], nout: int = 1, domain: str = "", **attrs: Any
    ) -> list[str]:
        outs = [self.fresh() for _ in range(nout)]
        node = helper.make_node(op, ins, outs, name=f"{op}_{self.counter}", domain=domain, **attrs)
        self.cur.nodes.append(node)
        self.cur.local.update(dict.fromkeys(outs))
        for i in ins:
            if i:
                self.mark_used(i)
        if not domain:
            self.features.add(f"op:{op}")
        self.budget -= 1
        return outs

    def mark_used(self, name: str) -> None:
        s: Scope | None = self.cur
        while s is not None:
            s.used.add(name)
            s = s.parent

    def reg(self, name: str, info: Info) -> str:
        self.cur.vals[name] = info
        if isinstance(info, ST):
            self.features.add(f"list-dt:{DT_NAME[info.dt]}")
        return name

    def op1(self, op: str, ins: list[str], info: Info, **attrs: Any) -> str:
        return self.reg(self.emit(op, ins, **attrs)[0], info)

    def failing(self, kind: str) -> None:
        """Record a node meant to fail at run time, and where it is."""
        self.features.add(f"fail:{kind}")
        if self.func_scope() is not None:
            self.features.add("fail-in:function")
        elif self.loop_scope() is not None:
            self.features.add("fail-in:loop-body")
        elif self.cur.kind == "sub":
            self.features.add(f"fail-in:{self.cur.tag or 'subgraph'}")
        else:
            self.features.add("fail-in:main")

    def func_scope(self) -> Scope | None:
        s: Scope | None = self.cur
        while s is not None:
            if s.kind == "func":
                return s
            s = s.parent
        return None

    def loop_scope(self) -> Scope | None:
        s: Scope | None = self.cur
        while s is not None and s.kind != "func":
            if s.loop_iter is not None:
                return s
            s = s.parent
        return None

    def visible(self) -> Iterator[tuple[str, Info]]:
        s: Scope | None = self.cur
        while s is not None:
            yield from s.vals.items()
            if s.kind == "func":
                return
            s = s.parent

    @contextlib.contextmanager
    def scope(self, kind: str = "sub") -> Iterator[Scope]:
        sc = Scope(kind, self.cur, self.cur.depth + (1 if kind == "sub" else 0))
        if kind == "func":
            sc.depth = 0
        old = self.cur
        self.cur = sc
        try:
            yield sc
        finally:
            self.cur = old

    def choose(self, options: list[tuple[float, Callable[[], Any]]]) -> Any:
        """Try weighted productions in random order until one applies."""
        opts = [(w, f) for w, f in options if w > 0]
        while opts:
            ws = np.array([w for w, _ in opts], dtype=float)
            i = int(self.rng.choice(len(opts), p=ws / ws.sum()))
            try:
                return opts[i][1]()
            except Skip:
                opts.pop(i)
        raise Skip("no production applies")

    def deep(self, d: int) -> bool:
        """Whether there is room for another level of nesting."""
        return d > 0 and self.budget > 0

    # ------------------------------------------------------------------ data
    def rand_array(self, dt: int, shape: tuple[int, ...], rng: np.random.Generator) -> np.ndarray:
        npdt = helper.tensor_dtype_to_np_dtype(dt)
        a: np.ndarray
        if dt in FLOATS:
            a = rng.integers(-8, 9, size=shape) / 4
        elif dt == B:
            a = rng.random(size=shape) < 0.5
        elif dt == U8:
            a = rng.integers(0, 10, size=shape)
        else:
            a = rng.integers(-4, 5, size=shape)
        return np.asarray(a).astype(npdt)

    def const_array(self, tt: TT) -> np.ndarray:
        shape = tuple(self.nom(d) for d in tt.shape)
        return self.rand_array(tt.dt, shape, self.rng)

    def scalar_const(self, value: int | bool | float, dt: int = I64, how: str | None = None) -> str:
        """A constant scalar: a Constant node or an initializer."""
        arr = np.array(value, dtype=helper.tensor_dtype_to_np_dtype(dt))
        return self.const_tensor(arr, TT(dt, ()), how)

    def const_tensor(self, arr: np.ndarray, tt: TT, how: str | None = None) -> str:
        in_func = self.func_scope() is not None
        if how is None:
            how = "node" if in_func or self.chance(0.55) else "init"
        if in_func or (self.cur.kind != "main" and self.chance(0.85)):
            how = "node"
        if how == "init":
            name = self.fresh("c")
            self.inits.append(numpy_helper.from_array(arr, name))
            self.main.vals[name] = tt
            self.features.add("initializer")
            return name
        if (
            self.opset >= 12
            and arr.dtype == np.int64
            and arr.ndim <= 1
            and arr.size > 0
            and self.chance(0.3)
        ):
            if arr.ndim == 0:
                return self.op1("Constant", [], tt, value_int=int(arr))
            return self.op1("Constant", [], tt, value_ints=[int(v) for v in arr])
        return self.op1("Constant", [], tt, value=numpy_helper.from_array(arr))

    def ints_const(self, values: list[int], dt: int = I64) -> str:
        arr = np.array(values, dtype=helper.tensor_dtype_to_np_dtype(dt))
        return self.const_tensor(arr, TT(dt, (len(values),)))

    def add_input(self, tt: TT, values: list[np.ndarray] | None = None, sym_p: float = 0.15) -> str:
        name = self.fresh("x")
        if values is None:
            rng = np.random.default_rng([self.seed, self.index, self.counter])
            values = [
                self.rand_array(tt.dt, _dims_int(tt.shape, self.syms, k), rng) for k in range(NSETS)
            ]
        dims: list[int | str | None] = []
        for d in tt.shape:
            if isinstance(d, str):
                dims.append(d)
            elif self.chance(sym_p):
                dims.append(self.fresh("s"))  # declared symbolic although it never changes
                self.features.add("decl-sym-static")
            else:
                dims.append(d)
        self.inputs.append(InputSpec(name, tt, values))
        self.main.vals[name] = tt
        self.input_decl[name] = dims
        return name

    # ------------------------------------------------------------------ shapes
    def rand_dim(self, allow_zero: bool = True, allow_sym: bool = True) -> Dim:
        r = self.rng.random()
        if allow_sym and self.syms and r < 0.14:
            return str(self.pick(list(self.syms)))
        if allow_zero and r < 0.2:
            self.features.add("zero-dim")
            return 0
        return int(self.rng.choice([1, 1, 2, 2, 2, 3, 3, 4]))

    def rand_shape(self, rank: int | None = None, **kw: bool) -> Shape:
        if rank is None:
            rank = int(self.rng.choice([0, 1, 1, 2, 2, 2, 3]))
        return tuple(self.rand_dim(**kw) for _ in range(rank))

    def rand_dt(self, allowed: tuple[int, ...] | None = None) -> int:
        dts = [d for d in DT_WEIGHTS if allowed is None or d in allowed]
        ws = np.array([DT_WEIGHTS[d] for d in dts])
        return int(self.rng.choice(dts, p=ws / ws.sum()))

    def rand_elems(self, n: int | None = None, rank: int | None = None) -> list[Shape]:
        if n is None:
            n = int(self.rng.choice([0, 1, 1, 2, 2, 2, 3, 3, 4]))
        base = self.rand_shape(rank)
        r = self.rng.random()
        if r < 0.55 or not base:
            return [base] * n
        if r < 0.72 and n >= 2:  # the pieces of a scalar split with a remainder
            a = int(self.rng.integers(len(base)))
            c = int(self.rng.integers(2, 4))
            out = [(*base[:a], c, *base[a + 1 :])] * (n - 1)
            return [*out, (*base[:a], int(self.rng.integers(1, c)), *base[a + 1 :])]
        if r < 0.85:  # concat-compatible: one axis differs
            a = int(self.rng.integers(len(base)))
            out = []
            for _ in range(n):
                s = list(base)
                s[a] = int(self.rng.choice([0, 1, 1, 2, 3]))
                out.append(tuple(s))
            return out
        if r < 0.95:
            return [self.rand_shape(len(base)) for _ in range(n)]
        return [self.rand_shape() for _ in range(n)]

    # ------------------------------------------------------------------ leaves
    def leaf(self, tt: TT) -> str:
        fs = self.func_scope()
        static = all(isinstance(d, int) for d in tt.shape)
        if fs is not None:
            if not static or self.chance(0.6):
                name = self.fresh("p")
                fs.params.append((name, tt))
                fs.vals[name] = tt
                return name
            return self.const_tensor(self.const_array(tt), tt, "node")
        r = self.rng.random()
        if not static or r < 0.5:
            return self.add_input(tt)
        return self.const_tensor(self.const_array(tt), tt)

    def reuse(self, want: Callable[[Info], bool]) -> str:
        cands = [n for n, info in self.visible() if want(info)]
        if not cands:
            raise Skip
        self.features.add("reuse")
        return str(self.pick(cands))

    def local(self, name: str, info: Info) -> str:
        """``name`` produced by a node of the current scope (for subgraph outputs)."""
        if name in self.cur.local:
            return name
        if isinstance(info, TT) or self.opset >= 14:
            return self.op1("Identity", [name], info)
        assert isinstance(info, ST)
        # Identity takes sequences from opset 14: insert and erase an element instead.
        t = self.leaf(TT(info.dt, info.uni if info.uni is not None else ()))
        s = self.reg(self.emit("SequenceInsert", [name, t])[0], info)
        return self.op1("SequenceErase", [s], info)

    # ------------------------------------------------------------------ positions
    def pos(
        self,
        n_lo: int,
        kind: str,
        target: int | None = None,
        steady: bool = False,
        seq: str | None = None,
        n_hi: int | None = None,
    ) -> str:
        """An int scalar position for a list of length in [n_lo, n_hi].

        ``kind``: "at"/"erase" (range [-n, n-1]) or "insert" (range [-n, n]). ``target``: the
        element index it must reach in a list of fixed length ``n_lo`` (then the value is
        ``target`` or its negative form). ``steady``: the value must keep its meaning in every
        input set (the result's element shapes depend on it).
        """
        n_hi = n_lo if n_hi is None else n_hi
        top = n_lo - 1 if kind in ("at", "erase") else n_lo
        valid = list(range(-n_lo, top + 1))
        if target is not None:
            cands = [target]
            neg = target - n_lo
            if -n_lo <= neg < 0 and (kind != "insert" or target < n_lo):
                cands.append(neg)
        else:
            cands = valid
        fail = self.chance(self.p_fail) or not cands
        if fail:
            self.failing("position")
            bad = [top + 1, top + 2, -n_lo - 1, -n_hi - 2, n_hi + 1]
            value = int(self.pick(bad))
        else:
            value = int(self.pick(cands))
        dt = I64 if self.chance(0.8) else I32
        alt = [c for c in cands if c != value] or [value]

        def p_const() -> str:
            self.features.add("pos:const")
            return self.scalar_const(value, dt)

        def p_input() -> str:
            if self.func_scope() is not None:
                raise Skip
            npdt = helper.tensor_dtype_to_np_dtype(dt)
            if steady or (target is not None and fail):
                vals = [value, int(self.pick(alt)) if not fail else value, value]
                self.features.add("pos:input-steady")
            else:
                vals = [value, int(self.pick(alt)), int(self.rng.integers(-n_hi - 2, n_hi + 2))]
                self.features.add("pos:input")
                if self.cur.tag == "if" and kind in ("insert", "erase"):
                    self.features.add(f"pos:input-{kind}-in-branch")
            return self.add_input(TT(dt, ()), [np.array(v, dtype=npdt) for v in vals])

        def p_sum() -> str:
            a = int(self.rng.integers(-3, 4))
            ca = self.scalar_const(a, dt)
            cb = self.scalar_const(value - a, dt)
            self.features.add("pos:folded")
            return self.op1("Add", [ca, cb], TT(dt, ()))

        def p_seqlen() -> str:
            # value = len(seq) - c, valid wherever the list is, even when its length changes.
            if seq is None:
                raise Skip
            if target is not None:
                if n_lo != n_hi:
                    raise Skip
                c = n_lo - value
            elif fail:
                raise Skip
            else:
                c = int(self.rng.integers(1 if kind != "insert" else 0, n_lo + 1)) if n_lo else 0
                if kind != "insert" and n_lo == 0:
                    raise Skip
            ln = self.op1("SequenceLength", [seq], TT(I64, ()))
            v = self.op1("Sub", [ln, self.scalar_const(c, I64)], TT(I64, ()))
            self.features.add("pos:seqlen")
            if dt == I32:
                v = self.op1("Cast", [v], TT(I32, ()), to=I32)
            return v

        def p_shape() -> str:
            # value = a dim of a tensor, read with Shape + Gather: a constant when the dim is
            # static, a run-time value when it is symbolic (then it changes in input set 2).
            sym_ok = not steady and target is None and not fail
            ok = {value} if fail or target is not None else set(cands)
            want = [
                (n, i, d)
                for n, info in self.visible()
                if isinstance(info, TT)
                for i, d in enumerate(info.shape)
                if self.nom(d) in ok and (isinstance(d, int) or (sym_ok and not self.is_derived(d)))
            ]
            syms = [s for s, v in self.syms.items() if v[0] in ok] if sym_ok else []
            if syms and (not want or self.chance(0.5)):
                sym = str(self.pick(syms))
                x = self.tensor(
                    TT(self.rand_dt(), (sym, *self.rand_shape(int(self.rng.integers(0, 2))))), 0
                )
                want = [(x, 0, sym)]
            if not want:
                raise Skip
            n, i, d = self.pick(want)
            rank = len(self.visible_info(n).shape)  # type: ignore[union-attr]
            sh = self.op1("Shape", [n], TT(I64, (rank,)))
            g = self.op1("Gather", [sh, self.scalar_const(i, I64)], TT(I64, ()), axis=0)
            self.features.add("pos:shape" if isinstance(d, int) else "pos:shape-sym")
            if dt == I32:
                g = self.op1("Cast", [g], TT(I32, ()), to=I32)
            return g

        def p_loopvar() -> str:
            ls = self.loop_scope()
            if ls is None or target is not None or fail:
                raise Skip
            it = ls.loop_iter
            assert it is not None
            t = ls.loop_trips
            if (
                t is not None
                and 1 <= t <= top + 1
                and (seq is None or n_lo < 1 or self.chance(0.5))
            ):
                # The iteration number itself: in range while the loop runs its nominal trips.
                self.features.add("pos:loop-iter")
                v = it
                if t - 1 <= n_lo and self.chance(0.3):
                    v = self.op1("Neg", [it], TT(I64, ()))
                elif self.chance(0.3):
                    v = self.op1("Identity", [it], TT(I64, ()))
                return self.op1("Cast", [v], TT(I32, ()), to=I32) if dt == I32 else v
            # Mod(i, len(seq)): in range in every iteration when the list is never empty.
            if seq is None or n_lo < 1:
                raise Skip
            ln = self.op1("SequenceLength", [seq], TT(I64, ()))
            v = self.op1("Mod", [it, ln], TT(I64, ()))
            if self.chance(0.5):
                v = self.op1("Neg", [v], TT(I64, ()))  # in [-(n-1), 0]: in range too
            self.features.add("pos:loopvar")
            return v

        return str(
            self.choose(
                [
                    (3, p_const),
                    (2, p_input),
                    (1, p_sum),
                    (1.5, p_seqlen),
                    (1, p_shape),
                    (1.5, p_loopvar),
                ]
            )
        )

    def visible_info(self, name: str) -> Info:
        for n, info in self.visible():
            if n == name:
                return info
        raise KeyError(name)

    # ------------------------------------------------------------------ conditions
    def cond(self, d: int) -> str:
        """A bool scalar for If."""

        def c_const() -> str:
            self.features.add("if:const")
            return self.scalar_const(self.chance(0.5), B)

        def c_folded() -> str:
            a, b = int(self.rng.integers(0, 4)), int(self.rng.integers(0, 4))
            self.features.add("if:folded")
            return self.op1(
                str(self.pick(["Less", "Greater", "Equal"])),
                [self.scalar_const(a), self.scalar_const(b)],
                TT(B, ()),
            )

        def c_input() -> str:
            if self.func_scope() is not None:
                raise Skip
            v = self.chance(0.5)
            self.features.add("if:runtime")
            return self.add_input(
                TT(B, ()), [np.array(v), np.array(not v), np.array(self.chance(0.5))]
            )

        def c_data() -> str:
            x = self.tensor(TT(F, self.rand_shape()), d - 1)
            s = self.op1("ReduceSum", [x], TT(F, ()), keepdims=0)
            self.features.add("if:runtime")
            return self.op1("Greater", [s, self.scalar_const(0.0, F)], TT(B, ()))

        def c_seqlen() -> str:
            s, _ = self.seq_any(d - 1)
            ln = self.op1("SequenceLength", [s], TT(I64, ()))
            self.features.add("if:seqlen")
            return self.op1(
                "Less", [ln, self.scalar_const(int(self.rng.integers(0, 4)))], TT(B, ())
            )

        def c_loopvar() -> str:
            ls = self.loop_scope()
            if ls is None:
                raise Skip
            assert ls.loop_iter is not None
            self.features.add("if:loopvar")
            return self.op1(
                str(self.pick(["Less", "Greater", "Equal"])),
                [ls.loop_iter, self.scalar_const(int(self.rng.integers(0, 3)))],
                TT(B, ()),
            )

        def c_optional() -> str:
            if self.opset < 15:
                raise Skip
            self.features.add("optional")
            if self.chance(0.5):
                s, st = self.seq_any(d - 1)
                o = self.op1("Optional", [s], OT(st))
            else:
                odt = self.rand_dt()
                tp = helper.make_sequence_type_proto(helper.make_tensor_type_proto(odt, None))
                o = self.op1("Optional", [], OT(ST(odt, None, None, 0, 0)), type=tp)
                self.features.add("optional:empty")
            return self.op1("OptionalHasElement", [o], TT(B, ()))

        def c_not() -> str:
            return self.op1("Not", [self.cond(d - 1)], TT(B, ()))

        return str(
            self.choose(
                [
                    (2, c_const),
                    (1, c_folded),
                    (2, c_input),
                    (1, c_data),
                    (1.2, c_seqlen),
                    (2, c_loopvar),
                    (0.7, c_optional),
                    (0.3 if d > 0 else 0, c_not),
                ]
            )
        )

    # ------------------------------------------------------------------ tensors
    def tensor(self, tt: TT, d: int, reuse_ok: bool = True) -> str:
        """A value of type ``tt``."""
        deep = self.deep(d)
        numeric = tt.dt in NUMERIC
        opts: list[tuple[float, Callable[[], Any]]] = [
            (1.0 if deep else 4.0, lambda: self.leaf(tt)),
            (self.p_reuse * 8 if reuse_ok else 0, lambda: self.reuse(lambda i: i == tt)),
        ]
        if deep:
            r1 = tt.dt == I64 and len(tt.shape) == 1 and isinstance(tt.shape[0], int)
            opts += [
                (1.0, lambda: self.t_elementwise(tt, d)),
                (0.5, lambda: self.t_cast(tt, d)),
                (1.2, lambda: self.t_shape_op(tt, d)),
                (3.0, lambda: self.t_seq_at(tt, d)),
                (2.5, lambda: self.t_concat_from_seq(tt, d)),
                (1.0, lambda: self.t_if(tt, d)),
                (1.2, lambda: self.t_loop(tt, d)),
                (0.5, lambda: self.call_func(tt, d)),
                (0.3, lambda: self.t_optional(tt, d)),
                (2.5 if tt == TT(I64, ()) else 0, lambda: self.t_seq_len(d)),
                (0.8 if tt.shape == () and numeric else 0, lambda: self.t_reduce_wild(tt, d)),
                (0.6 if r1 else 0, lambda: self.t_shape_of(tt, d)),
            ]
        return str(self.choose(opts))

    def t_elementwise(self, tt: TT, d: int) -> str:
        if tt.dt in NUMERIC:
            ops = ["Add", "Sub", "Mul", "Neg", "Abs"]
            if tt.dt in (F, F64):
                ops.append("Relu")
            if self.opset >= 12 or tt.dt in (F, F64):
                ops += ["Max", "Min"]
            op = str(self.pick(ops))
            if op in ("Neg", "Abs", "Relu"):
                return self.op1(op, [self.tensor(tt, d - 1)], tt)
            a = self.tensor(tt, d - 1)
            cut = int(self.rng.integers(0, len(tt.shape) + 1)) if self.chance(0.35) else 0
            b = self.tensor(TT(tt.dt, tt.shape[cut:]), d - 1)
            ins = [a, b] if self.chance(0.5) else [b, a]
            return self.op1(op, ins, tt)
        if tt.dt == B:
            op = str(self.pick(["Not", "And", "Or", "Xor"]))
            if op == "Not":
                return self.op1(op, [self.tensor(tt, d - 1)], tt)
            return self.op1(op, [self.tensor(tt, d - 1), self.tensor(tt, d - 1)], tt)
        raise Skip

    def t_cast(self, tt: TT, d: int) -> str:
        src = int(self.pick(CAST_FROM[tt.dt]))
        return self.op1("Cast", [self.tensor(TT(src, tt.shape), d - 1)], tt, to=tt.dt)

    def axes_arg(self, op: str, x: str, axes: list[int], out: TT, **attrs: Any) -> str:
        """Unsqueeze/Squeeze/ReduceSum with ``axes`` in the form the opset takes."""
        if self.opset < 13:
            return self.op1(op, [x], out, axes=axes, **attrs)
        return self.op1(op, [x, self.ints_const(axes)], out, **attrs)

    def t_shape_op(self, tt: TT, d: int) -> str:
        s = tt.shape
        r = len(s)
        static = all(isinstance(v, int) for v in s)
        kinds = ["squeeze", "gather"]
        if any(v == 1 for v in s):
            kinds.append("unsqueeze")
        if r >= 2:
            kinds.append("transpose")
        if any(isinstance(v, int) for v in s):
            kinds += ["concat", "slice"]
        if static and 0 not in s:
            kinds += ["reshape", "expand"]
        if tt.dt in NUMERIC:
            kinds.append("reducesum")
        if tt.dt in (*NUMERIC, U8):
            kinds.append("where")
        k = str(self.pick(kinds))
        if k == "unsqueeze":
            a = int(self.pick([i for i, v in enumerate(s) if v == 1]))
            x = self.tensor(TT(tt.dt, s[:a] + s[a + 1 :]), d - 1)
            return self.axes_arg("Unsqueeze", x, [a if self.chance(0.7) else a - r], tt)
        if k == "squeeze":
            a = int(self.rng.integers(0, r + 1))
            x = self.tensor(TT(tt.dt, (*s[:a], 1, *s[a:])), d - 1)
            return self.axes_arg("Squeeze", x, [a if self.chance(0.7) else a - r - 1], tt)
        if k == "transpose":
            perm = [int(v) for v in self.rng.permutation(r)]
            inner: list[Dim] = [0] * r
            for i, p in enumerate(perm):
                inner[p] = s[i]
            return self.op1(
                "Transpose", [self.tensor(TT(tt.dt, tuple(inner)), d - 1)], tt, perm=perm
            )
        if k == "concat":
            a = int(self.pick([i for i, v in enumerate(s) if isinstance(v, int)]))
            total = int(s[a])
            cut = int(self.rng.integers(0, total + 1))
            parts = [
                self.tensor(TT(tt.dt, (*s[:a], size, *s[a + 1 :])), d - 1)
                for size in (cut, total - cut)
            ]
            return self.op1("Concat", parts, tt, axis=a if self.chance(0.7) else a - r)
        if k == "gather":
            a = int(self.rng.integers(0, r + 1))
            n = int(self.rng.integers(1, 4))
            x = self.tensor(TT(tt.dt, (*s[:a], n, *s[a:])), d - 1)
            idx = self.scalar_const(int(self.rng.integers(-n, n)))
            return self.op1("Gather", [x, idx], tt, axis=a)
        if k == "slice":
            a = int(self.pick([i for i, v in enumerate(s) if isinstance(v, int)]))
            extra = int(self.rng.integers(0, 3))
            start = int(self.rng.integers(0, extra + 1))
            x = self.tensor(TT(tt.dt, (*s[:a], int(s[a]) + extra, *s[a + 1 :])), d - 1)
            ins = [
                x,
                self.ints_const([start]),
                self.ints_const([start + int(s[a])]),
                self.ints_const([a]),
            ]
            return self.op1("Slice", ins, tt)
        if k == "reshape":
            total = int(np.prod([int(v) for v in s])) if s else 1
            inner_shape: Shape = (total,) if self.chance(0.5) else tuple(reversed(s))
            x = self.tensor(TT(tt.dt, inner_shape), d - 1)
            target = [int(v) for v in s]
            if target and self.chance(0.3):
                target[int(self.rng.integers(len(target)))] = -1
            return self.op1("Reshape", [x, self.ints_const(target)], tt)
        if k == "expand":
            inner_shape = tuple(1 if self.chance(0.5) else v for v in s)
            x = self.tensor(TT(tt.dt, inner_shape), d - 1)
            return self.op1("Expand", [x, self.ints_const([int(v) for v in s])], tt)
        if k == "reducesum":
            a = int(self.rng.integers(0, r + 1))
            x = self.tensor(TT(tt.dt, (*s[:a], int(self.rng.integers(1, 4)), *s[a:])), d - 1)
            return self.axes_arg("ReduceSum", x, [a], tt, keepdims=0)
        c = self.tensor(TT(B, s), d - 1)
        return self.op1("Where", [c, self.tensor(tt, d - 1), self.tensor(tt, d - 1)], tt)

    def t_seq_at(self, tt: TT, d: int) -> str:
        if self.chance(self.p_reuse * (3 if self.loop_scope() is not None else 1.5)):
            cands = [
                (n, info)
                for n, info in self.visible()
                if isinstance(info, ST)
                and info.dt == tt.dt
                and (
                    (info.elems is not None and tt.shape in info.elems)
                    or (info.elems is None and info.uni == tt.shape and info.lo >= 1)
                )
            ]
            if cands:
                name, st = self.pick(cands)
                self.features.add("reuse-list")
                ls = self.loop_scope()
                if ls is not None and name not in ls.vals and name not in self.cur.vals:
                    self.features.add("loop-reads-outer-list")
                return self.seq_at(name, st, tt)
        if self.chance(self.p_fail / 2):
            # SequenceAt on an empty list fails at run time.
            self.failing("at-empty")
            lst = self.seq_exact(tt.dt, [], d - 1, hint=tt.shape)
            return self.op1("SequenceAt", [lst, self.pos(0, "at", seq=lst)], tt)
        if self.chance(0.65):
            n = int(self.rng.integers(1, 5))
            k = int(self.rng.integers(0, n))
            elems = self.rand_elems(n, len(tt.shape)) if self.chance(0.5) else [tt.shape] * n
            elems = [tt.shape if i == k else e for i, e in enumerate(elems)]
            st = ST.exact(tt.dt, elems)
            return self.seq_at(self.seq_exact(tt.dt, elems, d - 1), st, tt, k)
        name, st = self.seq_dyn(tt.dt, tt.shape, d - 1, min_lo=1)
        return self.seq_at(name, st, tt)

    def seq_at(self, name: str, st: ST, tt: TT, k: int | None = None) -> str:
        if st.elems is not None:
            if k is None:
                k = int(self.pick([i for i, e in enumerate(st.elems) if e == tt.shape]))
            steady = st.uni is None
            p = self.pos(len(st.elems), "at", target=k, steady=steady, seq=name)
        else:
            p = self.pos(st.lo, "at", seq=name, n_hi=st.hi)
        return self.op1("SequenceAt", [name, p], tt)

    def t_concat_from_seq(self, tt: TT, d: int) -> str:
        s = tt.shape
        r = len(s)
        axes = [a for a in range(r) if isinstance(s[a], int)]
        if not axes:
            raise Skip
        a = int(self.pick(axes))
        total = int(s[a])
        new_axis = self.chance(0.45) and total > 0
        if new_axis:
            elem = s[:a] + s[a + 1 :]
            elems = [elem] * total
            attr_axis = a if self.chance(0.7) else a - r
        else:
            m = int(self.rng.choice([1, 2, 2, 3]))
            cuts = sorted(int(v) for v in self.rng.integers(0, total + 1, size=m - 1))
            sizes = [hi - lo for lo, hi in zip([0, *cuts], [*cuts, total], strict=True)]
            elems = [(*s[:a], size, *s[a + 1 :]) for size in sizes]
            attr_axis = a if self.chance(0.7) else a - r
        # ORT skips empty inputs of a concatenation: mismatches only between non-empty
        # elements of static shapes fail there.
        zero = any(not isinstance(v, int) or v == 0 for e in elems for v in e)
        hint = elems[0] if elems else None
        if self.chance(self.p_fail / 2):
            # An empty list: ConcatFromSequence fails at run time.
            elems = []
            self.failing("concat-empty")
        elif self.chance(self.p_fail) and len(elems) >= 2 and not zero:
            # Mismatched element shapes: ConcatFromSequence fails at run time (ORT skips
            # empty inputs, hence no zero-size elements).
            bad = list(elems[-1])
            other = [i for i in range(len(bad)) if i != (a if not new_axis else -1)]
            if other:
                i = int(self.pick(other))
                bad[i] = self.nom(bad[i]) + 1
                elems[-1] = tuple(bad)
                self.failing("concat")
        lst = self.seq_exact(tt.dt, elems, d - 1, hint=hint)
        attrs: dict[str, int] = {"axis": attr_axis}
        if new_axis:
            attrs["new_axis"] = 1
        elif self.chance(0.3):
            attrs["new_axis"] = 0
        self.features.add("concat:new_axis" if new_axis else "concat:axis")
        return self.op1("ConcatFromSequence", [lst], tt, **attrs)

    def t_seq_len(self, d: int) -> str:
        s, _ = self.seq_any(d - 1)
        self.features.add("seqlen")
        return self.op1("SequenceLength", [s], TT(I64, ()))

    def t_reduce_wild(self, tt: TT, d: int) -> str:
        w, _ = self.wild(tt.dt, d - 1)
        return self.op1("ReduceSum", [w], tt, keepdims=0)

    def t_shape_of(self, tt: TT, d: int) -> str:
        r = int(tt.shape[0])
        if r > 4:
            raise Skip
        x = self.tensor(TT(self.rand_dt(), self.rand_shape(r)), d - 1)
        return self.op1("Shape", [x], tt)

    def t_optional(self, tt: TT, d: int) -> str:
        if self.opset < 15:
            raise Skip
        self.features.add("optional")
        o = self.op1("Optional", [self.tensor(tt, d - 1)], OT(tt))
        return self.op1("OptionalGetElement", [o], tt)

    def t_if(self, tt: TT, d: int) -> str:
        outs = self.make_if(d, [lambda: (self.tensor(tt, d - 1, reuse_ok=self.chance(0.5)), tt)])
        return outs[0]

    def t_loop(self, tt: TT, d: int) -> str:
        if tt.shape and not self.is_derived(tt.shape[0]) and self.chance(0.45):
            _, out = self.make_loop(d, tt.shape[0], scans=[TT(tt.dt, tt.shape[1:])], extras=True)
            self.reg(out, tt)
            return out
        _, out = self.make_loop(d, None, carried=[tt], extras=True)
        return out

    def is_derived(self, dim: Dim) -> bool:
        return isinstance(dim, str) and dim.startswith("?")

    # ------------------------------------------------------------------ wild tensors
    def wild(self, dt: int, d: int) -> tuple[str, TT]:
        """A tensor whose shape may be known only at run time."""

        def w_concat() -> tuple[str, TT]:
            if not self.deep(d):
                raise Skip
            uni = self.rand_shape(allow_zero=False)
            new_axis = not uni or self.chance(0.5)
            s, st = self.seq_dyn(dt, uni, d - 1, min_lo=1)
            r = len(uni)
            if new_axis:
                a = int(self.rng.integers(0, r + 1))
                shape: Shape = (*uni[:a], self.new_derived(st.lo), *uni[a:])
                out = self.op1("ConcatFromSequence", [s], TT(dt, shape), axis=a, new_axis=1)
            else:
                a = int(self.rng.integers(0, r))
                shape = (*uni[:a], self.new_derived(st.lo * self.nom(uni[a])), *uni[a + 1 :])
                out = self.op1(
                    "ConcatFromSequence", [s], TT(dt, shape), axis=a - r * int(self.chance(0.3))
                )
            self.features.add("concat:runtime-len")
            return out, TT(dt, shape)

        def w_at() -> tuple[str, TT]:
            if not self.deep(d):
                raise Skip
            n = int(self.rng.integers(2, 4))
            rank = int(self.rng.integers(1, 3))
            elems = [self.rand_shape(rank) for _ in range(n)]
            st = ST.exact(dt, elems)
            s = self.seq_exact(dt, elems, d - 1)
            p = self.pos(n, "at", seq=s)
            shape = tuple(
                elems[0][i]
                if all(e[i] == elems[0][i] for e in elems)
                else self.new_derived(self.nom(elems[0][i]))
                for i in range(rank)
            )
            self.features.add("at:hetero-runtime")
            del st
            return self.op1("SequenceAt", [s, p], TT(dt, shape)), TT(dt, shape)

        def w_scan() -> tuple[str, TT]:
            if not self.deep(d):
                raise Skip
            e = self.rand_shape()
            trip, out = self.make_loop(d, None, scans=[TT(dt, e)])
            tt = TT(dt, (trip, *e))
            return self.reg(out, tt), tt

        def w_plain() -> tuple[str, TT]:
            tt = TT(dt, self.rand_shape())
            return self.tensor(tt, d), tt

        return self.choose([(2, w_concat), (1, w_at), (1, w_scan), (1.5, w_plain)])  # type: ignore[no-any-return]

    # ------------------------------------------------------------------ lists with known element shapes
    def seq_exact(
        self, dt: int, elems: list[Shape], d: int, reuse_ok: bool = True, hint: Shape | None = None
    ) -> str:
        """A list whose element shapes are ``elems`` in every input set.

        ``hint``: for an empty list, the element shape ONNX shape inference must not contradict
        (a Loop that carries it appends such elements).
        """
        st = ST.exact(dt, elems)
        n = len(elems)
        if n:
            hint = None
        elif hint is not None:
            reuse_ok = False
        opts: list[tuple[float, Callable[[], Any]]] = [
            (3 if n else 0, lambda: self.s_construct(st, d)),
            (3 if n == 0 else 0, lambda: self.s_empty(st)),
            (
                self.p_reuse * 6 if reuse_ok else 0,
                lambda: self.reuse(
                    lambda i: isinstance(i, ST) and i.dt == dt and i.elems == st.elems
                ),
            ),
        ]
        if self.deep(d):
            opts += [
                (1.5 if n else 0, lambda: self.s_insert(st, d)),
                (1.2 if n else 2.5, lambda: self.s_erase(st, d, hint)),
                (2.0 if dt in SPLIT_DTS else 0, lambda: self.s_split(st, d, hint)),
                (0.8 if self.opset >= 13 else 0, lambda: self.s_if(st, d, hint)),
                (1.2 if self.opset >= 13 else 0, lambda: self.s_loop(st, d, hint)),
                (1.0 if self.opset >= 17 else 0, lambda: self.s_map(st, d, hint)),
                (0.3 if self.opset >= 14 else 0, lambda: self.s_identity(st, d, hint)),
                (0.3 if self.opset >= 15 else 0, lambda: self.s_optional(st, d, hint)),
                (0.4 if hint is None else 0, lambda: self.call_func(st, d)),
            ]
        return str(self.choose(opts))

    def s_construct(self, st: ST, d: int) -> str:
        assert st.elems is not None
        ins = [self.tensor(TT(st.dt, e), d - 1) for e in st.elems]
        return self.op1("SequenceConstruct", ins, st)

    def s_empty(self, st: ST) -> str:
        self.features.add("empty-list")
        if st.dt == F and self.chance(0.5):
            self.features.add("empty:no-dtype")
            return self.op1("SequenceEmpty", [], st)
        return self.op1("SequenceEmpty", [], st, dtype=st.dt)

    def s_identity(self, st: ST, d: int, hint: Shape | None) -> str:
        assert st.elems is not None
        return self.op1("Identity", [self.seq_exact(st.dt, list(st.elems), d - 1, hint=hint)], st)

    def s_insert(self, st: ST, d: int) -> str:
        assert st.elems is not None
        elems = list(st.elems)
        n = len(elems)
        k = int(self.rng.integers(0, n))
        inner = elems[:k] + elems[k + 1 :]
        s = self.seq_exact(st.dt, inner, d - 1)
        t = self.tensor(TT(st.dt, elems[k]), d - 1)
        self.features.add("insert")
        if k == n - 1 and self.chance(0.4):
            return self.op1("SequenceInsert", [s, t], st)
        uniform = st.uni is not None
        p = self.pos(n - 1, "insert", target=None if uniform else k, steady=not uniform, seq=s)
        return self.op1("SequenceInsert", [s, t, p], st)

    def s_erase(self, st: ST, d: int, hint: Shape | None) -> str:
        assert st.elems is not None
        elems = list(st.elems)
        n = len(elems)
        k = int(self.rng.integers(0, n + 1))
        if n == 0 and self.chance(self.p_fail):
            # SequenceErase on an empty list fails at run time.
            self.failing("erase-empty")
            s = self.seq_exact(st.dt, [], d - 1, hint=hint)
            return self.op1(
                "SequenceErase", [s] if self.chance(0.5) else [s, self.pos(0, "erase", seq=s)], st
            )
        if hint is not None:
            extra = hint
        elif elems and self.chance(0.7):
            extra = elems[min(k, n - 1)]
        else:
            extra = self.rand_shape(len(elems[0]) if elems else None)
        inner = [*elems[:k], extra, *elems[k:]]
        ist = ST.exact(st.dt, inner)
        s = self.seq_exact(st.dt, inner, d - 1)
        self.features.add("erase")
        if n == 0:
            self.features.add(f"emptied-list:{DT_NAME[st.dt]}")
        if k == n and self.chance(0.4):
            return self.op1("SequenceErase", [s], st)
        uniform = ist.uni is not None
        p = self.pos(n + 1, "erase", target=None if uniform else k, steady=not uniform, seq=s)
        return self.op1("SequenceErase", [s, p], st)

    def split_arg(self, values: list[int] | int, hidden: bool = False, const: bool = False) -> str:
        """The split input; ``hidden``: out of sight of shape inference (a graph input)."""
        dt = I64 if self.chance(0.8) else I32
        npdt = helper.tensor_dtype_to_np_dtype(dt)
        arr = np.array(values, dtype=npdt)
        if hidden and self.func_scope() is not None:
            # In a function: Identity of a Constant still folds; use a computed value.
            c = self.const_tensor(arr - 1, TT(dt, arr.shape), "node")
            return self.op1(
                "Add",
                [c, self.const_tensor(np.ones_like(arr), TT(dt, arr.shape), "node")],
                TT(dt, arr.shape),
            )
        if self.func_scope() is None and (hidden or (not const and self.chance(0.15))):
            self.features.add("split:input")
            vals = [arr] * NSETS
            if arr.ndim == 1 and not hidden and self.chance(0.5):
                # Sizes that do not sum in input set 2: the split fails there.
                bad = arr.copy()
                bad[-1] += 1
                vals = [arr, arr, bad]
                self.features.add("split:input-bad-in-set2")
            return self.add_input(TT(dt, arr.shape), vals)
        return self.const_tensor(arr, TT(dt, arr.shape))

    def s_split(self, st: ST, d: int, hint: Shape | None) -> str:
        assert st.elems is not None
        elems = list(st.elems)
        n = len(elems)
        dt = st.dt
        attrs: dict[str, int] = {}
        split: str | None = None
        if n == 0 and hint is not None:
            # keepdims=0 without split: the inferred element shape is ``hint``.
            r = len(hint) + 1
            a = int(self.rng.integers(0, r))
            x = self.tensor(TT(dt, (*hint[:a], 0, *hint[a:])), d - 1)
            attrs["keepdims"] = 0
            attrs["axis"] = a if self.chance(0.6) else a - r
            self.features.add("split:zero-dim")
            return self.op1("SplitToSequence", [x], st, **attrs)
        if n == 0:
            r = int(self.rng.integers(1, 4))
            a = int(self.rng.integers(0, r))
            xs: list[Dim] = list(self.rand_shape(r))
            xs[a] = 0
            x = self.tensor(TT(dt, tuple(xs)), d - 1)
            if self.chance(0.5):
                split = self.split_arg(int(self.rng.integers(1, 3)))
            if self.chance(0.4):
                attrs["keepdims"] = int(self.rng.integers(0, 2))
            attrs["axis"] = a if self.chance(0.6) else a - r
            self.features.add("split:zero-dim")
            return self.op1("SplitToSequence", [x] if split is None else [x, split], st, **attrs)
        ranks = {len(e) for e in elems}
        if len(ranks) != 1:
            raise Skip
        r = ranks.pop()
        diff = [i for i in range(r) if any(e[i] != elems[0][i] for e in elems)]
        u = elems[0]
        modes: list[str] = []
        if not diff:
            modes += ["squeeze", "squeeze"]
            if any(v == 1 for v in u):
                modes += ["ones", "ones"]
            if any(isinstance(v, int) for v in u):
                modes += ["sizes", "scalar"]
            if any(isinstance(v, int) and v >= 2 for v in u) and self.chance(0.05):
                modes.append("ortfail")
        elif len(diff) == 1 and all(isinstance(e[diff[0]], int) for e in elems):
            a = diff[0]
            sizes = [int(e[a]) for e in elems]
            modes.append("sizes")
            c = sizes[0]
            if c >= 1 and all(s == c for s in sizes[:-1]) and 1 <= sizes[-1] <= c:
                modes.append("scalar")
        else:
            raise Skip
        mode = str(self.pick(modes))
        rx = r
        if mode == "squeeze":
            a = int(self.rng.integers(0, r + 1))
            xshape: Shape = (*u[:a], n, *u[a:])
            rx = r + 1
            attrs["keepdims"] = 0
            self.features.add("split:keepdims0")
        elif mode == "ones":
            a = int(self.pick([i for i, v in enumerate(u) if v == 1]))
            xshape = (*u[:a], n, *u[a + 1 :])
            if self.chance(0.4):
                split = self.split_arg(1)
                self.features.add("split:scalar")
            else:
                self.features.add("split:none")
            if self.chance(0.3):
                attrs["keepdims"] = 1
        else:
            if diff:
                a = diff[0]
                sizes = [int(e[a]) for e in elems]
            elif mode == "ortfail":
                a = int(self.pick([i for i, v in enumerate(u) if isinstance(v, int) and v >= 2]))
                sizes = [int(u[a])] * n
            else:
                a = int(self.pick([i for i, v in enumerate(u) if isinstance(v, int)]))
                sizes = [int(u[a])] * n
            total = sum(sizes)
            if mode == "sizes":
                hidden = False
                if self.chance(self.p_fail):
                    total += 1
                    hidden = True
                    self.failing("split-sum")
                split = self.split_arg(sizes, hidden)
                self.features.add("split:sizes")
                if self.chance(0.25):
                    attrs["keepdims"] = 0  # ignored when split is given
            else:
                if sizes[0] == 0:
                    raise Skip
                split = self.split_arg(sizes[0])
                self.features.add("split:scalar")
                if sizes[-1] != sizes[0]:
                    self.features.add("split:scalar-remainder")
                if mode == "ortfail":
                    attrs["keepdims"] = 0
                    self.features.add("split:ort-fails")
            xshape = (*u[:a], total, *u[a + 1 :])
        if a != 0 or self.chance(0.5):
            attrs["axis"] = a if self.chance(0.6) else a - rx
        x = self.tensor(TT(dt, xshape), d - 1)
        return self.op1("SplitToSequence", [x] if split is None else [x, split], st, **attrs)

    def s_if(self, st: ST, d: int, hint: Shape | None) -> str:
        assert st.elems is not None
        elems = list(st.elems)
        reqs: list[Callable[[], tuple[str, Info]]] = [
            lambda: (self.seq_exact(st.dt, elems, d - 1, reuse_ok=self.chance(0.4), hint=hint), st)
        ]
        if self.chance(0.25):
            tt = TT(self.rand_dt(), self.rand_shape())
            reqs.append(lambda: (self.tensor(tt, d - 1), tt))
        return self.make_if(d, reqs)[0]

    def s_optional(self, st: ST, d: int, hint: Shape | None) -> str:
        assert st.elems is not None
        self.features.add("optional")
        s = self.seq_exact(st.dt, list(st.elems), d - 1, hint=hint)
        if self.opset >= 18 and self.chance(0.3):
            return self.op1("OptionalGetElement", [s], st)
        o = self.op1("Optional", [s], OT(st))
        return self.op1("OptionalGetElement", [o], st)

    def s_loop(self, st: ST, d: int, hint: Shape | None) -> str:
        assert st.elems is not None
        elems = list(st.elems)
        n = len(elems)
        j_min = n
        while j_min > 0 and elems[j_min - 1] == elems[-1]:
            j_min -= 1
        # ONNX infers the carried list's element shape from the initial list: the elements the
        # body appends must agree with it where it is known.
        js = [j for j in range(j_min, n + 1) if j == n or self.agrees(elems[:j], elems[j])]
        j = int(self.pick(js))
        c = n - j
        if c:
            u = elems[j]
        elif n:
            m = self.merged(ST.exact(st.dt, elems))
            u = (
                elems[-1]
                if m is None
                else tuple(elems[-1][i] if v is None else v for i, v in enumerate(m))
            )
        else:
            u = hint or self.rand_shape()
        if c:
            k = int(self.pick([kk for kk in (1, 2, 3) if c % kk == 0]))
            trips = c // k
        else:
            k = int(self.rng.integers(1, 3))
            trips = 0
        prefix = elems[:j]
        spec = ListSpec(st.dt, u, prefix=prefix, net=k)
        _, out = self.make_loop(d, trips, lists=[spec], extras=True)
        return out

    def agrees(self, prefix: list[Shape], u: Shape) -> bool:
        m = self.merged(ST.exact(F, prefix))
        if not prefix or m is None:
            return True
        return len(m) == len(u) and all(v is None or v == w for v, w in zip(m, u, strict=True))

    def s_map(self, st: ST, d: int, hint: Shape | None) -> str:
        assert st.elems is not None
        return self.seq_map(st, d, hint=hint)

    # ------------------------------------------------------------------ lists of run-time length
    def seq_any(self, d: int, dt: int | None = None) -> tuple[str, ST]:
        """Some list (of element type ``dt`` when given)."""
        cands = [(n, i) for n, i in self.visible() if isinstance(i, ST) and dt in (None, i.dt)]
        if cands and self.chance(self.p_reuse):
            self.features.add("reuse-list")
            return self.pick(cands)  # type: ignore[no-any-return]
        dt = self.rand_dt() if dt is None else dt
        if self.chance(0.6):
            elems = self.rand_elems()
            return self.seq_exact(dt, elems, d), ST.exact(dt, elems)
        return self.seq_dyn(dt, self.rand_shape(), d)

    def seq_dyn(self, dt: int, uni: Shape, d: int, min_lo: int = 0) -> tuple[str, ST]:
        """A list whose elements all have shape ``uni``, of a length that may vary."""

        def d_exact() -> tuple[str, ST]:
            n = int(self.rng.integers(min_lo, 4))
            return self.seq_exact(dt, [uni] * n, d, hint=uni), ST(dt, (uni,) * n, uni, n, n)

        def d_reuse() -> tuple[str, ST]:
            cands = [
                (n, i)
                for n, i in self.visible()
                if isinstance(i, ST) and i.dt == dt and i.uni == uni and i.lo >= min_lo
            ]
            if not cands:
                raise Skip
            self.features.add("reuse-list")
            return self.pick(cands)  # type: ignore[no-any-return]

        def d_split() -> tuple[str, ST]:
            syms = [s for s, v in self.syms.items() if v[0] >= min_lo]
            if dt not in SPLIT_DTS or not syms:
                raise Skip
            sym = str(self.pick(syms))
            r = len(uni)
            attrs: dict[str, int] = {}
            ones = [i for i, v in enumerate(uni) if v == 1]
            if ones and self.chance(0.5):
                a = int(self.pick(ones))
                xshape: Shape = (*uni[:a], sym, *uni[a + 1 :])
                rx = r
                ins = [self.tensor(TT(dt, xshape), d - 1)]
                if self.chance(0.3):
                    ins.append(self.split_arg(1))
            else:
                a = int(self.rng.integers(0, r + 1))
                xshape = (*uni[:a], sym, *uni[a:])
                rx = r + 1
                attrs["keepdims"] = 0
                ins = [self.tensor(TT(dt, xshape), d - 1)]
            attrs["axis"] = a if self.chance(0.6) else a - rx
            nom = self.syms[sym][0]
            st = ST(dt, None, uni, nom, nom)
            self.features.add("split:runtime-len")
            return self.op1("SplitToSequence", ins, st, **attrs), st

        def d_loop() -> tuple[str, ST]:
            if self.opset < 13 or not self.deep(d):
                raise Skip
            spec = ListSpec(dt, uni, min_lo=min_lo)
            _, out = self.make_loop(d, None, lists=[spec], extras=True)
            info = self.cur.vals[out]
            assert isinstance(info, ST)
            return out, info

        def d_if() -> tuple[str, ST]:
            if self.opset < 13 or not self.deep(d):
                raise Skip
            names = self.make_if(d, [lambda: self.seq_dyn(dt, uni, d - 1, min_lo)])
            info = self.cur.vals[names[0]]
            assert isinstance(info, ST)
            return names[0], info

        def d_mutate() -> tuple[str, ST]:
            if not self.deep(d):
                raise Skip
            s, st = self.seq_dyn(dt, uni, d - 1, min_lo)
            return self.mutate(s, st, d - 1, floor=min_lo)

        def d_map() -> tuple[str, ST]:
            if self.opset < 17 or not self.deep(d):
                raise Skip
            s, st = self.seq_dyn(dt, uni, d - 1, min_lo)
            out = self.seq_map(st, d, given=(s, st))
            info = self.cur.vals[out]
            assert isinstance(info, ST)
            return out, info

        return self.choose(  # type: ignore[no-any-return]
            [
                (2, d_exact),
                (self.p_reuse * 6, d_reuse),
                (2, d_split),
                (2, d_loop),
                (1, d_if),
                (1.5, d_mutate),
                (0.7, d_map),
            ]
        )

    def mutate(
        self,
        s: str,
        st: ST,
        d: int,
        net: int | None = None,
        nonneg: bool = False,
        floor: int = 0,
    ) -> tuple[str, ST]:
        """Inserts and erases on a list of same-shaped elements.

        ``net``: the exact change of length on every path; ``nonneg``: never shorter than the
        input on any path; ``floor``: the result is never shorter than this.
        """
        assert st.uni is not None
        u = st.uni
        if net is not None:
            e = int(self.chance(0.4))
            plan = ["ins"] * (net + e) + ["er"] * e
            self.rng.shuffle(plan)
            if e and plan[0] == "er" and st.lo < 1:
                plan.remove("er")
                plan.append("er")
            if self.opset >= 13 and self.deep(d) and self.chance(0.3):
                # Part of the change happens in an If (both branches change the length alike).
                if "ins" in plan and self.chance(0.5):
                    plan.remove("ins")
                    plan.insert(int(self.rng.integers(0, len(plan) + 1)), "if1")
                else:
                    plan.insert(int(self.rng.integers(0, len(plan) + 1)), "if0")
        else:
            plan = [
                str(self.pick(["ins", "ins", "er", "if", "map", "id"]))
                for _ in range(int(self.rng.integers(1, 4)))
            ]
        cur, cst = s, st
        inserted = 0
        for step in plan:
            if step == "er" and (cst.lo - 1 < floor or (nonneg and inserted < 1 and net is None)):
                step = "ins"
            if (step == "map" and self.opset < 17) or (step == "id" and self.opset < 14):
                step = "ins"
            if step == "if" and (self.opset < 13 or not self.deep(d)):
                step = "ins"
            if step == "ins":
                t = self.tensor(TT(cst.dt, u), d - 1)
                nst = ST(cst.dt, None, u, cst.lo + 1, cst.hi + 1)
                self.features.add("insert")
                if self.chance(0.35):
                    cur = self.op1("SequenceInsert", [cur, t], nst)
                else:
                    p = self.pos(cst.lo, "insert", seq=cur, n_hi=cst.hi)
                    cur = self.op1("SequenceInsert", [cur, t, p], nst)
                cst = nst
                inserted += 1
            elif step == "er":
                nst = ST(cst.dt, None, u, max(cst.lo - 1, 0), max(cst.hi - 1, 0))
                self.features.add("erase")
                if self.chance(0.35):
                    cur = self.op1("SequenceErase", [cur], nst)
                else:
                    p = self.pos(cst.lo, "erase", seq=cur, n_hi=cst.hi)
                    cur = self.op1("SequenceErase", [cur, p], nst)
                cst = nst
                inserted -= 1
            elif step in ("if", "if0", "if1"):
                sub_net = None if step == "if" else int(step[2])
                base, bst = cur, cst
                names = self.make_if(
                    d,
                    [
                        lambda base=base, bst=bst, sub_net=sub_net: self.mutate(  # type: ignore[misc]
                            base, bst, d - 1, net=sub_net, nonneg=nonneg, floor=floor
                        )
                    ],
                )
                cur = names[0]
                info = self.cur.vals[cur]
                assert isinstance(info, ST)
                cst = info
                self.features.add("if-mutates-list")
            elif step == "map":
                cur = self.seq_map(cst, d, given=(cur, cst), same_dt=True)
            else:
                cur = self.op1("Identity", [cur], cst)
        return cur, cst

    # ------------------------------------------------------------------ SequenceMap
    def seq_map(
        self,
        st: ST,
        d: int,
        given: tuple[str, ST] | None = None,
        same_dt: bool = False,
        hint: Shape | None = None,
    ) -> str:
        """A SequenceMap whose output has the shapes of ``st`` (or maps the ``given`` list)."""
        dt = st.dt
        elems = st.elems
        if given is not None:
            same_dt = True
        kinds = ["unary", "add-tensor", "two-lists"] if dt in NUMERIC else []
        kinds.append("general")
        if not same_dt:
            kinds.append("cast")
            if dt == I64 and elems and all(len(e) == 1 and isinstance(e[0], int) for e in elems):
                kinds.append("shape")
        if st.uni is None:
            kinds = [k for k in kinds if k != "general"] or ["identity"]
        kind = str(self.pick(kinds))
        self.features.add(f"seqmap:{kind}")
        # The input list(s).
        in_dt = dt
        if kind == "cast":
            in_dt = int(self.pick(CAST_FROM[dt]))
        if kind == "shape":
            in_dt = self.rand_dt()
        if given is not None:
            src, sst = given
        elif kind == "shape":
            assert elems is not None
            in_elems = [self.rand_shape(int(e[0])) for e in elems]
            sst = ST.exact(in_dt, in_elems)
            src = self.seq_exact(in_dt, in_elems, d - 1)
        elif elems is not None:
            sst = ST.exact(in_dt, list(elems))
            src = self.seq_exact(in_dt, list(elems), d - 1, hint=hint)
        else:
            assert st.uni is not None
            src, sst = self.seq_dyn(in_dt, st.uni, d - 1)
        ins = [src]
        extra_tt: TT | None = None
        second: str | None = None
        if kind == "add-tensor":
            extra_tt = TT(dt, st.uni[-1:] if st.uni and self.chance(0.4) else ())
            ins.append(self.tensor(extra_tt, d - 1))
        if kind == "two-lists":
            second = self.seq_exact(dt, list(sst.elems), d - 1) if sst.elems is not None else None
            if second is None:
                kind = "unary"
            else:
                ins.append(second)
        out_st = st if given is None else ST(dt, sst.elems, sst.uni, sst.lo, sst.hi)
        if kind == "shape":
            out_st = ST(
                I64,
                tuple((len(e),) for e in sst.elems) if sst.elems is not None else None,
                (len(sst.uni),) if sst.uni is not None else None,
                sst.lo,
                sst.hi,
            )
        elem_decl = self.merged(sst)
        with self.scope("sub") as sc:
            x = self.fresh("e")
            if sst.uni is not None:
                sc.vals[x] = TT(in_dt, sst.uni)
            body_in = [(x, self.elem_type(in_dt, elem_decl))]
            if extra_tt is not None:
                t = self.fresh("t")
                sc.vals[t] = extra_tt
                body_in.append((t, self.decl_type(extra_tt)))
            if second is not None:
                x2 = self.fresh("e")
                body_in.append((x2, self.elem_type(dt, elem_decl)))
            if kind == "unary":
                op = str(self.pick(["Neg", "Abs", "Identity"]))
                y = self.emit(op, [x])[0]
            elif kind == "identity":
                y = self.emit("Identity", [x])[0]
            elif kind == "add-tensor":
                y = self.emit("Add", [x, body_in[1][0]])[0]
            elif kind == "two-lists":
                y = self.emit("Mul", [x, body_in[1][0]])[0]
            elif kind == "cast":
                y = self.emit("Cast", [x], to=dt)[0]
            elif kind == "shape":
                y = self.emit("Shape", [x])[0]
            else:
                assert sst.uni is not None
                tt = TT(dt, sst.uni)
                sc.vals[x] = tt
                self.p_reuse, old = 0.8, self.p_reuse
                try:
                    y = self.local(self.tensor(tt, d - 1), tt)
                finally:
                    self.p_reuse = old
            outs = [(y, self.elem_type(out_st.dt, self.merged(out_st)))]
            extra_out = self.chance(0.2)
            if extra_out:
                outs.append(
                    (self.emit("Shape", [x])[0], helper.make_tensor_type_proto(I64, [None]))
                )
        body = self.make_graph(sc, f"map{self.counter}", body_in, outs)
        names = self.emit("SequenceMap", ins, nout=len(outs), body=body)
        self.reg(names[0], out_st)
        if extra_out:
            shp = ST(
                I64,
                tuple((len(e),) for e in sst.elems) if sst.elems is not None else None,
                (len(sst.uni),) if sst.uni is not None else None,
                sst.lo,
                sst.hi,
            )
            if shp.elems is not None:
                shp = ST.exact(I64, list(shp.elems))
            self.reg(names[1], shp)
        return names[0]

    # ------------------------------------------------------------------ If
    def if_extra(self, d: int) -> Callable[[], tuple[str, Info]]:
        """One more If output: a tensor, a list, or (opset 13+) lists that differ by branch."""
        kind = str(self.pick(["tensor", "list", "any-list"] if self.opset >= 13 else ["tensor"]))
        if kind == "tensor":
            tt = TT(self.rand_dt(), self.rand_shape())
            return lambda: (self.tensor(tt, d - 1), tt)
        dt = self.rand_dt()
        if kind == "list":
            elems = self.rand_elems()
            return lambda: (self.seq_exact(dt, elems, d - 1), ST.exact(dt, elems))
        self.features.add("if:any-lists")
        return lambda: self.seq_any(d - 1, dt)

    def make_if(self, d: int, reqs: list[Callable[[], tuple[str, Info]]]) -> list[str]:
        """An If whose outputs are made by ``reqs`` in each branch (and maybe more)."""
        reqs = list(reqs)
        if self.deep(d) and self.chance(0.3):
            reqs.append(self.if_extra(d))
            if self.chance(0.3):
                reqs.append(self.if_extra(d))
        c = self.cond(d - 1)
        if self.loop_scope() is not None:
            self.features.add("if-in-loop")
        if self.cur.tag == "if":
            self.features.add("if-in-if")
        self.features.add(f"nest:{self.cur.depth + 1}")
        graphs = []
        branch_infos: list[list[Info]] = []
        for br in ("then", "else"):
            with self.scope("sub") as sc:
                sc.tag = "if"
                outs: list[tuple[str, Info]] = []
                for req in reqs:
                    name, info = req()
                    name = self.local(name, info)
                    if any(name == o for o, _ in outs):
                        name = self.copy(name, info)
                    outs.append((name, info))
            branch_infos.append([i for _, i in outs])
            decl = [(n, self.decl_type(i)) for n, i in outs]
            graphs.append(self.make_graph(sc, f"{br}{self.counter}", [], decl))
        names = self.emit("If", [c], nout=len(reqs), then_branch=graphs[0], else_branch=graphs[1])
        for n, a, b in zip(names, branch_infos[0], branch_infos[1], strict=True):
            self.reg(n, self.join(a, b))
        return names

    def join(self, a: Info, b: Info) -> Info:
        if a == b:
            return a
        if isinstance(a, ST) and isinstance(b, ST) and a.dt == b.dt:
            self.features.add("if:lists-differ")
            return ST(
                a.dt, None, a.uni if a.uni == b.uni else None, min(a.lo, b.lo), max(a.hi, b.hi)
            )
        raise AssertionError(f"If branches disagree: {a} vs {b}")

    # ------------------------------------------------------------------ Loop
    def cond_true(self) -> str:
        r = self.rng.random()
        if r < 0.15 and self.func_scope() is None:
            return self.add_input(TT(B, ()), [np.array(True)] * NSETS)
        if r < 0.3:
            return self.op1("Less", [self.scalar_const(0), self.scalar_const(1)], TT(B, ()))
        return self.scalar_const(True, B)

    def trip_count(
        self, trip: Dim | None, steady_needed: bool, d: int
    ) -> tuple[str, str, Dim, int, int | str | None]:
        """Trip-count and initial-condition inputs for a Loop.

        Returns (M, cond, the trip count as a dim, its nominal value, the bound of a
        while-loop whose body stops after that many iterations (a constant or the name of an
        int64 input), else None).
        """
        in_func = self.func_scope() is not None
        if trip is None:
            t = int(self.rng.choice([0, 1, 1, 2, 2, 3]))
            if not steady_needed and not in_func and self.chance(0.15):
                # A while-loop: ("", cond) with a body condition against a run-time bound.
                t = max(t, 1)
                vals = [t, t, int(self.rng.integers(1, 5))]
                bound = self.add_input(TT(I64, ()), [np.array(v, np.int64) for v in vals])
                if self.chance(0.3):
                    flip = [np.array(True), np.array(True), np.array(self.chance(0.5))]
                    c0 = self.add_input(TT(B, ()), flip)
                else:
                    c0 = self.cond_true()
                self.features.add("trip:while-runtime")
                return "", c0, self.new_derived(t), t, bound
            if not steady_needed and not in_func and self.chance(0.35):
                vals = [t, t, int(self.rng.integers(0, 5))]
                m = self.add_input(TT(I64, ()), [np.array(v, np.int64) for v in vals])
                self.features.add("trip:runtime")
                if t == 0:
                    self.features.add("zero-trip")
                c0 = "" if self.chance(0.05) else self.cond_true()
                return m, c0, self.new_derived(t), t, None
            trip = t
        if isinstance(trip, str):
            t = self.syms[trip][0]
            if not in_func and self.chance(0.5):
                m = self.add_input(TT(I64, ()), [np.array(v, np.int64) for v in self.syms[trip]])
                self.features.add("trip:runtime-sym")
            else:
                m = self.dim_of(trip, d)
                self.features.add("trip:shape-sym")
            return m, self.cond_true(), trip, t, None
        t = int(trip)
        if t == 0:
            self.features.add("zero-trip")
        forms = ["const", "const", "shape", "seqlen", "while", "min"]
        if not in_func:
            forms.append("input")
        form = str(self.pick(forms))
        self.features.add(f"trip:{form}")
        if form == "while":
            return "", self.scalar_const(t > 0, B), t, t, t
        if form == "min":
            m = self.scalar_const(t + int(self.rng.integers(0, 3)))
            return m, self.scalar_const(t > 0, B), t, t, t
        if form == "input":
            m = self.add_input(TT(I64, ()), [np.array(t, np.int64)] * NSETS)
        elif form == "shape":
            m = self.dim_of(t, d)
        elif form == "seqlen":
            dt = self.rand_dt()
            elems = self.rand_elems(t)
            m = self.op1("SequenceLength", [self.seq_exact(dt, elems, d - 1)], TT(I64, ()))
        else:
            m = self.scalar_const(t)
        c0 = "" if self.chance(0.05) else self.cond_true()
        if not c0:
            self.features.add("loop:no-cond-input")
        return m, c0, t, t, None

    def dim_of(self, dim: Dim, d: int) -> str:
        """An int64 scalar read from the shape of a tensor that has ``dim``."""
        rest = self.rand_shape(int(self.rng.integers(0, 2)))
        a = int(self.rng.integers(0, len(rest) + 1))
        shape = (*rest[:a], dim, *rest[a:])
        x = self.tensor(TT(self.rand_dt(), shape), d - 1)
        sh = self.op1("Shape", [x], TT(I64, (len(shape),)))
        return self.op1("Gather", [sh, self.scalar_const(a)], TT(I64, ()), axis=0)

    def loop_cond(self, it: str, cin: str, while_t: int | str | None) -> str:
        if isinstance(while_t, str):
            one = self.op1("Add", [it, self.scalar_const(1)], TT(I64, ()))
            return self.op1("Less", [one, while_t], TT(B, ()))
        if while_t is not None:
            return self.op1("Less", [it, self.scalar_const(while_t - 1)], TT(B, ()))
        r = self.rng.random()
        if r < 0.5:
            return self.op1("Identity", [cin], TT(B, ()))
        if r < 0.75:
            return self.scalar_const(True, B, "node")
        self.features.add("loop:computed-cond")
        one = self.op1("Add", [it, self.scalar_const(1)], TT(I64, ()))
        return self.op1("Greater", [one, self.scalar_const(0)], TT(B, ()))

    def loop_update(self, vin: str, tt: TT, d: int) -> str:
        if tt.dt in NUMERIC:
            op = str(
                self.pick(
                    ["Add", "Sub", "Max"]
                    if self.opset >= 12 or tt.dt in (F, F64)
                    else ["Add", "Sub"]
                )
            )
            return self.op1(op, [vin, self.tensor(tt, d - 1)], tt)
        if tt.dt == B:
            return self.op1(str(self.pick(["Xor", "Or", "And"])), [vin, self.tensor(tt, d - 1)], tt)
        if self.chance(0.5):
            return self.op1("Identity", [vin], tt)
        return self.local(self.tensor(tt, d - 1), tt)

    def append_back(self, s: str, st: ST, spec: ListSpec, d: int) -> tuple[str, ST]:
        """Append ``spec.net`` elements at the back (the list's own elements may differ)."""
        assert spec.net is not None
        if self.opset >= 13 and self.deep(d) and self.chance(0.25):
            names = self.make_if(d, [lambda: self.append_back(s, st, spec, d - 1)])
            info = self.cur.vals[names[0]]
            assert isinstance(info, ST)
            return names[0], info
        cur, cst = s, st
        for _ in range(spec.net):
            t = self.tensor(TT(st.dt, spec.uni), d - 1)
            nst = ST(st.dt, None, cst.uni, cst.lo + 1, cst.hi + 1)
            if self.chance(0.5):
                cur = self.op1("SequenceInsert", [cur, t], nst)
            else:
                ln = self.op1("SequenceLength", [cur], TT(I64, ()))
                if self.chance(0.3):
                    ln = self.op1("Cast", [ln], TT(I32, ()), to=I32)
                self.features.add("insert:at-length")
                cur = self.op1("SequenceInsert", [cur, t, ln], nst)
            cst = nst
        return cur, cst

    def make_loop(
        self,
        d: int,
        trip: Dim | None,
        carried: list[TT] | None = None,
        lists: list[ListSpec] | None = None,
        scans: list[TT] | None = None,
        extras: bool = False,
    ) -> tuple[Dim, str]:
        """A Loop; returns the trip count (as a dim) and the name of its first output.

        Its outputs are, in order: ``carried``, ``lists``, ``scans``, then extra ones (which are
        only registered, for reuse).
        """
        carried = list(carried or [])
        lists = list(lists or [])
        scans = list(scans or [])
        want = "carried" if carried else "lists" if lists else "scans"
        if extras:
            if self.chance(0.25):
                carried.append(TT(self.rand_dt(), self.rand_shape()))
            if self.opset >= 13 and self.chance(0.2):
                lists.append(ListSpec(self.rand_dt(), self.rand_shape()))
            if self.chance(0.25):
                scans.append(TT(self.rand_dt(), self.rand_shape()))
        if self.opset < 13:
            assert not lists
        self.features.add("loop")
        if self.loop_scope() is not None:
            self.features.add("loop-in-loop")
        self.features.add(f"nest:{self.cur.depth + 1}")
        steady_needed = any(sp.prefix is not None for sp in lists)
        m, c0, trip_dim, t, while_t = self.trip_count(trip, steady_needed, d)
        init_c = [self.tensor(tt, d - 1) for tt in carried]
        init_l: list[str] = []
        in_sts: list[ST] = []
        for sp in lists:
            if sp.prefix is not None:
                init_l.append(self.seq_exact(sp.dt, sp.prefix, d - 1, hint=sp.uni))
                in_sts.append(ST.exact(sp.dt, sp.prefix))
            elif self.chance(0.5):
                n0 = int(self.rng.integers(sp.min_lo, 3)) if sp.min_lo < 3 else sp.min_lo
                init_l.append(self.seq_exact(sp.dt, [sp.uni] * n0, d - 1, hint=sp.uni))
                in_sts.append(ST.exact(sp.dt, [sp.uni] * n0))
            else:
                s, ist = self.seq_dyn(sp.dt, sp.uni, d - 1, sp.min_lo)
                init_l.append(s)
                in_sts.append(ist)
        if lists:
            self.features.add("loop-list")
        if scans:
            self.features.add("loop-scan")
        with self.scope("sub") as sc:
            sc.tag = "loop"
            it = self.fresh("i")
            cin = self.fresh("cond")
            sc.loop_iter = it
            sc.loop_trips = t
            sc.vals[it] = TT(I64, ())
            sc.vals[cin] = TT(B, ())
            body_in = [
                (it, helper.make_tensor_type_proto(I64, [])),
                (cin, helper.make_tensor_type_proto(B, [])),
            ]
            vin = []
            for tt in carried:
                n = self.fresh("c")
                sc.vals[n] = tt
                vin.append(n)
                body_in.append((n, self.decl_type(tt)))
            sin: list[str] = []
            s_infos: list[ST] = []
            for sp, ist in zip(lists, in_sts, strict=True):
                n = self.fresh("s")
                uniform = ist.uni == sp.uni or ist.hi == 0
                grow = sp.net if sp.net is not None else 2
                info = ST(
                    sp.dt, None, sp.uni if uniform else None, ist.lo, ist.hi + max(t - 1, 0) * grow
                )
                sc.vals[n] = info
                sin.append(n)
                s_infos.append(info)
                body_in.append((n, self.decl_type(info)))
            outs_c = [self.loop_update(n, tt, d) for n, tt in zip(vin, carried, strict=True)]
            outs_l: list[str] = []
            out_sts: list[ST] = []
            for n, info, sp in zip(sin, s_infos, lists, strict=True):
                if info.uni is not None:
                    o, ost = self.mutate(n, info, d - 1, net=sp.net, nonneg=True)
                else:
                    o, ost = self.append_back(n, info, sp, d - 1)
                outs_l.append(self.local(o, ost))
                out_sts.append(ost)
            outs_s = [self.local(self.tensor(tt, d - 1), tt) for tt in scans]
            cond_out = self.loop_cond(it, cin, while_t)
            seen = {cond_out}
            groups: list[tuple[list[str], list[Any]]] = [
                (outs_c, carried),
                (outs_l, out_sts),
                (outs_s, scans),
            ]
            for group, infos in groups:
                for i, (n, info) in enumerate(zip(group, infos, strict=True)):
                    if n in seen:
                        group[i] = self.copy(n, info)
                    seen.add(group[i])
        body_out = [(cond_out, helper.make_tensor_type_proto(B, []))]
        body_out += [(n, self.decl_type(tt)) for n, tt in zip(outs_c, carried, strict=True)]
        body_out += [(n, self.decl_type(st)) for n, st in zip(outs_l, out_sts, strict=True)]
        body_out += [(n, self.decl_type(tt)) for n, tt in zip(outs_s, scans, strict=True)]
        graph = self.make_graph(sc, f"body{self.counter}", body_in, body_out)
        names = self.emit("Loop", [m, c0, *init_c, *init_l], nout=len(body_out) - 1, body=graph)
        k = 0
        for tt in carried:
            self.reg(names[k], tt)
            k += 1
        for sp, ist, info, ost in zip(lists, in_sts, s_infos, out_sts, strict=True):
            d_lo, d_hi = ost.lo - info.lo, ost.hi - info.hi
            if sp.net is not None and isinstance(trip_dim, int) and ist.elems is not None:
                final = ST.exact(sp.dt, [*ist.elems, *[sp.uni] * (t * sp.net)])
            else:
                uni = sp.uni if info.uni is not None else None
                final = ST(sp.dt, None, uni, ist.lo + t * d_lo, ist.hi + t * d_hi)
            self.reg(names[k], final)
            k += 1
        for tt in scans:
            self.reg(names[k], TT(tt.dt, (trip_dim, *tt.shape)))
            k += 1
        first = {"carried": 0, "lists": len(carried), "scans": len(carried) + len(lists)}[want]
        return trip_dim, names[first]

    # ------------------------------------------------------------------ functions
    def call_func(self, info: TT | ST, d: int) -> str:
        if self.opset < 15 or self.func_scope() is not None or not self.deep(d):
            raise Skip
        same = [sig for sig in self.fn_sigs if sig[1] == info]
        if same and self.chance(0.7):
            fname, _, params = self.pick(same)
            self.features.add("func-called-twice")
        else:
            with self.scope("func") as fs:
                if isinstance(info, TT):
                    out = self.tensor(info, d - 1, reuse_ok=False)
                else:
                    assert info.elems is not None
                    out = self.seq_exact(info.dt, list(info.elems), d - 1, reuse_ok=False)
                out = self.local(out, info)
            fname = f"fn{len(self.functions)}"
            params = [tt for _, tt in fs.params]
            self.functions.append(
                helper.make_function(
                    FN_DOMAIN,
                    fname,
                    [n for n, _ in fs.params],
                    [out],
                    fs.nodes,
                    opset_imports=[helper.make_opsetid("", self.opset)],
                )
            )
            self.fn_sigs.append((fname, info, params))
            self.features.add("func")
            if any(n.op_type in SEQ_OPS for n in fs.nodes):
                self.features.add("func-with-seq-ops")
        args = [self.tensor(tt, d - 1) for tt in params]
        out = self.op1(fname, args, info, domain=FN_DOMAIN)
        if isinstance(info, TT) and info.dt in NUMERIC and self.chance(0.35):
            # The same function called twice.
            args2 = [self.tensor(tt, d - 1) for tt in params]
            out2 = self.op1(fname, args2, info, domain=FN_DOMAIN)
            self.features.add("func-called-twice")
            out = self.op1("Add", [out, out2], info)
        return out

    # ------------------------------------------------------------------ declarations and graphs
    def decl_dim(self, v: Dim, loose: float = 0.2) -> int | str | None:
        if isinstance(v, int):
            r = self.rng.random()
            if r < loose / 2:
                return None
            if r < loose:
                self.features.add("decl-sym-static")
                return self.fresh("u")
            return v
        if v in self.syms:
            return None if self.chance(loose) else v
        return None if self.chance(0.6) else self.fresh("u")

    def merged(self, st: ST) -> list[Dim | None] | None:
        if st.uni is not None:
            return list(st.uni)
        if st.elems:
            ranks = {len(e) for e in st.elems}
            if len(ranks) == 1:
                e0 = st.elems[0]
                return [
                    e0[i] if all(e[i] == e0[i] for e in st.elems) else None for i in range(len(e0))
                ]
        return None

    def elem_type(self, dt: int, shape: list[Dim | None] | None) -> onnx.TypeProto:
        if shape is None or self.chance(0.2):
            return helper.make_tensor_type_proto(dt, None)
        return helper.make_tensor_type_proto(
            dt, [None if v is None else self.decl_dim(v) for v in shape]
        )

    def decl_type(self, info: Info, loose: float = 0.2) -> onnx.TypeProto:
        if isinstance(info, TT):
            return helper.make_tensor_type_proto(
                info.dt, [self.decl_dim(v, loose) for v in info.shape]
            )
        if isinstance(info, ST):
            return helper.make_sequence_type_proto(self.elem_type(info.dt, self.merged(info)))
        return helper.make_optional_type_proto(self.decl_type(info.inner, loose))

    def make_graph(
        self,
        sc: Scope,
        name: str,
        inputs: list[tuple[str, onnx.TypeProto]],
        outputs: list[tuple[str, onnx.TypeProto]],
        **kw: Any,
    ) -> onnx.GraphProto:
        out_names = {n for n, _ in outputs}
        vi = []
        for n in sc.local:
            info = sc.vals.get(n)
            if n not in out_names and info is not None and self.chance(0.08):
                vi.append(helper.make_value_info(n, self.decl_type(info)))
                self.features.add("value-info")
        for node in sc.nodes:
            if all(o not in sc.used and o not in out_names for o in node.output):
                self.features.add("dead-node")
        return helper.make_graph(
            sc.nodes,
            name,
            [helper.make_value_info(n, t) for n, t in inputs],
            [helper.make_value_info(n, t) for n, t in outputs],
            value_info=vi,
            **kw,
        )

    def copy(self, name: str, info: Info) -> str:
        """A new node that passes ``name`` on."""
        if isinstance(info, TT) or self.opset >= 14:
            return self.op1("Identity", [name], info)
        self.cur.local.pop(name, None)
        out = self.local(name, info)
        self.cur.local[name] = None
        return out

    # ------------------------------------------------------------------ the program
    def build(self) -> Program:
        r = self.rng
        nout = int(r.choice([1, 1, 2, 2, 3]))
        d0 = int(r.choice([2, 3, 3, 4, 4, 5]))
        outs: list[tuple[str, Info]] = []
        for _ in range(nout):
            k = r.random()
            if k < 0.42:
                tt = TT(self.rand_dt(), self.rand_shape())
                outs.append((self.tensor(tt, d0), tt))
            elif k < 0.67:
                dt = self.rand_dt()
                elems = self.rand_elems()
                outs.append((self.seq_exact(dt, elems, d0), ST.exact(dt, elems)))
                self.features.add("seq-output")
            elif k < 0.82:
                outs.append(self.seq_dyn(self.rand_dt(), self.rand_shape(), d0))
                self.features.add("seq-output")
            elif k < 0.95:
                outs.append(self.wild(self.rand_dt(), d0))
            else:
                outs.append(self.quirk_output(d0))
        names = {n for n, _ in outs}
        for n in list(self.main.local):
            info = self.main.vals.get(n)
            if n not in self.main.used and n not in names and isinstance(info, TT | ST):
                outs.append((n, info))
                names.add(n)
                self.features.add("extra-output")
        final: list[tuple[str, Info]] = []
        seen: set[str] = set()
        for n, info in outs:
            if n in seen or n not in self.main.local:
                n = self.copy(n, info)
            seen.add(n)
            final.append((n, info))
        inputs = [
            helper.make_value_info(
                s.name, helper.make_tensor_type_proto(s.info.dt, self.input_decl[s.name])
            )
            for s in self.inputs
        ]
        outputs = [(n, self.decl_type(i, 0.25)) for n, i in final]
        graph = self.make_graph(self.main, "spec_program", [], outputs, initializer=self.inits)
        graph.input.extend(inputs)
        opsets = [helper.make_opsetid("", self.opset)]
        if self.functions:
            opsets.append(helper.make_opsetid(FN_DOMAIN, 1))
        model = helper.make_model(
            graph,
            opset_imports=opsets,
            ir_version=self.ir,
            functions=self.functions,
            producer_name="spec_programs",
        )
        feeds = [{s.name: s.values[k] for s in self.inputs} for k in range(NSETS)]
        for info in self.all_infos():
            if isinstance(info, ST):
                self.features.add(f"list-dt:{DT_NAME[info.dt]}")
        strict = self.chance(0.5) if self.quirk else self.chance(0.12)
        if strict:
            self.features.add("strict_spec")
        return Program(
            self.seed, self.index, self.opset, model, feeds, self.features, strict, self.quirk
        )

    def quirk_output(self, d: int) -> tuple[str, Info]:
        """SplitToSequence with a scalar split, keepdims=0 and chunks of one element.

        ONNX Runtime squeezes the split axis, the spec keeps it (keepdims is ignored when split
        is given): the documented disagreement, where seqpasses follows ONNX Runtime unless
        ``strict_spec``. Only shape-blind readers follow, so that both readings stay valid.
        """
        dt = self.rand_dt(SPLIT_DTS)
        u = self.rand_shape(allow_zero=False, allow_sym=False)
        n = int(self.rng.integers(1, 4))
        a = int(self.rng.integers(0, len(u) + 1))
        x = self.tensor(TT(dt, (*u[:a], n, *u[a:])), d - 1)
        c = 1 if n > 1 or self.chance(0.5) else int(self.rng.integers(2, 4))
        st = ST(dt, None, None, n, n)
        axis = a if self.chance(0.6) else a - len(u) - 1
        # A constant split: with a run-time one the node cannot be rewritten, and ORT's reading
        # would stay even under strict_spec.
        split = self.split_arg(c, const=True)
        s = self.op1("SplitToSequence", [x, split], st, axis=axis, keepdims=0)
        self.quirk = True
        self.features.add("split:quirk")
        if self.chance(0.3):
            return self.op1("SequenceLength", [s], TT(I64, ())), TT(I64, ())
        if self.opset >= 14 and self.chance(0.3):
            s = self.op1("Identity", [s], st)
        return s, st

    def all_infos(self) -> list[Info]:
        return list(self.main.vals.values())


@dataclass
class ListSpec:
    """A list carried through a Loop.

    ``uni``: the shape of the elements the body adds. ``prefix``: the initial elements (their
    shapes are exact); then ``net``: how many elements each iteration adds, on every path.
    Without ``prefix`` the list starts with elements of shape ``uni`` and ``min_lo`` is the least
    length it may have.
    """

    dt: int
    uni: Shape
    prefix: list[Shape] | None = None
    net: int | None = None
    min_lo: int = 0


def generate(seed: int, index: int, opset: int | None = None) -> Program:
    """Program ``index`` of ``seed`` (the same on every run)."""
    return Gen(seed, index, opset).build()


# ====================================================================== the judge
FAILURE_KINDS = (
    "crash",
    "selfcheck-error",
    "bad-input",
    "input-modified",
    "invalid-output",
    "ort-load-output",
    "outputs-changed",
    "more-sequence-ops",
    "mismatch-ort",
    "mismatch-ort-empty-shape",
    "opt-fails-orig-runs-ort",
    "orig-fails-opt-runs-ort",
    "mismatch-ref",
    "timeout",
)


ACCEPTED_KINDS = ("ort-spec-disagreement", "zero-trip-scan-shape")
"""Verdicts that are documented differences, not failures: ORT departs from the spec, and a
zero-iteration Loop's scan output shaped ``[0, *E]`` from the element shape seqpasses proved
where ORT shapes the original's from the body's declared output (docs/loops.md)."""


@dataclass
class Verdict:
    kind: str  # "ok", one of ACCEPTED_KINDS, "discard:<why>" or one of FAILURE_KINDS
    detail: str = ""
    nodes_before: int = 0
    nodes_after: int = 0
    seq_before: int = 0
    seq_after: int = 0
    orig_fails: int = 0  # input sets on which the original fails on ONNX Runtime

    @property
    def failed(self) -> bool:
        return self.kind in FAILURE_KINDS


def all_graphs(model: onnx.ModelProto) -> Iterator[onnx.GraphProto]:
    """The main graph, every subgraph, and the subgraphs in functions."""

    def walk(nodes: Any) -> Iterator[onnx.GraphProto]:
        for node in nodes:
            for attr in node.attribute:
                subs = [attr.g] if attr.type == onnx.AttributeProto.GRAPH else list(attr.graphs)
                for g in subs:
                    yield g
                    yield from walk(g.node)

    yield model.graph
    yield from walk(model.graph.node)
    for f in model.functions:
        yield from walk(f.node)


def all_nodes(model: onnx.ModelProto) -> list[onnx.NodeProto]:
    nodes = [n for g in all_graphs(model) for n in g.node]
    nodes += [n for f in model.functions for n in f.node]
    return nodes


def count_seq_ops(model: onnx.ModelProto) -> int:
    return sum(1 for n in all_nodes(model) if n.op_type in SEQ_OPS and n.domain in ("", "ai.onnx"))


def _ort_session(model: onnx.ModelProto) -> Any:
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    so.log_severity_level = 4
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    return ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])


Outcome = tuple[bool, Any]  # (ran, outputs by name) or (False, error message)


def run_ort(sess: Any, feeds: dict[str, np.ndarray], names: list[str]) -> Outcome:
    try:
        wanted = {i.name for i in sess.get_inputs()}
        outs = sess.run(names, {k: v for k, v in feeds.items() if k in wanted})
    except Exception as e:
        return False, f"{type(e).__name__}: {str(e).splitlines()[0][:300]}"
    return True, dict(zip(names, outs, strict=True))


def run_ref(model: onnx.ModelProto, feeds: dict[str, np.ndarray], names: list[str]) -> Outcome:
    from onnx.reference import ReferenceEvaluator

    class Evaluator(ReferenceEvaluator):
        """Uses the patched kernels in model-local functions too (built with its own class)."""

        def __init__(self, proto: Any, *args: Any, **kw: Any) -> None:
            kw["new_ops"] = kw.get("new_ops") or _patched_reference_ops()
            super().__init__(proto, *args, **kw)

    try:
        ref = Evaluator(model)
        wanted = set(ref.input_names)
        outs = ref.run(names, {k: v for k, v in feeds.items() if k in wanted})
    except Exception as e:
        return False, f"{type(e).__name__}: {str(e).splitlines()[0][:300] if str(e) else ''}"
    return True, dict(zip(names, outs, strict=True))


def _as_list(v: Any) -> list[Any] | None:
    return list(v) if isinstance(v, list | tuple) else None


def compare_values(a: Any, b: Any, where: str) -> tuple[str, bool] | None:
    """None when equal; else (what differs, whether only the shapes of empty tensors differ)."""
    la, lb = _as_list(a), _as_list(b)
    if la is not None or lb is not None:
        if la is None or lb is None:
            return f"{where}: a sequence vs a tensor", False
        if len(la) != len(lb):
            return f"{where}: sequence length {len(la)} vs {len(lb)}", False
        for i, (x, y) in enumerate(zip(la, lb, strict=True)):
            r = compare_values(x, y, f"{where}: element {i}")
            if r is not None:
                return r
        return None
    if a is None or b is None:
        return None if a is None and b is None else (f"{where}: None vs a value", False)
    x, y = np.asarray(a), np.asarray(b)
    if x.dtype != y.dtype:
        return f"{where}: dtype {x.dtype} vs {y.dtype}", False
    if x.shape != y.shape:
        return f"{where}: shape {x.shape} vs {y.shape}", x.size == 0 and y.size == 0
    if x.dtype.kind in "fc":
        ok = np.allclose(
            x.astype(np.float64), y.astype(np.float64), rtol=1e-5, atol=1e-6, equal_nan=True
        )
    else:
        ok = np.array_equal(x, y)
    if not ok:
        return f"{where}: values differ", False
    return None


def compare(a: Outcome, b: Outcome) -> tuple[str, bool] | None:
    """None when both fail or both run with equal outputs."""
    if a[0] != b[0]:
        return ("runs vs fails", False)
    if not a[0]:
        return None
    empty_only = True
    first: str | None = None
    for name in a[1]:
        r = compare_values(a[1][name], b[1][name], f"output {name!r}")
        if r is not None:
            first = first or r[0]
            empty_only = empty_only and r[1]
    return None if first is None else (first, empty_only)


_SAME_SHAPE = frozenset({"Identity", "Cast", "Abs", "Neg", "Relu", "Sigmoid", "Exp", "Not", "Sqrt"})


def _const_ints(model: onnx.ModelProto, name: str) -> list[int] | None:
    for t in model.graph.initializer:
        if t.name == name:
            return [int(v) for v in numpy_helper.to_array(t).reshape(-1)]
    for n in model.graph.node:
        if n.op_type == "Constant" and list(n.output) == [name]:
            for a in n.attribute:
                if a.name == "value":
                    return [int(v) for v in numpy_helper.to_array(a.t).reshape(-1)]
                if a.name == "value_ints":
                    return [int(v) for v in a.ints]
                if a.name == "value_int":
                    return [int(a.i)]
    return None


def _scan_output_shape(model: onnx.ModelProto, name: str) -> list[int | None] | None:
    """The shape graph output ``name`` has when it is a zero-iteration scan output of a Loop
    (through shape-keeping unary ops and Squeeze/Unsqueeze of constant axes): ``[0, *E]``
    with ``E`` what the Loop body declares for it, a number or None per dim; None when the
    output is not such a value."""
    producers = {o: n for n in model.graph.node for o in n.output}
    chain: list[onnx.NodeProto] = []
    node = producers.get(name)
    while node is not None and node.op_type in _SAME_SHAPE | {"Squeeze", "Unsqueeze"}:
        chain.append(node)
        name = node.input[0]
        node = producers.get(name)
    if node is None or node.op_type != "Loop" or node.domain not in ("", "ai.onnx"):
        return None
    body = next((a.g for a in node.attribute if a.name == "body"), None)
    carried = len(node.input) - 2
    index = list(node.output).index(name)
    if body is None or index < carried:
        return None
    tensor = body.output[1 + index].type.tensor_type
    if not tensor.HasField("shape"):
        return None
    shape: list[int | None] = [0]
    shape += [d.dim_value if d.HasField("dim_value") else None for d in tensor.shape.dim]
    for op in reversed(chain):
        if op.op_type in _SAME_SHAPE:
            continue
        axes = next((list(a.ints) for a in op.attribute if a.name == "axes"), None)
        if axes is None and len(op.input) > 1:
            axes = _const_ints(model, op.input[1])
        if axes is None:
            return None
        if op.op_type == "Squeeze":
            axes = [x + len(shape) if x < 0 else x for x in axes]
            shape = [d for k, d in enumerate(shape) if k not in axes]
        else:
            rank = len(shape) + len(axes)
            for x in sorted(x + rank if x < 0 else x for x in axes):
                shape.insert(x, 1)
    return shape


def zero_trip_scan_outputs(optimized: onnx.ModelProto, a: Outcome, b: Outcome) -> bool:
    """Whether every output that differs between ``a`` (the original's) and ``b`` (the
    optimized model's) is a zero-iteration scan output as docs/loops.md says seqpasses gives
    it: both empty, one dtype, the optimized one ``[0, *E]`` (through shape-keeping ops) with
    ``E`` the element shape its Loop body declares (what seqpasses proved: every dim it knows
    as a number is that number; ORT makes a dim known only symbolically 0), the original's
    whatever ORT made of its body's declared shape."""
    if not (a[0] and b[0]):
        return False
    for name in a[1]:
        if compare_values(a[1][name], b[1][name], name) is None:
            continue
        x, y = np.asarray(a[1][name]), np.asarray(b[1][name])
        shape = _scan_output_shape(optimized, name)
        if (
            x.size
            or y.size
            or x.dtype != y.dtype
            or shape is None
            or len(y.shape) != len(shape)
            or any(e is not None and e != d for e, d in zip(shape, y.shape, strict=True))
        ):
            return False
    return True


def _outer_reads(node: onnx.NodeProto) -> set[str]:
    """Names a node's subgraphs read (a superset: every input of every nested node)."""
    found: set[str] = set()
    for attr in node.attribute:
        for graph in [attr.g] if attr.type == onnx.AttributeProto.GRAPH else list(attr.graphs):
            for inner in graph.node:
                found |= set(inner.input) | _outer_reads(inner)
    return found


def _never_iterates(graph: onnx.GraphProto | onnx.FunctionProto) -> bool:
    """Whether a Loop with scan outputs, at any depth below ``graph``, runs no iteration
    whatever the inputs: its trip count a Constant 0 or its condition a Constant false."""
    constants = {
        n.output[0]: onnx.numpy_helper.to_array(n.attribute[0].t)
        for n in graph.node
        if n.op_type == "Constant" and n.attribute and n.attribute[0].name == "value"
    }
    for node in graph.node:
        if node.op_type == "Loop" and len(node.output) > max(len(node.input) - 2, 0):
            trip = constants.get(node.input[0]) if node.input and node.input[0] else None
            cond = constants.get(node.input[1]) if len(node.input) > 1 else None
            if (trip is not None and int(trip.reshape(-1)[0]) <= 0) or (
                cond is not None and not bool(cond.reshape(-1)[0])
            ):
                return True
        for attr in node.attribute:
            graphs = [attr.g] if attr.type == onnx.AttributeProto.GRAPH else list(attr.graphs)
            if any(_never_iterates(g) for g in graphs):
                return True
    return False


def ran_a_zero_trip_scan(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> bool:
    """Whether a main-graph Loop of ``model`` that has scan outputs ran no iteration on
    ``feeds`` (its trip count 0, or its condition false before the first): the shape of its
    empty scan outputs is not fixed by the spec, and what is computed from that shape (a
    later loop's trip count, an output's shape) is ORT's choice (docs/loops.md). A Loop at
    any depth that can never iterate counts too, a model-local function's included."""
    if _never_iterates(model.graph) or any(_never_iterates(f) for f in model.functions):
        return True
    loops = [
        n
        for n in model.graph.node
        if n.op_type == "Loop" and len(n.output) > max(len(n.input) - 2, 0)
    ]
    if not loops:
        return False
    probes = [name for n in loops for name in n.input[:2] if name]
    if not probes:
        return False
    # only the nodes the loops' trip counts and conditions need (ORT runs every node of a
    # graph, and the rest may fail)
    needed, kept = set(probes), []
    for node in reversed(model.graph.node):
        if needed & set(node.output):
            kept.append(node)
            needed |= set(node.input) | _outer_reads(node)
    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    del probe.graph.node[:]
    probe.graph.node.extend(reversed(kept))
    del probe.graph.output[:]
    del probe.graph.value_info[:]
    probe.graph.output.extend(onnx.helper.make_empty_tensor_value_info(n) for n in probes)
    try:
        sess = _ort_session(probe)
        wanted = {i.name for i in sess.get_inputs()}
        given = {k: v for k, v in feeds.items() if k in wanted}
        values = dict(zip(probes, sess.run(probes, given), strict=True))
    except Exception:
        return False
    for n in loops:
        trip = values.get(n.input[0]) if n.input[0] else None
        cond = values.get(n.input[1]) if len(n.input) > 1 and n.input[1] else None
        if (trip is not None and int(np.asarray(trip).reshape(-1)[0]) <= 0) or (
            cond is not None and not bool(np.asarray(cond).reshape(-1)[0])
        ):
            return True
    return False


def _same(a: Outcome, b: Outcome) -> bool:
    """Equal outcomes, up to the shapes of empty tensors."""
    d = compare(a, b)
    return d is None or d[1]


def judge(prog: Program) -> Verdict:
    """Optimizes ``prog`` and compares it with the original (see the module docstring)."""
    import seqpasses
    from seqpasses import SelfCheckError

    model = prog.model
    try:
        onnx.checker.check_model(model, full_check=True)
    except Exception as e:
        return Verdict("discard:check", str(e).splitlines()[0][:300])
    try:
        sess = _ort_session(model)
    except Exception as e:
        return Verdict("discard:ort-load", str(e).splitlines()[0][:300])
    names = [o.name for o in model.graph.output]
    before = [run_ort(sess, f, names) for f in prog.feeds]
    v = Verdict("ok", nodes_before=len(all_nodes(model)), seq_before=count_seq_ops(model))
    v.orig_fails = sum(1 for b in before if not b[0])
    blob = model.SerializeToString()
    try:
        out = seqpasses.optimize(model, strict_spec=prog.strict)
        assert isinstance(out, onnx.ModelProto)
    except seqpasses.BadInputError as e:
        v.kind, v.detail = "bad-input", f"BadInputError: {e}"
        return v
    except SelfCheckError as e:
        v.kind, v.detail = "selfcheck-error", f"SelfCheckError: {str(e).splitlines()[0][:400]}"
        return v
    except Exception as e:
        tb = traceback.extract_tb(e.__traceback__)
        at = f" at {Path(tb[-1].filename).name}:{tb[-1].lineno}" if tb else ""
        v.kind, v.detail = "crash", f"{type(e).__name__}: {str(e)[:300]}{at}"
        return v
    if model.SerializeToString() != blob:
        v.kind, v.detail = "input-modified", "optimize changed the model it was given"
        return v
    v.nodes_after = len(all_nodes(out))
    v.seq_after = count_seq_ops(out)
    try:
        onnx.checker.check_model(out, full_check=True)
    except Exception as e:
        v.kind, v.detail = "invalid-output", str(e).splitlines()[0][:400]
        return v
    if v.seq_after > v.seq_before:
        v.kind, v.detail = "more-sequence-ops", f"{v.seq_before} -> {v.seq_after}"
        return v
    out_names = [o.name for o in out.graph.output]
    if out_names != names:
        v.kind, v.detail = "outputs-changed", f"{names} -> {out_names}"
        return v
    try:
        osess = _ort_session(out)
    except Exception as e:
        v.kind, v.detail = "ort-load-output", str(e).splitlines()[0][:400]
        return v
    disagreements = 0
    zero_trips = 0
    zero_trip_detail = ""
    why = ""
    for k, (feeds, a) in enumerate(zip(prog.feeds, before, strict=True)):
        b = run_ort(osess, feeds, names)
        diff = compare(a, b)
        if diff is None:
            continue
        # ORT decides unless the reference evaluator (the spec) runs and disagrees with it on
        # the original. For the documented SplitToSequence case (scalar split, keepdims=0)
        # ORT decides where it runs the original, unless strict_spec; where ORT fails on the
        # original and the spec runs it, the spec decides. The shape of an empty scan output
        # of a zero-iteration Loop is left to ORT: the spec does not fix it when the body's
        # output shape is not static.
        if ran_a_zero_trip_scan(model, feeds):
            zero_trips += 1
            zero_trip_detail = f"set {k}: {diff[0]}"
            continue
        r = run_ref(model, feeds, names)
        documented = prog.quirk and not prog.strict and a[0]
        if diff[1]:
            if r[0] and compare(b, r) is None and compare(a, r) is not None and not documented:
                disagreements += 1
                why = "empty output shapes: ORT's differ from the spec's"
                continue
            if zero_trip_scan_outputs(out, a, b):
                zero_trips += 1
                zero_trip_detail = f"set {k}: {diff[0]}"
                continue
            v.kind, v.detail = "mismatch-ort-empty-shape", f"set {k}: {diff[0]}"
            return v
        ort_decides = not r[0] or _same(r, a) or documented
        if not ort_decides:
            if _same(b, r):
                disagreements += 1
                why = f"ORT {'runs' if a[0] else 'fails'} where the spec gives another result"
                continue
            v.kind = "mismatch-ref"
            v.detail = (
                f"set {k}: ONNX Runtime and the reference disagree on the original "
                f"({'runs' if a[0] else 'fails'} vs runs); the optimized model agrees with neither: "
                f"{b[1] if not b[0] else compare(b, r)[0]}"  # type: ignore[index]
            )
            return v
        if a[0] and b[0]:
            v.kind, v.detail = "mismatch-ort", f"set {k}: {diff[0]}"
        elif a[0]:
            v.kind, v.detail = "opt-fails-orig-runs-ort", f"set {k}: optimized: {b[1]}"
        else:
            v.kind, v.detail = "orig-fails-opt-runs-ort", f"set {k}: original fails: {a[1]}"
        return v
    if disagreements:
        v.kind = "ort-spec-disagreement"
        v.detail = f"{disagreements} input set(s); {why}; the optimized model follows the spec"
    elif zero_trips:
        v.kind = "zero-trip-scan-shape"
        v.detail = (
            f"{zero_trips} input set(s), e.g. {zero_trip_detail}: a zero-iteration scan output "
            "is [0, *proven element shape] after seqpasses, and what is computed from that shape "
            "follows it (docs/loops.md)"
        )
    return v


# ---------------------------------------------------------------- reference evaluator fixes
_PATCHED: list[type] | None = None


def _patched_reference_ops() -> list[type]:
    """Kernels for onnx.reference whose sequence handling departs from the spec (onnx 1.23).

    SequenceInsert at position == len inserted at the front, and divided by zero on an empty
    list; SequenceAt/SequenceErase did not check positions; SplitToSequence accepted split sizes
    that do not sum to the dim; SequenceMap failed on an empty list; Loop joined scan outputs of rank >= 2 with
    vstack (concatenating) and failed with no iteration; Optional wrapped its value in a list
    (so OptionalHasElement said true for an empty optional).
    """
    global _PATCHED
    if _PATCHED is not None:
        return _PATCHED
    from onnx.reference.op_run import OpRun
    from onnx.reference.ops.op_loop import Loop as _Loop
    from onnx.reference.ops.op_split_to_sequence import SplitToSequence as _SplitToSequence

    def _index(pos: Any, n: int, top: int) -> int:
        p = int(np.asarray(pos).reshape(()))
        if not -n <= p <= top:
            raise IndexError(f"position {p} out of range for a sequence of {n}")
        return p + n if p < 0 else p

    class SequenceInsert(OpRun):
        op_domain = ""

        def _run(self, S: Any, T: Any, ind: Any = None) -> tuple[Any]:
            seq = list(S)
            if ind is None:
                seq.append(T)
            else:
                seq.insert(_index(ind, len(seq), len(seq)), T)
            return (seq,)

    class SequenceErase(OpRun):
        op_domain = ""

        def _run(self, S: Any, ind: Any = None) -> tuple[Any]:
            seq = list(S)
            if not seq:
                raise IndexError("erase from an empty sequence")
            del seq[-1 if ind is None else _index(ind, len(seq), len(seq) - 1)]
            return (seq,)

    class SequenceAt(OpRun):
        op_domain = ""

        def _run(self, S: Any, ind: Any) -> tuple[Any]:
            return (S[_index(ind, len(S), len(S) - 1)],)

    class SequenceMap(OpRun):
        op_domain = ""

        def need_context(self) -> bool:
            return True  # the body may read outer-scope values

        def _run(
            self,
            input_sequence: Any,
            *extra: Any,
            context: Any = None,
            body: Any = None,
            attributes: Any = None,
        ) -> tuple[Any, ...]:
            body = self.body  # type: ignore[attr-defined]
            seqs = [input_sequence, *extra]
            n = len(input_sequence)
            nout = len(body.output_names)
            res: list[list[Any]] = [[] for _ in range(nout)]
            for i in range(n):
                feeds = dict(context or {})
                for name, v in zip(body.input_names, seqs, strict=True):
                    feeds[name] = v[i] if isinstance(v, list) else v
                for acc, r in zip(res, body.run(None, feeds, attributes=attributes), strict=True):
                    acc.append(r)
            return tuple(res)

    class SplitToSequence(_SplitToSequence):
        op_domain = ""

        def _run(self, mat: Any, split: Any = None, axis: int = 0, keepdims: int = 1) -> tuple[Any]:
            if split is not None:
                sp = np.asarray(split)
                if (sp < 0).any() or (sp.ndim == 0 and int(sp) == 0):
                    raise ValueError("split values must be positive")
                if sp.ndim == 1 and int(sp.sum()) != mat.shape[axis]:
                    raise ValueError("the split sizes do not sum to the dim")
            return super()._run(mat, split, axis=axis, keepdims=keepdims)

    class _Opt(list):  # type: ignore[type-arg]
        """An optional value: empty, or holding one value (a list passes the evaluator's checks)."""

    class Optional(OpRun):
        op_domain = ""

        def _run(self, x: Any = None, type: Any = None) -> tuple[Any]:
            return (_Opt([] if x is None else [x]),)

    class OptionalHasElement(OpRun):
        op_domain = ""

        def _run(self, x: Any = None) -> tuple[Any]:
            has = len(x) > 0 if isinstance(x, _Opt) else x is not None
            return (np.array(has),)

    class OptionalGetElement(OpRun):
        op_domain = ""

        def _run(self, x: Any) -> tuple[Any]:
            if isinstance(x, _Opt):
                if not x:
                    raise ValueError("OptionalGetElement on an empty optional")
                return (x[0],)
            return (x,)

    class Loop(_Loop):
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
            names_in = body.input_names
            state = dict.fromkeys(names_in)
            n_carried = len(names_in) - 2
            for name, val in zip(names_in[2:], args, strict=False):
                state[name] = val
            if context is not None:
                for a in context:
                    state[a] = context[a]
            cond_v = True if cond is None else bool(np.asarray(cond).reshape(()))
            scans: list[list[Any]] = [[] for _ in range(self.K)]
            it = 0
            carried = list(args[:n_carried])
            while cond_v and (M is None or it < int(M)):
                state[names_in[0]] = np.array(it, dtype=np.int64)
                state[names_in[1]] = np.array(cond_v)
                outs = self._run_body(state, attributes=attributes, bindings=bindings)  # type: ignore[attr-defined]
                cond_v = bool(np.asarray(outs[0]).reshape(()))
                carried = list(outs[1 : 1 + n_carried])
                for name, val in zip(names_in[2:], carried, strict=True):
                    state[name] = val
                for acc, val in zip(scans, outs[1 + n_carried :], strict=True):
                    acc.append(val)
                it += 1
            res: list[Any] = list(carried)
            graph = next(a.g for a in self.onnx_node.attribute if a.name == "body")
            for acc, out in zip(scans, graph.output[1 + n_carried :], strict=True):
                if acc:
                    res.append(np.stack(acc))
                else:
                    tt = out.type.tensor_type
                    dims = [d.dim_value if d.HasField("dim_value") else -1 for d in tt.shape.dim]
                    shape = (0, *dims) if all(v >= 0 for v in dims) else (0,)
                    res.append(np.empty(shape, dtype=helper.tensor_dtype_to_np_dtype(tt.elem_type)))
            return tuple(res)

    _PATCHED = [
        SequenceInsert,
        SequenceErase,
        SequenceAt,
        SequenceMap,
        SplitToSequence,
        Optional,
        OptionalHasElement,
        OptionalGetElement,
        Loop,
    ]
    return _PATCHED


# ====================================================================== campaign
def run_one(seed: int, index: int, timeout: int = 120) -> dict[str, Any]:
    """Generates and judges one program; a plain dict (it crosses process boundaries)."""

    def on_alarm(signum: int, frame: Any) -> None:
        raise TimeoutError(f"over {timeout}s")

    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(timeout)
    t0 = time.perf_counter()
    prog: Program | None = None
    try:
        prog = generate(seed, index)
        v = judge(prog)
    except TimeoutError as e:
        v = Verdict("timeout", str(e))
    except Exception as e:
        tb = traceback.extract_tb(e.__traceback__)
        where = f" at {Path(tb[-1].filename).name}:{tb[-1].lineno}" if tb else ""
        v = Verdict("discard:harness-error", f"{type(e).__name__}: {e}{where}")
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    res: dict[str, Any] = dataclasses.asdict(v)
    res.update(index=index, seed=seed, failed=v.failed, seconds=time.perf_counter() - t0)
    if prog is not None:
        res["features"] = sorted(prog.features)
        res["opset"] = prog.opset
        bloat = v.nodes_after > 2 * v.nodes_before > 0
        if v.failed or bloat:
            res["model"] = prog.model.SerializeToString()
            res["feeds"] = prog.feeds
    return res


def save_case(out: Path, name: str, res: dict[str, Any], line1: str, line2: str) -> Path:
    d = out / name
    if d.exists():
        shutil.rmtree(d)
    d.mkdir(parents=True)
    (d / "model.onnx").write_bytes(res["model"])
    for k, feeds in enumerate(res["feeds"]):
        np.savez(d / f"inputs_{k}.npz", **feeds)
    (d / "what.txt").write_text(f"{line1}\n{line2}\n")
    return d


def _run_star(args: tuple[int, int, int]) -> dict[str, Any]:
    return run_one(*args)


def campaign(
    seed: int, count: int, out: Path | None, jobs: int, start: int = 0, bloat_keep: int = 5
) -> dict[str, Any]:
    t0 = time.perf_counter()
    tasks = [(seed, i, 120) for i in range(start, start + count)]
    results: list[dict[str, Any]] = []
    if jobs > 1:
        ctx = multiprocessing.get_context("fork")
        with ctx.Pool(jobs) as pool:
            for res in pool.imap_unordered(_run_star, tasks, chunksize=4):
                results.append(res)
    else:
        results = [_run_star(t) for t in tasks]
    results.sort(key=lambda r: r["index"])
    kinds = collections.Counter(r["kind"] for r in results)
    failures = [r for r in results if r["failed"]]
    judged = [r for r in results if not r["kind"].startswith("discard")]
    bloat = [r for r in judged if r["nodes_after"] > 2 * r["nodes_before"] > 0]
    if out is not None:
        out.mkdir(parents=True, exist_ok=True)
        for r in failures:
            save_case(out, f"{r['kind']}-{seed}-{r['index']}", r, r["kind"], r["detail"])
        for r in bloat[:bloat_keep]:
            save_case(
                out,
                f"bloat-{seed}-{r['index']}",
                r,
                "bloat",
                f"nodes (all graphs) {r['nodes_before']} -> {r['nodes_after']}",
            )
    feats = collections.Counter(f for r in results for f in r.get("features", []))
    secs = time.perf_counter() - t0
    print(f"programs: {len(results)} (seed {seed}, {start}..{start + count - 1}) in {secs:.1f}s")
    discards = {k: n for k, n in kinds.items() if k.startswith("discard")}
    print(
        f"discarded: {sum(discards.values())} ({100 * sum(discards.values()) / max(len(results), 1):.2f}%) {discards}"
    )
    print(
        f"judged: {len(judged)}; ok: {kinds['ok']}; ort-spec-disagreement (accepted): {kinds['ort-spec-disagreement']}; "
        f"zero-trip-scan-shape (accepted, documented in docs/loops.md): {kinds['zero-trip-scan-shape']}"
    )
    why = collections.Counter(
        ("strict_spec: " if "strict_spec" in r.get("features", []) else "")
        + r["detail"].split("; ", 1)[-1]
        for r in judged
        if r["kind"] == "ort-spec-disagreement"
    )
    for k, n in why.most_common():
        print(f"  accepted: {n:5d}  {k}")
    print(f"failures: {len(failures)} ({100 * len(failures) / max(len(judged), 1):.2f}% of judged)")
    for k in FAILURE_KINDS:
        if kinds[k]:
            example = next(r for r in failures if r["kind"] == k)
            print(f"  {k:26s} {kinds[k]:5d}   e.g. #{example['index']}: {example['detail'][:110]}")
    allf = [r for r in judged if r["orig_fails"] == NSETS]
    print(
        f"originals failing on every input set: {len(allf)}; on some: {sum(1 for r in judged if r['orig_fails'])}"
    )
    nb = np.array([r["nodes_before"] for r in judged if r["nodes_after"]], dtype=float)
    na = np.array([r["nodes_after"] for r in judged if r["nodes_after"]], dtype=float)
    if len(nb):
        ratio = na / np.maximum(nb, 1)
        print(
            f"nodes (all graphs): before mean {nb.mean():.1f} median {np.median(nb):.0f} max {nb.max():.0f}; "
            f"after mean {na.mean():.1f} median {np.median(na):.0f}; after/before median {np.median(ratio):.2f} "
            f"p90 {np.quantile(ratio, 0.9):.2f} max {ratio.max():.2f}"
        )
        print(f"more than 2x the nodes: {len(bloat)} ({100 * len(bloat) / len(nb):.2f}%)")
    sb = sum(r["seq_before"] for r in judged)
    sa = sum(r["seq_after"] for r in judged if r["nodes_after"])
    print(f"sequence ops: {sb} before, {sa} after (where optimized)")
    print("coverage (programs using each):")
    keys = sorted(feats)
    line = ""
    for k in keys:
        item = f"{k}={feats[k]}"
        if len(line) + len(item) > 110:
            print("  " + line)
            line = ""
        line += item + "  "
    if line:
        print("  " + line)
    return {"results": results, "kinds": kinds, "features": feats}


def has_quirk(model: onnx.ModelProto) -> bool:
    """Whether a SplitToSequence has keepdims=0 and a scalar split (the documented case)."""
    shapes: dict[str, int] = {}
    for g in all_graphs(model):
        for t in g.initializer:
            shapes[t.name] = len(t.dims)
        for n in g.node:
            if n.op_type == "Constant":
                for a in n.attribute:
                    if a.name == "value":
                        shapes[n.output[0]] = len(a.t.dims)
                    elif a.name == "value_int":
                        shapes[n.output[0]] = 0
        for vi in [*g.input, *g.value_info]:
            if vi.type.HasField("tensor_type") and vi.type.tensor_type.HasField("shape"):
                shapes.setdefault(vi.name, len(vi.type.tensor_type.shape.dim))
    for n in all_nodes(model):
        keep = next((a.i for a in n.attribute if a.name == "keepdims"), 1)
        split = n.input[1] if len(n.input) > 1 else ""
        if n.op_type == "SplitToSequence" and keep == 0 and split and shapes.get(split, 0) == 0:
            return True
    return False


def load_case(path: Path, strict: bool = False) -> Program:
    """A saved case (model.onnx and inputs_<k>.npz, as in /work/shared/repros) as a Program."""
    model = onnx.load(str(path / "model.onnx"))
    feeds = []
    for f in sorted(path.glob("inputs_*.npz")):
        with np.load(f) as z:
            feeds.append({k: z[k] for k in z.files})
    opset = next((o.version for o in model.opset_import if o.domain in ("", "ai.onnx")), 0)
    return Program(-1, -1, opset, model, feeds, set(), strict, has_quirk(model))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--count", type=int, default=200)
    ap.add_argument("--start", type=int, default=0)
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--show", type=int, default=None, help="print program INDEX and its verdict")
    ap.add_argument("--judge", type=Path, nargs="*", help="judge saved cases (folders) instead")
    a = ap.parse_args(argv)
    if a.judge:
        bad = 0
        for path in a.judge:
            v = judge(load_case(path))
            bad += v.failed
            print(f"{path}: {v.kind}: {v.detail[:200]}")
        return 1 if bad else 0
    if a.show is not None:
        prog = generate(a.seed, a.show)
        print(onnx.printer.to_text(prog.model))
        print(f"strict_spec={prog.strict} features={sorted(prog.features)}")
        print(judge(prog))
        return 0
    res = campaign(a.seed, a.count, a.out, a.jobs, a.start)
    return 1 if any(r["failed"] for r in res["results"]) else 0


if __name__ == "__main__":
    sys.exit(main())

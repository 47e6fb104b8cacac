"""Dimension arithmetic: sums and products of dims that keep their names instead of dropping
them.

A dim is an ``int``, a named :class:`onnx_ir.SymbolicDim` or an unnamed one (unknown). What
seqpasses computes of named dims is written in one canonical form: a sum of terms, each a
whole factor times a product of names or calls (``N+M``, ``3*N``, ``B*S``,
``floor((H-1)/2)+1``, ``min(N,128)``), terms sorted by name, the constant last, so that the
same size is always spelled the same way and re-parsing what was written gives the same terms.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from contextvars import ContextVar

import onnx_ir as ir

__all__ = [
    "INT64_MAX",
    "Dim",
    "add_dims",
    "at_least",
    "bounded",
    "divide_dims",
    "floor_div",
    "multiply_dims",
    "opaque_labels",
    "scale_dim",
]

Dim = int | ir.SymbolicDim

_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _signed_parts(name: str) -> list[tuple[int, str]]:
    """``n-1+2*m`` -> ``[(1, "n"), (-1, "1"), (1, "2*m")]``: split at top-level signs."""
    parts: list[tuple[int, str]] = []
    depth, sign, start = 0, 1, 0
    for index, char in enumerate(name):
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif char in "+-" and depth == 0 and name[start:index].strip():
            parts.append((sign, name[start:index].strip()))
            sign, start = (1 if char == "+" else -1), index + 1
        elif char in "+-" and depth == 0:  # a leading sign
            sign, start = (sign if char == "+" else -sign), index + 1
    parts.append((sign, name[start:].strip()))
    return parts


_CALL = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\(.*\)$")


def _balanced(call: str) -> bool:
    """Whether ``f(...)``'s parentheses close only at its end (one call, not ``f(a)+g(b)``)."""
    depth = 0
    for index, char in enumerate(call):
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth == 0 and index != len(call) - 1:
                return False
        if depth < 0:
            return False
    return depth == 0


def _factors(part: str) -> list[str]:
    """``2*B*floor(H/2)`` -> ``["2", "B", "floor(H/2)"]``: split at top-level ``*``."""
    pieces: list[str] = []
    depth, start = 0, 0
    for index, char in enumerate(part):
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        elif char == "*" and depth == 0:
            pieces.append(part[start:index])
            start = index + 1
    pieces.append(part[start:])
    return pieces


def _term(part: str) -> tuple[int, str] | None:
    """A term's whole factor and its product of names, the names sorted (``S*2*B`` ->
    ``(2, "B*S")``): each factor a number, a name, a parenthesized name (``(s0 - 1)``) or a
    call (``floor((H-1)/2)``, ``min(N,128)``); None when ``part`` is not such a term."""
    factor, names = 1, []
    for piece in _factors(part):
        if piece.isdigit():
            factor *= int(piece)
        elif _NAME.match(piece) or (
            (_CALL.match(piece) or piece.startswith("(")) and _balanced(piece)
        ):
            names.append(piece)
        else:
            return None
    return (factor, "*".join(sorted(names))) if names else None


def _parse(name: str) -> Counter[str] | None:
    """Parse a sum of terms we may have written earlier (:func:`_term`: ``3*N``, ``B*S``,
    ``floor((H-1)/2)``); ``None`` when not one."""
    terms: Counter[str] = Counter()
    for sign, part in _signed_parts(name):
        if part.isdigit():
            terms[""] += sign * int(part)
            continue
        if sign < 0 and not part.startswith(_FUNCTIONS):  # ``seq-len`` is one name
            return None
        found = _term(part)
        if found is None:
            return None
        terms[found[1]] += sign * found[0]
    return terms


def multiply_dims(a: Dim, b: Dim) -> Dim:
    """``a * b``: numbers, a number times a sum (``3*N+3``), or two sums multiplied out
    (``(H+1)*(W+1)`` is ``H*W+H+W+1``, at most :data:`MAX_TERMS` terms); unnamed (unknown)
    for anything else, or past an int64."""
    if isinstance(a, int) and isinstance(b, int):
        return bounded(a * b)
    if isinstance(a, int) or isinstance(b, int):
        number, other = (a, b) if isinstance(a, int) else (b, a)
        assert isinstance(number, int)
        return scale_dim(other, number)
    first, second = _terms_of(a), _terms_of(b)
    if first is None or second is None:
        return ir.SymbolicDim(None)
    product: Counter[str] = Counter()
    for left, j in first.items():
        for right, k in second.items():
            if j and k:
                product[_canonical(f"{left}*{right}")] += j * k
    if len([k for k in product.values() if k]) > MAX_TERMS:
        return ir.SymbolicDim(None)
    return _format(product)


MAX_TERMS = 8
"""The most terms a product multiplied out is written with; a longer one is not named."""


def divide_dims(a: Dim, b: Dim) -> Dim:
    """``a / b`` where ``b`` divides ``a`` exactly as terms (``4*B*N / (2*B)`` is ``2*N``):
    numbers, a sum by a number that divides each of its factors, or single terms whose names
    hold ``b``'s; unnamed (unknown) otherwise."""
    if isinstance(a, int) and isinstance(b, int):
        return a // b if b and a % b == 0 else ir.SymbolicDim(None)
    if isinstance(b, int):  # (a sum whose every factor it divides: (4*H+4)/2)
        terms = _terms_of(a)
        if b <= 0 or terms is None or any(k % b for k in terms.values()):
            return ir.SymbolicDim(None)
        return _format(Counter({name: k // b for name, k in terms.items()}))
    top = (a, "") if isinstance(a, int) else _single(a)
    bottom = _single(b)
    if top is None or bottom is None or not bottom[0] or top[0] % bottom[0]:
        return ir.SymbolicDim(None)
    names = Counter(n for n in top[1].split("*") if n)
    names.subtract(Counter(n for n in bottom[1].split("*") if n))
    if any(k < 0 for k in names.values()):
        return ir.SymbolicDim(None)
    left = _canonical("*".join(names.elements()))
    return _format(Counter({left: top[0] // bottom[0]}))


def _single(dim: Dim) -> tuple[int, str] | None:
    """``(factor, names)`` of a dim that is one term (``4*B*N``), else None."""
    terms = _terms_of(dim)
    if terms is None or terms.get("", 0) or len([k for k in terms.values() if k]) != 1:
        return None
    ((names, factor),) = [(n, k) for n, k in terms.items() if k]
    return factor, names


def _canonical(names: str) -> str:
    """Names of a product in the order :func:`_term` reads them back (``""``: none)."""
    return "*".join(sorted(n for n in names.split("*") if n))


_FUNCTIONS = ("floor(", "ceil(", "min(")
"""The calls seqpasses writes in dims: a term of one of them may be subtracted."""


def floor_div(dim: Dim, divisor: int, *, ceil: bool = False) -> Dim:
    """``floor(dim / divisor)`` (``ceil``: rounded up) of a dim, which is never negative:
    a number, a sum whose every term the divisor divides (``(2*N+4)/2`` is ``N+2``), or the
    call ``floor(N/2)``, ``floor((H-1)/2)``; unnamed when ``dim`` is unknown."""
    if divisor <= 0:
        return ir.SymbolicDim(None)
    if isinstance(dim, int):
        return -(-dim // divisor) if ceil else dim // divisor
    if divisor == 1:
        return dim
    terms = _terms_of(dim)
    if terms is None:
        return ir.SymbolicDim(None)
    if all(k % divisor == 0 for k in terms.values()):
        return _format(Counter({name: k // divisor for name, k in terms.items()}))
    constant = terms.get("", 0)
    if constant % divisor == 0 and constant:  # floor((X-4)/2) = floor(X/2)-2
        rest = Counter({name: k for name, k in terms.items() if name})
        return add_dims([floor_div(_format(rest), divisor, ceil=ceil), constant // divisor])
    text = _format(Counter(terms))
    if not isinstance(text, ir.SymbolicDim) or text.value is None:
        return ir.SymbolicDim(None)
    inner = text.value
    single = len([k for k in terms.values() if k]) == 1 and list(terms.values()).count(1) == 1
    if not (single and "" not in terms):
        inner = f"({inner})"
    return ir.SymbolicDim(f"{'ceil' if ceil else 'floor'}({inner}/{divisor})")


_OPAQUE: ContextVar[frozenset[str]] = ContextVar("seqpasses_opaque_dims", default=frozenset())


def opaque_labels(labels: Iterable[str]) -> None:
    """Take the dims a model's inputs are declared with as labels: one whose name reads as
    arithmetic (``T+2``) is whatever size a run gives, not two more than a ``T``, so each is
    one name here (``(T+2)``), never a sum with a constant to reason from. Set by the loading
    of every model, for the run that follows it."""
    _OPAQUE.set(frozenset(label for label in labels if not _NAME.match(label)))


def _terms_of(dim: Dim) -> Counter[str] | None:
    if isinstance(dim, int):
        return Counter({"": dim})
    if dim.value is None:
        return None
    if dim.value in _OPAQUE.get():
        return Counter({f"({dim.value})": 1})
    parsed = _parse(dim.value)
    if parsed is not None:
        return parsed
    # An atomic name with operators in it (``s0 - 1``): keep it whole, in parentheses.
    return Counter({f"({dim.value})": 1})


def _format(terms: Counter[str]) -> Dim:
    constant = terms.pop("", 0)
    parts = [
        (k, name if abs(k) == 1 else f"{abs(k)}*{name}") for name, k in sorted(terms.items()) if k
    ]
    if not parts:
        return bounded(constant)
    if abs(constant) > INT64_MAX or any(abs(k) > INT64_MAX for k, _ in parts):
        return ir.SymbolicDim(None)
    if constant:
        parts.append((constant, str(abs(constant))))
    text = ("-" if parts[0][0] < 0 else "") + parts[0][1]
    text += "".join(("-" if k < 0 else "+") + part for k, part in parts[1:])
    return ir.SymbolicDim(text)


INT64_MAX = 2**63 - 1
"""The largest dim ONNX can write: a sum or product beyond it is a dim seqpasses does not know."""


def bounded(dim: int) -> Dim:
    """``dim``, or unknown when it does not fit a dim (an int64)."""
    return dim if -INT64_MAX <= dim <= INT64_MAX else ir.SymbolicDim(None)


def add_dims(dims: list[Dim]) -> Dim:
    """The sum of ``dims``; unnamed (unknown) when any of them is unknown, or when it
    overflows an int64."""
    if all(isinstance(d, int) for d in dims):
        return bounded(sum(dims))  # type: ignore[arg-type]
    total: Counter[str] = Counter()
    for dim in dims:
        terms = _terms_of(dim)
        if terms is None:
            return ir.SymbolicDim(None)
        total.update(terms)
    return _format(total)


def scale_dim(dim: Dim, factor: int) -> Dim:
    """``factor`` times ``dim`` (``3*N``); unnamed when ``dim`` is unknown or it overflows."""
    if isinstance(dim, int):
        return bounded(dim * factor)
    terms = _terms_of(dim)
    if terms is None:
        return ir.SymbolicDim(None)
    return _format(Counter({name: k * factor for name, k in terms.items()}))


def at_least(dim: Dim, least: int) -> bool:
    """Whether ``dim`` is ``least`` or more whatever its names are: a number that is, or a sum
    whose terms all count up (a dim, and what seqpasses writes of dims, is never negative)
    with a constant of ``least`` or more (``T+2`` is at least 2)."""
    if isinstance(dim, int):
        return dim >= least
    terms = _terms_of(dim)
    if terms is None or any(k < 0 for name, k in terms.items() if name):
        return False
    return terms.get("", 0) >= least

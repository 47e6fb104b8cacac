"""ONNX's position rules, checked against a direct reading of the spec."""

from __future__ import annotations

import onnx_ir as ir
import pytest
from hypothesis import given
from hypothesis import strategies as st

from seqpasses.core.sequence import (
    PositionError,
    StaticSequence,
    normalize_at_position,
    normalize_insert_position,
)


def _values(n: int) -> tuple[ir.Value, ...]:
    return tuple(ir.Value(name=f"v{i}") for i in range(n))


@given(st.integers(0, 6), st.one_of(st.none(), st.integers(-9, 9)))
def test_insert_matches_the_spec(n: int, position: int | None) -> None:
    values = _values(n)
    new = ir.Value(name="new")
    seq = StaticSequence(values, ir.DataType.FLOAT)
    if position is not None and not -n <= position <= n:
        with pytest.raises(PositionError):
            seq.insert(position, new)
        return
    expected = list(values)
    index = n if position is None else (position + n if position < 0 else position)
    expected.insert(index, new)
    assert seq.insert(position, new).elements == tuple(expected)


@given(st.integers(0, 6), st.one_of(st.none(), st.integers(-9, 9)))
def test_erase_matches_the_spec(n: int, position: int | None) -> None:
    values = _values(n)
    seq = StaticSequence(values, ir.DataType.FLOAT)
    effective = n - 1 if position is None else position
    if n == 0 or not -n <= effective <= n - 1:
        with pytest.raises(PositionError):
            seq.erase(position)
        return
    expected = list(values)
    del expected[effective]
    assert seq.erase(position).elements == tuple(expected)


def test_boundaries() -> None:
    assert normalize_insert_position(3, 3) == 3  # position == length appends
    assert normalize_insert_position(-3, 3) == 0
    assert normalize_at_position(-1, 3) == 2
    with pytest.raises(PositionError):
        normalize_at_position(3, 3)  # erase/at do not accept position == length
    with pytest.raises(PositionError):
        normalize_at_position(None, 0)  # erasing the last of nothing

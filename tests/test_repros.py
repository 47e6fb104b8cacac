"""The reduced failures an independent generator found (``../shared/repros/``, skipped when
absent): each one, judged as the generator judges it (tests/spec_programs.py) on ONNX
Runtime and onnx.reference, on every input set, run-time failures counted as outputs."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import SHARED
from spec_programs import judge, load_case

REPROS = SHARED / "repros"
CASES = sorted(p for p in REPROS.glob("*") if (p / "model.onnx").is_file())


@pytest.mark.skipif(not CASES, reason="no ../shared/repros beside the checkout")
@pytest.mark.parametrize("folder", CASES, ids=[p.name for p in CASES])
def test_repro(folder: Path) -> None:
    verdict = judge(load_case(folder))
    assert not verdict.failed, f"{verdict.kind}: {verdict.detail}"

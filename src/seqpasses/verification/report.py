"""The result of a differential check: what each evaluator compared, or why it compared
nothing, and the first difference found (see :func:`seqpasses.verification.verify`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import onnx

__all__ = ["EngineResult", "VerifyReport", "scan_outputs"]


def scan_outputs(model: onnx.ModelProto) -> frozenset[str]:
    """The graph outputs of ``model`` that are a main-graph ``Loop``'s scan outputs (directly
    or through ``Identity``)."""
    made = {out: node for node in model.graph.node for out in node.output}
    found: set[str] = set()
    for output in model.graph.output:
        name, node = output.name, made.get(output.name)
        while node is not None and node.op_type == "Identity" and node.input:
            name, node = node.input[0], made.get(node.input[0])
        if (
            node is not None
            and node.op_type == "Loop"
            and node.domain in ("", "ai.onnx")
            and list(node.output).index(name) >= len(node.input) - 2
        ):
            found.add(output.name)
    return frozenset(found)


@dataclass
class EngineResult:
    """What one evaluator compared: ``compared`` input sets run on both models, or ``why``
    it compared none."""

    name: str
    compared: int = 0
    original_failed: int = 0  # input sets the original failed on (not comparisons)
    why: str = ""
    seconds: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "engine": self.name,
            "compared": self.compared,
            "original_failed": self.original_failed,
            "why": self.why,
            "seconds": round(self.seconds, 3),
        }


@dataclass
class VerifyReport:
    """The result of :func:`verify`.

    ``ok``: some evaluator compared outputs and none differed. ``verified``: some evaluator
    compared at least one input set. ``mismatch``: the first difference found.
    """

    mismatch: str = ""
    results: list[EngineResult] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    details: list[str] = field(default_factory=list)  # what -v shows: errors in full
    # the optimized model's graph outputs that are a main-graph Loop's scan outputs
    scans: frozenset[str] = frozenset()

    def tolerates(self, name: str, before: Any, after: Any) -> bool:
        """Whether ``before`` and ``after`` differ only as docs/loops.md says a scan output
        after zero iterations may: both empty, of one dtype, 0 long, the shape beyond not
        fixed by the spec (ONNX Runtime makes it from what the body declares: ``(0,)`` where
        nothing, ``[0, *E]`` once seqpasses proves the element shape ``E``). Noted once."""
        if name not in self.scans or isinstance(before, list) or isinstance(after, list):
            return False
        a, b = np.asarray(before), np.asarray(after)
        if a.size or b.size or a.dtype != b.dtype or not a.ndim or not b.ndim:
            return False
        if a.shape[0] != 0 or b.shape[0] != 0:
            return False
        note = (
            f"{name}: a scan output after zero iterations, {a.shape} before and {b.shape} "
            "after: both empty; its shape beyond the 0 is what the body declares "
            "(docs/loops.md)"
        )
        if note not in self.notes:
            self.notes.append(note)
        return True

    @property
    def verified(self) -> bool:
        return any(r.compared for r in self.results)

    @property
    def ok(self) -> bool:
        return not self.mismatch and self.verified

    @property
    def engines(self) -> list[str]:
        """The evaluators that compared at least one input set."""
        return [r.name for r in self.results if r.compared]

    @property
    def runs(self) -> int:
        return max((r.compared for r in self.results), default=0)

    @property
    def status(self) -> str:
        """``mismatch``, ``verified`` (every evaluator compared), ``partial`` or
        ``not verified``."""
        if self.mismatch:
            return "mismatch"
        if not self.verified:
            return "not verified"
        return "verified" if all(r.compared for r in self.results) else "partial"

    def __str__(self) -> str:
        if self.mismatch:
            return f"MISMATCH: {self.mismatch}"
        left_out = "; ".join(f"{r.name} {r.why}" for r in self.results if not r.compared)
        if not self.verified:
            return f"not verified: {left_out or 'no evaluator'}"
        done = ", ".join(f"{r.name} ({r.compared} run(s))" for r in self.results if r.compared)
        return f"verified on {done}: outputs agree" + (
            f"; not compared: {left_out}" if left_out else ""
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "status": self.status,
            "result": str(self),
            "mismatch": self.mismatch or None,
            "engines": [r.as_dict() for r in self.results],
            "notes": list(self.notes),
            "details": list(self.details),
        }

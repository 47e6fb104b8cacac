"""Which models tract runs before and after seqpasses, with the original's results
(docs/backends.md's tract table).

Usage (from the repository root): pip install -e ".[backends]" && python scripts/tract_table.py

For every model under sample_models/ whose graph inputs and outputs are tensors, it loads and
runs the original and the output of ``seqpasses optimize --inline-functions`` with tract, on
the stored PyTorch inputs (else inputs drawn until ONNX Runtime runs the original), and
compares tract's results with ONNX Runtime's on the original. One Markdown row each.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import tract

import seqpasses
from seqpasses.verification import inputs_that_run


def verdict(path: Path, feeds: dict[str, np.ndarray] | None, expected: list[np.ndarray]) -> str:
    """'runs' (with the original's results), 'loads' (no inputs it runs on), or why not."""
    try:
        runnable = tract.onnx().load(str(path)).into_model().into_runnable()
        if feeds is None:
            return "loads"
        names = [i.name for i in onnx.load(path, load_external_data=False).graph.input]
        got = [t.to_numpy() for t in runnable.run([feeds[n] for n in names if n in feeds])]
    except Exception as error:
        return "no: " + (str(error).strip().splitlines() or [type(error).__name__])[0][:90]
    for want, have in zip(expected, got, strict=True):
        if want.shape != have.shape or not np.allclose(want, have, rtol=1e-4, atol=1e-5):
            return "WRONG RESULT"
    return "runs"


def main() -> int:
    rows, before_ok, after_ok = [], 0, 0
    with tempfile.TemporaryDirectory() as tmp:
        for path in sorted(Path("sample_models").rglob("*.onnx")):
            model = onnx.load(path)
            values = (*model.graph.input, *model.graph.output)
            if not all(v.type.HasField("tensor_type") for v in values):
                continue
            feeds = inputs_that_run(path)
            expected: list[np.ndarray] = []
            if feeds is not None:
                session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
                expected = [np.asarray(r) for r in session.run(None, feeds)]
            out = Path(tmp) / "out.onnx"
            onnx.save(seqpasses.optimize(model, inline_functions=True), out)
            cells = [verdict(path, feeds, expected), verdict(out, feeds, expected)]
            before_ok += not cells[0].startswith(("no", "WRONG"))
            after_ok += not cells[1].startswith(("no", "WRONG"))
            name = path.relative_to("sample_models").as_posix()
            rows.append(f"| {name} | {cells[0]} | {cells[1]} |")
    print("| model | before | after, --inline-functions |")
    print("|---|---|---|")
    print("\n".join(rows))
    print(f"| **{len(rows)} models** | **{before_ok} run** | **{after_ok} run** |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

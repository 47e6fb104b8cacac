"""docs/exports.md's table of the models from the wild: what seqpasses does with each, how fast.

Usage (from the repository root): python scripts/wild_table.py

For every model in sample_models/wild/: sequence ops before -> after, If nodes before -> after,
what stays or why the model is written unchanged, seqpasses' time, --check on the stored
input sets, and ONNX Runtime's latency before and after (one thread, median of 200 runs on the
first stored input set).
"""

from __future__ import annotations

import statistics
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort

import seqpasses

WILD = Path("sample_models") / "wild"


def latency(model: onnx.ModelProto, feeds: dict[str, np.ndarray], runs: int = 200) -> float:
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )
    for _ in range(10):
        session.run(None, feeds)
    samples = []
    for _ in range(runs):
        start = time.perf_counter()
        session.run(None, feeds)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def main() -> int:
    print(
        "| model | sequence ops | If | stays / note | seqpasses | --check on the stored inputs "
        "| ONNX Runtime latency before → after |"
    )
    print("|---|---|---|---|---|---|---|")
    for path in sorted(WILD.glob("*.onnx")):
        model = onnx.load(path)
        report = seqpasses.Report()
        start = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            optimized = seqpasses.optimize(model, report=report)
        seconds = time.perf_counter() - start
        before, after = seqpasses.count_ops(model), seqpasses.count_ops(optimized)
        feeds = seqpasses.load_inputs(path.with_suffix(".npz"))
        note = report.unchanged or ("; ".join(sorted({x.detail for x in report.left})) or "—")
        if report.warnings:
            note = "checker: " + report.warnings[0].split("checker says: ")[1].split(";")[0]
        cells: list[Any] = [
            path.name,
            f"{report.sequence_ops_before} → {report.sequence_ops_after}",
            f"{before['If']} → {after['If']}",
            note,
            f"{seconds:.2f} s",
        ]
        if report.unchanged:
            cells += ["(unchanged)", "(unchanged)"]
        else:
            check = seqpasses.verify(model, optimized, inputs=feeds)
            cells.append(str(check.status))
            a, b = latency(model, feeds[0]), latency(optimized, feeds[0])
            cells.append(f"{a * 1e3:.3f} → {b * 1e3:.3f} ms")
        print("| " + " | ".join(str(c) for c in cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())

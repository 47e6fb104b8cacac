"""README's table of results: the sequence ops seqpasses removes from each set of sample models.

Usage: python scripts/summary_table.py           one row per set of sample models
       python scripts/summary_table.py --each    one row per model at the top of sample_models/

No torch and no extras: it optimizes every model under sample_models/ in memory, as
``seqpasses optimize`` does, and prints a Markdown table. Whether each result still
computes what the original did is checked by the tests (tests/test_torch_exports.py,
tests/test_wild.py, tests/test_rules.py), not here.
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import seqpasses

SAMPLES = Path(__file__).resolve().parent.parent / "sample_models"

SETS = [
    ("hand-written (`sample_models/*.onnx`)", "", "*.onnx"),
    ("PyTorch, TorchScript exporter (`torch/ts*`)", "torch", "ts*.onnx"),
    ("PyTorch, dynamo exporter (`torch/dynamo_*`)", "torch", "dynamo_*.onnx"),
    ("from the wild (`wild/`)", "wild", "*.onnx"),
    ("tf2onnx, ragged `map_fn` (`tf2onnx/`)", "tf2onnx", "*.onnx"),
]


def _report(path: Path) -> seqpasses.Report:
    report = seqpasses.Report()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", seqpasses.InputWarning)
        seqpasses.optimize(path, report=report)
    return report


def row(title: str, paths: list[Path]) -> str:
    holding = left_in = before = after = 0
    for path in paths:
        report = _report(path)
        before += report.sequence_ops_before
        after += report.sequence_ops_after
        holding += report.sequence_ops_before > 0
        left_in += report.sequence_ops_after > 0
    return f"| {title} | {len(paths)} | {holding} | {before} → {after} | {left_in} |"


def each() -> int:
    print("| model | sequence ops before → after | ops after (all graphs, `Constant` left out) |")
    print("|---|---|---|")
    for path in sorted(SAMPLES.glob("*.onnx")):
        report = _report(path)
        ops = ", ".join(
            f"{op}\u00d7{n}" for op, n in sorted(report.ops_after.items()) if op != "Constant" and n
        )
        print(
            f"| `{path.name}` | {report.sequence_ops_before} → {report.sequence_ops_after} "
            f"| {ops} |"
        )
    return 0


def main(argv: list[str]) -> int:
    if argv == ["--each"]:
        return each()
    print("| models | count | with sequence ops | sequence ops before → after | with any left |")
    print("|---|---|---|---|---|")
    for title, folder, pattern in SETS:
        print(row(title, sorted((SAMPLES / folder).glob(pattern))))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

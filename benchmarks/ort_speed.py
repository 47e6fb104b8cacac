"""How fast ONNX Runtime runs what seqpasses writes, against the model it was given (the
baseline, run in the same process, paired).

    python benchmarks/ort_speed.py [MODEL.onnx | FOLDER ...] [--runs N] [--floor 0.95]

Without arguments: every model under ``sample_models/``. For each model that seqpasses
changes: both are loaded in ONNX Runtime (CPU, one thread, every graph optimization on, as
a user runs them) and fed the same inputs (the first set stored beside the model, else
seeded random ones it runs on); the two sessions are run in alternation ``--runs`` times
after a warm-up, and the table gives each one's median and the speed-up, input median /
output median (above 1: the output runs faster). Rows below ``--floor`` are marked, and the
exit status is 1 when there is one. Median of paired alternating runs, so that a machine
busy for a moment slows both alike.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings
from pathlib import Path
from typing import Any

import onnx
import onnxruntime as ort

import seqpasses
from seqpasses.verification import inputs_that_run


def _session(model: onnx.ModelProto) -> ort.InferenceSession:
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    return ort.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )


def _paired(
    before: ort.InferenceSession, after: ort.InferenceSession, feeds: dict[str, Any], runs: int
) -> tuple[float, float]:
    for _ in range(max(3, runs // 10)):
        before.run(None, feeds)
        after.run(None, feeds)
    times: tuple[list[float], list[float]] = ([], [])
    for i in range(runs):
        order = (0, 1) if i % 2 == 0 else (1, 0)
        for k in order:
            session = before if k == 0 else after
            start = time.perf_counter()
            session.run(None, feeds)
            times[k].append(time.perf_counter() - start)
    return statistics.median(times[0]), statistics.median(times[1])


def _models(arguments: list[str]) -> list[Path]:
    found: list[Path] = []
    for argument in arguments or ["sample_models"]:
        path = Path(argument)
        found += sorted(path.rglob("*.onnx")) if path.is_dir() else [path]
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("models", nargs="*")
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--floor", type=float, default=0.95)
    args = parser.parse_args(argv)
    print("| model | sequence ops | input | output | speed-up |")
    print("|---|---|---|---|---|")
    ratios: list[float] = []
    below: list[str] = []
    for path in _models(args.models):
        model = onnx.load(path)
        report = seqpasses.Report()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            optimized = seqpasses.optimize(model, report=report)
        if report.unchanged:
            continue
        feeds = inputs_that_run(path)
        if feeds is None:
            print(f"| {path} | | (no inputs it runs on) | | |")
            continue
        try:
            before, after = _session(model), _session(optimized)
        except Exception as error:  # (a model ONNX Runtime cannot load is reported)
            print(f"| {path} | | ONNX Runtime: {str(error).splitlines()[0][:60]} | | |")
            continue
        first, second = _paired(before, after, feeds, args.runs)
        ratio = first / second
        ratios.append(ratio)
        mark = " **below**" if ratio < args.floor else ""
        if mark:
            below.append(str(path))
        print(
            f"| {path} | {report.sequence_ops_before} → {report.sequence_ops_after} "
            f"| {first * 1e6:.0f} µs | {second * 1e6:.0f} µs | {ratio:.2f}x{mark} |"
        )
    if ratios:
        geomean = statistics.geometric_mean(ratios)
        print(
            f"\n{len(ratios)} models: geometric mean {geomean:.2f}x, lowest {min(ratios):.2f}x, "
            f"highest {max(ratios):.2f}x; below {args.floor}x: {len(below)}"
        )
    for name in below:
        print(f"below {args.floor}x: {name}")
    return 1 if below else 0


if __name__ == "__main__":
    sys.exit(main())

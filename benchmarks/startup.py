"""How long the command line takes to answer before it does any work, against Python itself.

    python benchmarks/startup.py [--runs 5]

Prints the median of ``--runs`` runs of ``seqpasses --version``, ``seqpasses --help``,
``seqpasses optimize --help`` and a usage error, beside ``python -c pass`` (the floor), and
their ratio to it. The CLI parses its arguments before it imports onnx, onnx_ir, numpy or
onnxruntime, so none of these should take much longer than Python's own start.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time


def _median(command: list[str], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(command, capture_output=True, check=False)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    runs = parser.parse_args().runs
    floor = _median([sys.executable, "-c", "pass"], runs)
    cli = [sys.executable, "-m", "seqpasses"]
    print(f"{'python -c pass':32} {floor * 1000:7.0f} ms")
    for label, args in (
        ("seqpasses --version", ["--version"]),
        ("seqpasses --help", ["--help"]),
        ("seqpasses optimize --help", ["optimize", "--help"]),
        ("seqpasses optimize (usage error)", ["optimize"]),
    ):
        took = _median([*cli, *args], runs)
        print(f"{label:32} {took * 1000:7.0f} ms  {took / floor:5.1f}x python")


if __name__ == "__main__":
    main()

"""How long the command line takes to answer before it does any work, against Python itself,
and how long a small model takes, against importing onnx_ir.

    python benchmarks/startup.py [--runs 5]

Prints the median of ``--runs`` runs of ``seqpasses --version``, ``seqpasses --help``,
``seqpasses optimize --help`` and a usage error, beside ``python -c pass`` (the floor), and
their ratio to it. The CLI parses its arguments before it imports onnx, onnx_ir, numpy or
onnxruntime, so none of these should take much longer than Python's own start.

Then ``seqpasses optimize`` of a 4-node model (``sample_models/unbind_stack.onnx``) beside
``python -c "import onnx_ir"`` (which imports onnx, numpy and ml_dtypes: most of the time),
the runs alternating: what seqpasses adds on top of the library it builds on (target: at
most 1.3x). ``--check`` (both evaluators, ONNX Runtime's import) is apart.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


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
    model = Path(__file__).resolve().parent.parent / "sample_models" / "unbind_stack.onnx"
    with tempfile.TemporaryDirectory() as folder:
        out = str(Path(folder) / "out.onnx")
        base = [sys.executable, "-c", "import onnx_ir"]
        small = [*cli, "optimize", str(model), "-o", out, "-q"]
        checked = [*small, "--check"]
        times: dict[str, list[float]] = {"base": [], "small": [], "checked": []}
        for _ in range(max(runs, 7)):  # (alternating: the machine's drift hits all alike)
            for key, command in (("base", base), ("small", small), ("checked", checked)):
                times[key].append(_median(command, 1))
    base_s = statistics.median(times["base"])
    label = 'python -c "import onnx_ir"'
    print(f"{label:32} {base_s * 1000:7.0f} ms")
    for key, label in (("small", "optimize, 4 nodes"), ("checked", "optimize --check, 4 nodes")):
        took = statistics.median(times[key])
        print(f"{label:32} {took * 1000:7.0f} ms  {took / base_s:5.2f}x import onnx_ir")


if __name__ == "__main__":
    main()

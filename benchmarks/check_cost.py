"""What ``--check`` costs on real models, against what ONNX Runtime needs to load and run the
original and the optimized model once (the baseline, measured in the same run).

    python benchmarks/check_cost.py MODEL.onnx [...] [--src PATH]

For each model: ``seqpasses optimize`` without and with ``--check`` (child processes, so that
each pays its own start-up, as a user does), and, in this process, ONNX Runtime creating a
session for the original and for the optimized model and running each once on the same
random inputs. It prints the seconds and the check's cost, ``(with - without) / baseline``
(the issue's target: at most 3x). ``--src`` runs another checkout's code (its ``src``
folder) for a before/after comparison in one run. scripts/export_check_models.py makes the
models it was measured on.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort


def _cli(model: Path, out: Path, src: str | None, *extra: str) -> tuple[float, int]:
    env = dict(os.environ)
    if src:
        env["PYTHONPATH"] = src
    command = [sys.executable, "-m", "seqpasses", "optimize", str(model), "-o", str(out), "-q"]
    start = time.perf_counter()
    done = subprocess.run([*command, *extra], env=env, capture_output=True, check=False)
    return time.perf_counter() - start, done.returncode


def _feeds(model: onnx.ModelProto) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    feeds = {}
    for value in model.graph.input:
        dims = [d.dim_value or 1 for d in value.type.tensor_type.shape.dim]
        dtype = onnx.helper.tensor_dtype_to_np_dtype(value.type.tensor_type.elem_type)
        feeds[value.name] = rng.standard_normal(dims).astype(dtype)
    return feeds


def _ort_once(path: Path, feeds: dict[str, np.ndarray]) -> float:
    options = ort.SessionOptions()
    options.log_severity_level = 4
    start = time.perf_counter()
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    session.run(None, feeds)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("models", nargs="+", type=Path)
    parser.add_argument("--src", default=None, help="another checkout's src folder")
    args = parser.parse_args()
    print("| model | optimize | with --check | ORT, both models once | check cost |")
    print("|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as folder:
        for model in args.models:
            out = Path(folder) / model.name
            plain, code = _cli(model, out, args.src)
            checked, check_code = _cli(model, out, args.src, "--check")
            proto = onnx.load(model, load_external_data=False)
            feeds = _feeds(proto)
            baseline = _ort_once(model, feeds) + _ort_once(out, feeds)
            cost = (checked - plain) / baseline
            print(
                f"| {model.stem} | {plain:.1f} s (exit {code}) | {checked:.1f} s "
                f"(exit {check_code}) | {baseline:.2f} s | {cost:.1f}x |",
                flush=True,
            )


if __name__ == "__main__":
    main()

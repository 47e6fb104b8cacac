"""``seqpasses shapes`` against ONNX Runtime's ``symbolic_shape_infer``, as a script calls each
(a process per model), and their inference alone (in this process), on the same models in
the same run.

Usage (from the repository root):
    python benchmarks/shapes_speed.py [MODEL_OR_DIR ...] [--runs 5]

(default: ``sample_models/vision``). Per model, best of ``--runs``, the two tools alternating:

- the command: ``seqpasses shapes M -o OUT`` (the console script) and ``python -m
  onnxruntime.tools.symbolic_shape_infer --input M --output OUT --auto_merge``, wall time of
  the process (start-up included: both import onnx and sympy);
- the inference alone: ``seqpasses.infer_shapes(model)`` and
  ``SymbolicShapeInference.infer_shapes(model, auto_merge=True)`` on the loaded model.

Both run from bytecode, as an installed package does: pip compiles what it installs, ONNX
Runtime's tool included, but an editable install of seqpasses (or ``PYTHONDONTWRITEBYTECODE``)
leaves it compiling its own modules at every start, about 0.1 s; the script compiles them
first (``compileall``, into ``__pycache__``, which git ignores).

It prints a table with each ratio seqpasses / ONNX Runtime (below 1: seqpasses is faster)
and the largest of each; the target (issue "Shapes at least ONNX Runtime's") is a command
ratio of at most 1.0 on every model.
"""

from __future__ import annotations

import argparse
import compileall
import contextlib
import io
import subprocess
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from pathlib import Path

import onnx
from onnxruntime.tools.symbolic_shape_infer import SymbolicShapeInference

import seqpasses

ROOT = Path(__file__).resolve().parent.parent


def _best(run: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


# the console script pip installs beside this interpreter (what a user or a script runs);
# ``python -m seqpasses`` where there is none (it starts about 40 ms slower: runpy)
_SCRIPT = Path(sys.executable).parent / "seqpasses"
_SEQPASSES = [str(_SCRIPT)] if _SCRIPT.exists() else [sys.executable, "-m", "seqpasses"]


def _commands(path: Path, out: Path) -> dict[str, list[str]]:
    return {
        "seqpasses": [*_SEQPASSES, "shapes", str(path), "-o", str(out)],
        "ort": [
            sys.executable,
            "-m",
            "onnxruntime.tools.symbolic_shape_infer",
            "--input",
            str(path),
            "--output",
            str(out),
            "--auto_merge",
        ],
    }


def _time_commands(path: Path, runs: int) -> dict[str, float]:
    best = {"seqpasses": float("inf"), "ort": float("inf")}
    with tempfile.TemporaryDirectory() as folder:
        commands = _commands(path, Path(folder) / "typed.onnx")
        for _ in range(runs):  # (alternating: a busy moment costs both)
            for name, command in commands.items():
                start = time.perf_counter()
                subprocess.run(command, capture_output=True, check=True, cwd=ROOT)
                best[name] = min(best[name], time.perf_counter() - start)
    return best


def _time_inference(model: onnx.ModelProto, runs: int) -> dict[str, float]:
    def ours() -> None:
        seqpasses.infer_shapes(model)

    def theirs() -> None:
        with contextlib.redirect_stdout(io.StringIO()):
            SymbolicShapeInference.infer_shapes(model, auto_merge=True)

    ours()
    theirs()
    return {"seqpasses": _best(ours, runs), "ort": _best(theirs, runs)}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("models", nargs="*", type=Path)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    paths: list[Path] = []
    for given in args.models or [ROOT / "sample_models" / "vision"]:
        paths.extend(sorted(given.rglob("*.onnx")) if given.is_dir() else [given])
    warnings.simplefilter("ignore")
    compileall.compile_dir(Path(seqpasses.__file__).parent, quiet=1)  # (see the docstring)
    print(
        "| model | nodes | `seqpasses shapes` | ORT's tool | ratio "
        "| inference alone: seqpasses | ORT | ratio |"
    )
    print("|---|---|---|---|---|---|---|---|")
    worst_command = worst_inference = 0.0
    for path in paths:
        model = onnx.load(path)
        command = _time_commands(path, args.runs)
        inference = _time_inference(model, args.runs)
        ratio_c = command["seqpasses"] / command["ort"]
        ratio_i = inference["seqpasses"] / inference["ort"]
        worst_command, worst_inference = max(worst_command, ratio_c), max(worst_inference, ratio_i)
        print(
            f"| {path.name} | {len(model.graph.node)} | {command['seqpasses']:.2f} s "
            f"| {command['ort']:.2f} s | {ratio_c:.2f}x | {inference['seqpasses'] * 1e3:.0f} ms "
            f"| {inference['ort'] * 1e3:.0f} ms | {ratio_i:.2f}x |",
            flush=True,
        )
    print()
    met = "met" if worst_command <= 1.0 else "MISSED"
    print(
        f"largest ratio: the command {worst_command:.2f}x ({met}), the inference alone "
        f"{worst_inference:.2f}x"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

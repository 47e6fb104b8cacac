"""The lenient path's cost: a model whose only fault is graph outputs declared without a shape
field (onnx's checker refuses it, ONNX Runtime loads it, so seqpasses takes it), against the
same model with its outputs declared, both measured in this one run.

Usage (from the repository root):
    python benchmarks/lenient.py [--sizes 400 4000] [--runs 5] [--shapes "many outputs" ...]

For each graph shape of ``benchmarks/shapes.py`` asked for and each size, ``seqpasses.optimize``
runs on the two models alternately (``--runs`` times each, the median kept). Taking a model
the checker refuses asks ONNX Runtime whether it loads it, at admission and in the
self-check; the target is at most 1.1x the declared model's time.
"""

from __future__ import annotations

import argparse
import statistics
import time
import warnings

import onnx
from shapes import SHAPES

import seqpasses


def _without_output_shapes(model: onnx.ModelProto) -> onnx.ModelProto:
    bare = onnx.ModelProto()
    bare.CopyFrom(model)
    for output in bare.graph.output:
        output.type.tensor_type.ClearField("shape")
    return bare


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[400, 4000])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument(
        "--shapes", nargs="+", choices=sorted(SHAPES), default=["many outputs", "mixed"]
    )
    args = parser.parse_args()
    warnings.simplefilter("ignore")  # (the lenient model's warning, once per run)
    print("| shape | nodes | declared | outputs without a shape | ratio |")
    print("|---|---|---|---|---|")
    missed = 0
    for name in args.shapes:
        for size in args.sizes:
            declared = SHAPES[name](size)
            bare = _without_output_shapes(declared)
            times: dict[str, list[float]] = {"declared": [], "bare": []}
            for _ in range(args.runs):
                for key, model in (("declared", declared), ("bare", bare)):
                    start = time.perf_counter()
                    seqpasses.optimize(model)
                    times[key].append(time.perf_counter() - start)
            a, b = statistics.median(times["declared"]), statistics.median(times["bare"])
            nodes = len(declared.graph.node)
            print(f"| {name} | {nodes:,} | {a:.3f} s | {b:.3f} s | {b / a:.2f}x |")
            missed += b / a > 1.1
    print(f"\ntarget: at most 1.1x the declared model: {'met' if not missed else 'MISSED'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

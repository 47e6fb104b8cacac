"""Benchmark seqpasses on several graph shapes at two sizes, against a bare onnx_ir round trip
and onnxscript's optimizer, all measured in this one process and run.

Usage (from the repository root):
    python benchmarks/bench.py [--sizes 2000 20000] [--runs 3] [--shapes "long list" ...]

For every shape of ``benchmarks/shapes.py`` (many graph outputs, one long list, wide reads of
one list, many small loops, a chain of Ifs, many functions, a mixed graph) and every size it
measures, best of ``--runs`` (three times as many at the small size):

- the bare ``onnx_ir`` round trip of the ModelProto (deserialize + serialize), as a caller
  runs it (Python's cyclic garbage collector on): the baseline; and the same round trip with
  the collector paused, as seqpasses pauses it (shown for comparison, not a target);
- ``seqpasses.optimize`` on the ModelProto with its self-check on (what the API and the CLI do)
  and, inside it, the time of the passes alone (µs per node);
- at the largest size, the peak memory of optimize over the loaded model's own footprint, in a
  fresh child process;
- onnxscript's ``optimizer.optimize`` at the smallest size, in a child process killed after
  ``--onnxscript-limit`` seconds.

It prints, per shape, how time grows with the nodes (target: 10x the nodes, at most 12x the
time), the ratio to the round trip at the largest size (target: at most 1.5x) and the pass time
per node (target: at most 25 µs), and whether each target holds. The self-check runs onnx's
own full check (``check_model(full_check=True)``) on the result; its time is shown apart,
beside the same check of the input, which is quadratic on graphs with thousands of subgraphs
or function calls (onnx copies the enclosing scope into each). A second table splits the
fastest large run into its stages (load, passes, serialize, self-check, the rest: mostly the
collector's one traversal when its pause ends) and gives what optimize / round trip would be
if the passes took no time: the part of the ratio no speed-up of the passes can remove.
"""

from __future__ import annotations

import argparse
import gc
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import onnx
import onnx_ir as ir

import seqpasses
from seqpasses.core.pause import no_cycle_collection

sys.path.insert(0, str(Path(__file__).parent))
from shapes import SHAPES


def node_count(model: onnx.ModelProto) -> int:
    """Nodes of the graph, its subgraphs and its functions."""
    return sum(seqpasses.count_ops(model).values())


def best(fn: Callable[[], Any], runs: int) -> tuple[float, Any]:
    times, result = [], None
    for _ in range(runs):
        gc.collect()
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return min(times), result


def measure(model: onnx.ModelProto, runs: int) -> dict[str, Any]:
    row: dict[str, Any] = {"nodes": node_count(model)}

    def roundtrip() -> onnx.ModelProto:
        return ir.serde.serialize_model(ir.serde.deserialize_model(model))

    def roundtrip_paused() -> onnx.ModelProto:
        with no_cycle_collection():
            return roundtrip()

    row["roundtrip"], _ = best(roundtrip, runs)
    row["roundtrip_paused"], _ = best(roundtrip_paused, runs)
    reports: list[seqpasses.Report] = []

    def optimize() -> onnx.ModelProto:
        reports.append(seqpasses.Report())
        start = time.perf_counter()
        result = seqpasses.optimize(model, report=reports[-1])
        reports[-1].timings["total"] = time.perf_counter() - start
        return result

    row["optimize"], optimized = best(optimize, runs)
    row["passes"] = min(r.timings["passes"] for r in reports)
    row["self_check"] = min(r.timings["self_check"] for r in reports)
    row["own"] = min(r.timings["total"] - r.timings["self_check"] for r in reports)
    # where the fastest run went, stage by stage (load and serialize: what the round trip does)
    fastest = min(reports, key=lambda r: r.timings["total"])
    row["stages"] = {
        stage: fastest.timings.get(stage, 0.0)
        for stage in ("load", "passes", "serialize", "self_check")
    }
    row["stages"]["rest"] = fastest.timings["total"] - sum(row["stages"].values())
    row["input_check"], _ = best(lambda: onnx.checker.check_model(model, full_check=True), 1)
    row["before"] = seqpasses.count_sequence_ops(model)
    row["after"] = seqpasses.count_sequence_ops(optimized)
    return row


MEMORY = r"""
import json, sys
def status(key):
    for line in open('/proc/self/status'):
        if line.startswith(key): return int(line.split()[1]) * 1024
import onnx, onnx_ir as ir, seqpasses
proto = onnx.load(sys.argv[1])
base = status('VmRSS:')
model = ir.serde.deserialize_model(proto)
loaded = status('VmRSS:')
seqpasses.optimize_ir(model)
print(json.dumps({"footprint": loaded - base, "peak": status('VmHWM:') - base}))
"""

ONNXSCRIPT = r"""
import json, sys, time
import onnx_ir as ir, onnxscript.optimizer, seqpasses
model = ir.load(sys.argv[1])
start = time.perf_counter()
onnxscript.optimizer.optimize(model)
print(json.dumps({"seconds": time.perf_counter() - start,
                  "after": seqpasses.count_sequence_ops(model)}))
"""


def child(script: str, path: Path, limit: float | None = None) -> dict[str, Any] | None:
    try:
        out = subprocess.run(
            [sys.executable, "-c", script, str(path)],
            capture_output=True,
            text=True,
            check=True,
            timeout=limit,
        )
    except subprocess.TimeoutExpired:
        return None
    except subprocess.CalledProcessError as error:
        return {"error": (error.stderr.strip().splitlines() or ["failed"])[-1]}
    data: dict[str, Any] = json.loads(out.stdout)
    return data


def main() -> int:
    parser = argparse.ArgumentParser(description="seqpasses benchmark")
    parser.add_argument("--sizes", type=int, nargs=2, default=[2000, 20000])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--shapes", nargs="+", choices=sorted(SHAPES), default=list(SHAPES))
    parser.add_argument("--onnxscript-limit", type=float, default=120.0)
    parser.add_argument("--no-onnxscript", action="store_true")
    args = parser.parse_args()
    small, large = sorted(args.sizes)
    checks: list[tuple[str, bool]] = []
    header = (
        "| shape | nodes | sequence ops | round trip | optimize (self-check on) "
        "| of which the full check | onnx's full check of the input | passes | µs/node "
        "| time growth | round trip growth | optimize / round trip | without the full check "
        "| round trip, collector paused | peak memory "
        "| onnxscript |"
    )
    print(header)
    print("|---" * header.count(" | ") + "|---|")
    stages: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.shapes:
            # the small size runs for tens of milliseconds: best of three times as many runs
            rows = {
                small: measure(SHAPES[name](small), 3 * args.runs),
                large: measure(SHAPES[name](large), args.runs),
            }
            path = Path(tmp) / "model.onnx"
            onnx.save(SHAPES[name](large), path)
            memory = child(MEMORY, path)
            other = None
            if not args.no_onnxscript:
                onnx.save(SHAPES[name](small), path)
                other = child(ONNXSCRIPT, path, args.onnxscript_limit)
            a, b = rows[small], rows[large]
            stages.append(
                f"| {name} | {b['roundtrip']:.2f} s | "
                + " | ".join(
                    f"{seconds:.2f} s ({seconds / b['roundtrip']:.2f})"
                    for seconds in b["stages"].values()
                )
                + f" | {(sum(b['stages'].values()) - b['stages']['passes']) / b['roundtrip']:.2f}x |"
            )
            scale = b["nodes"] / a["nodes"]
            growth = b["optimize"] / a["optimize"]
            base_growth = b["roundtrip"] / a["roundtrip"]
            own_growth = b["own"] / a["own"]
            versus = b["optimize"] / b["roundtrip"]
            own = b["own"] / b["roundtrip"]
            per_node = 1e6 * b["passes"] / b["nodes"]
            limit = 1.2 * scale
            checks.append(
                (
                    f"{name}: time x{growth:.1f} (x{own_growth:.1f} without the full check; the "
                    f"bare round trip x{base_growth:.1f}) for nodes x{scale:.1f}",
                    growth <= limit,
                )
            )
            checks.append(
                (
                    f"{name}: optimize / round trip {versus:.2f}x "
                    f"({own:.2f}x without the full check)",
                    versus <= 1.5,
                )
            )
            checks.append((f"{name}: {per_node:.1f} µs/node", per_node <= 25))
            if memory is None or "error" in memory:
                peak = "?"
            else:
                ratio = memory["peak"] / max(memory["footprint"], 1)
                peak = f"{memory['peak'] / 2**20:.0f} MiB ({ratio:.1f}x model)"
            if args.no_onnxscript:
                theirs = "(not run)"
            elif other is None:
                theirs = f"> {args.onnxscript_limit:.0f} s at {a['nodes']:,}"
            elif "error" in other:
                theirs = f"failed: {other['error'][:60]}"
            else:
                theirs = (
                    f"{other['seconds']:.2f} s at {a['nodes']:,} "
                    f"({other['seconds'] / a['optimize']:.0f}x), leaves {other['after']}"
                )
            print(
                f"| {name} | {a['nodes']:,} → {b['nodes']:,} "
                f"| {a['before']} → {a['after']}, {b['before']} → {b['after']} "
                f"| {a['roundtrip']:.3f} → {b['roundtrip']:.3f} s "
                f"| {a['optimize']:.3f} → {b['optimize']:.3f} s "
                f"| {a['self_check']:.3f} → {b['self_check']:.3f} s "
                f"| {a['input_check']:.3f} → {b['input_check']:.3f} s "
                f"| {a['passes']:.3f} → {b['passes']:.3f} s | {per_node:.1f} "
                f"| {growth:.1f}x | {base_growth:.1f}x | {versus:.2f}x | {own:.2f}x "
                f"| {a['roundtrip_paused']:.3f} → {b['roundtrip_paused']:.3f} s | {peak} "
                f"| {theirs} |",
                flush=True,
            )
    print(
        f"\nwhere optimize goes at {large:,} nodes (its fastest run; in brackets, a share of "
        "the round trip; the last column, optimize / round trip if the passes took no time):"
        "\n\n| shape | round trip | load | passes | serialize | self-check | rest "
        "| all but the passes |\n|---|---|---|---|---|---|---|---|"
    )
    print("\n".join(stages))
    print("\ntargets (10x nodes -> at most 12x time; at most 1.5x the round trip; 25 µs/node):")
    for text, ok in checks:
        print(f"  [{'ok' if ok else 'MISSED'}] {text}")
    return 0 if all(ok for _, ok in checks) else 1


if __name__ == "__main__":
    sys.exit(main())

"""Print the tables of the PyTorch exports (docs/exports.md, docs/pipelines.md).

    python scripts/torch_table.py             sequence ops before -> after, what was done
    python scripts/torch_table.py --pipeline  nodes / sequence ops: onnxscript's optimizer
                                              alone, seqpasses, seqpasses then onnxscript

No torch needed (reads sample_models/torch/). Whether each optimized export gives PyTorch's
outputs is checked by tests/test_torch_exports.py and tests/test_pipeline.py.
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import onnx
import onnx_ir as ir

import seqpasses
from seqpasses.core.graph import all_nodes
from seqpasses.core.ops import SEQUENCE_OPS

TORCH = Path(__file__).resolve().parent.parent / "sample_models" / "torch"

# Rewrites too small to mention beside the main one.
_MINOR = {"canonical-sequence-input", "canonical-sequence-output"}


def _nodes(model: onnx.ModelProto) -> str:
    nodes = list(all_nodes(ir.from_proto(model)))
    sequence = sum(n.op_type in SEQUENCE_OPS for n in nodes)
    return f"{len(nodes)} / {sequence}"


def pipeline() -> int:
    from onnxscript import optimizer

    print("| export | original | onnxscript alone | seqpasses | seqpasses, then onnxscript |")
    print("|---|---|---|---|---|")
    for path in sorted(TORCH.glob("ts*.onnx")):
        model = onnx.load(path)
        ours = seqpasses.optimize(model)
        cells = [
            _nodes(model),
            _nodes(optimizer.optimize(onnx.load(path))),
            _nodes(ours),
            _nodes(optimizer.optimize(seqpasses.optimize(model))),
        ]
        print(f"| `{path.stem}` | " + " | ".join(cells) + " |")
    return 0


def main(argv: list[str]) -> int:
    if argv == ["--pipeline"]:
        return pipeline()
    print("| export | sequence ops before → after | ops after (main) | rewrites applied |")
    print("|---|---|---|---|")
    for path in sorted(TORCH.glob("*.onnx")):
        model = onnx.load(path)
        report = seqpasses.Report()
        optimized = seqpasses.optimize(model, report=report)
        rules = Counter(r.rule for r in report.rewrites if r.rule not in _MINOR)
        done = ", ".join(f"{rule}\u00d7{n}" if n > 1 else rule for rule, n in sorted(rules.items()))
        ops = Counter(n.op_type for n in ir.from_proto(optimized).graph)
        main_ops = ", ".join(
            f"{op}\u00d7{n}" for op, n in sorted(ops.items()) if op not in ("Constant",)
        )
        print(
            f"| `{path.stem}` | {report.sequence_ops_before} → {report.sequence_ops_after} "
            f"| {main_ops} | {done or '(no sequence ops to remove)'} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

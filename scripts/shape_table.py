"""Compare what seqpasses' shape inference knows with onnx.shape_inference (data_prop=True).

Usage: python scripts/shape_table.py [MODEL_OR_DIR ...]

(default: the models at the top of sample_models/). Prints a Markdown table (docs/shapes.md):
per model, the values of the main graph with a known rank, the dims known (a number or a named
symbol; ONNX's generated ``unk__N`` names count as unknown) and the sequence lengths known, for
ONNX and for seqpasses.
"""

from __future__ import annotations

import sys
from pathlib import Path

import onnx

import seqpasses

ROOT = Path(__file__).resolve().parent.parent


def _onnx_counts(model: onnx.ModelProto) -> tuple[int, int]:
    inferred = onnx.shape_inference.infer_shapes(model, data_prop=True)
    graph = inferred.graph
    ranked = dims = 0
    seen = set()
    for value in [*graph.input, *graph.value_info, *graph.output]:
        if value.name in seen:
            continue
        seen.add(value.name)
        t = value.type
        while t.WhichOneof("value") in ("sequence_type", "optional_type"):
            t = getattr(t, t.WhichOneof("value")).elem_type
        if t.WhichOneof("value") != "tensor_type" or not t.tensor_type.HasField("shape"):
            continue
        ranked += 1
        for dim in t.tensor_type.shape.dim:
            if dim.HasField("dim_value") or (
                dim.dim_param and not dim.dim_param.startswith("unk__")
            ):
                dims += 1
    return ranked, dims


def _our_counts(model: onnx.ModelProto) -> tuple[int, int, int]:
    facts = seqpasses.shape_facts(model)
    ranked = dims = lengths = 0
    for fact in facts.values:
        if fact.graph != "main":
            continue
        if fact.length is not None:
            lengths += 1
        if fact.shape is None:
            continue
        ranked += 1
        dims += sum(1 for d in fact.shape if d is not None and not str(d).startswith("unk__"))
    return ranked, dims, lengths


def _models(args: list[str]) -> list[Path]:
    if not args:
        return sorted((ROOT / "sample_models").glob("*.onnx"))
    found: list[Path] = []
    for root in map(Path, args):
        found.extend([root] if root.is_file() else sorted(root.rglob("*.onnx")))
    return found


def main(argv: list[str]) -> int:
    print(
        "| model | ranked values onnx / seqpasses | dims known onnx / seqpasses | sequence lengths known |"
    )
    print("|---|---|---|---|")
    totals = [0, 0, 0, 0, 0]
    for path in _models(argv):
        model = onnx.load(path)
        o_ranked, o_dims = _onnx_counts(model)
        s_ranked, s_dims, lengths = _our_counts(model)
        name = path.parent.name if path.name == "model.onnx" else path.stem
        print(f"| {name} | {o_ranked} / {s_ranked} | {o_dims} / {s_dims} | {lengths} |")
        for i, v in enumerate((o_ranked, s_ranked, o_dims, s_dims, lengths)):
            totals[i] += v
    print(f"| **total** | {totals[0]} / {totals[1]} | {totals[2]} / {totals[3]} | {totals[4]} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

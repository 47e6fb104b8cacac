"""Which models compile in OpenVINO before and after seqpasses (docs/backends.md's table).

Usage (from the repository root): pip install -e ".[backends]" && python scripts/openvino_table.py

For every model under sample_models/ whose graph inputs and outputs are tensors, it compiles
the original, the output of ``seqpasses optimize`` and that of ``seqpasses optimize
--inline-functions`` for OpenVINO's CPU device and prints one Markdown row each, with the
first line of OpenVINO's refusal where there is one.
"""

from __future__ import annotations

import re
import sys
import tempfile
from pathlib import Path

import onnx
import openvino as ov

import seqpasses

CORE = ov.Core()


def refusal(path: Path) -> str:
    """'' when OpenVINO compiles the model for its CPU device, else why not (one line)."""
    try:
        CORE.compile_model(CORE.read_model(str(path)), "CPU")
    except Exception as error:
        # (OpenVINO names nodes with a process-wide counter: "Operation name: Squeeze_217638")
        text = re.sub(r"\s*Operation name: \S+", "", str(error))
        lines = [line.strip(" -") for line in text.splitlines() if line.strip(" -")]
        for key in ("No conversion rule", "SequenceArrayLowering", "Conversion is failed"):
            found = next((line for line in lines if key in line), None)
            if found:
                return found[:110]
        return (lines[-1] if lines else type(error).__name__)[:110]
    return ""


def tensors_only(model: onnx.ModelProto) -> bool:
    values = (*model.graph.input, *model.graph.output)
    return all(v.type.HasField("tensor_type") for v in values)


def main() -> int:
    rows, before_ok, after_ok, inlined_ok = [], 0, 0, 0
    with tempfile.TemporaryDirectory() as tmp:
        for path in sorted(Path("sample_models").rglob("*.onnx")):
            model = onnx.load(path)
            if not tensors_only(model):
                continue
            cells = [refusal(path)]
            for k, inline in enumerate((False, True)):
                out = Path(tmp) / f"{k}.onnx"
                onnx.save(seqpasses.optimize(model, inline_functions=inline), out)
                cells.append(refusal(out))
            before_ok += not cells[0]
            after_ok += not cells[1]
            inlined_ok += not cells[2]
            text = ["compiles" if not c else f"no: {c}" for c in cells]
            name = path.relative_to("sample_models").as_posix()
            rows.append(f"| {name} | {text[0]} | {text[1]} | {text[2]} |")
    print("| model | before | after | after, --inline-functions |")
    print("|---|---|---|---|")
    print("\n".join(rows))
    total = len(rows)
    print(
        f"| **{total} models** | **{before_ok} compile** | **{after_ok} compile** "
        f"| **{inlined_ok} compile** |"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

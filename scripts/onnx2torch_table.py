"""Which sample models onnx2torch converts (and runs right) before and after seqpasses.

This script must run in a SEPARATE venv with torch and onnx2torch (not the project's dev venv):

    python3 -m venv /tmp/o2t
    /tmp/o2t/bin/pip install torch==2.13.0            # the CPU wheel
    /tmp/o2t/bin/pip install onnx2torch onnx onnxruntime numpy "torch==2.13.0"
    /tmp/o2t/bin/pip install -e .                     # seqpasses, from the repository root
    /tmp/o2t/bin/python scripts/onnx2torch_table.py > /tmp/o2t_table.md

onnx2torch imports torchvision (for NMS and RoiAlign only); PyPI's torchvision wheel is built
for CUDA torch and fails to import next to the CPU wheel, so a stand-in whose ops raise is put
in its place when the real one does not import (no sample model uses those ops).

For every model under sample_models/ (up to 20 MB) whose graph inputs and outputs are tensors,
it converts the original and ``seqpasses.optimize``'s output with ``onnx2torch.convert``, runs
the torch module on the stored inputs (``<stem>.npz``, else random ones), and compares with
ONNX Runtime's results on the original. A Markdown table, totals, and the grouped reasons
for the rejections after seqpasses.
"""

from __future__ import annotations

import re
import sys
import types
import warnings
from collections import Counter
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
import torch

import seqpasses

ROOT = Path(__file__).resolve().parent.parent / "sample_models"
MAX_BYTES = 20 * 1024 * 1024


def _stub_torchvision() -> None:
    """Put a stand-in torchvision in sys.modules when the real one does not import."""
    try:
        import torchvision  # noqa: F401
    except Exception:
        for name in [n for n in sys.modules if n.split(".")[0] == "torchvision"]:
            del sys.modules[name]

        def missing(*_: Any, **__: Any) -> Any:
            raise NotImplementedError("torchvision is a stand-in in this venv")

        ops = types.ModuleType("torchvision.ops")
        for name in ("nms", "box_convert", "roi_align"):
            setattr(ops, name, missing)
        package = types.ModuleType("torchvision")
        package.ops = ops  # type: ignore[attr-defined]
        sys.modules.update({"torchvision": package, "torchvision.ops": ops})


_stub_torchvision()
import onnx2torch  # noqa: E402


def first_line(error: BaseException, width: int = 120) -> str:
    """``Type: message``'s first line, with onnx2torch's missing-converter error shortened."""
    text = (str(error).strip().splitlines() or [""])[0]
    found = re.search(r"domain='([^']*)', operation_type='(\w+)', version=(\d+)", text)
    if isinstance(error, NotImplementedError) and found:
        return (
            f"No converter for {found[1] + '::' if found[1] else ''}{found[2]} version {found[3]}"
        )
    line = f"{type(error).__name__}: {text}" if text else type(error).__name__
    return line if len(line) <= width else line[: width - 1] + "…"


def random_feeds(model: onnx.ModelProto) -> dict[str, np.ndarray]:
    """Seeded inputs of the declared shapes and dtypes: free dims 2, ints in [0, 3)."""
    rng = np.random.default_rng(0)
    initializers = {i.name for i in model.graph.initializer}
    feeds: dict[str, np.ndarray] = {}
    for value in model.graph.input:
        if value.name in initializers:
            continue
        tensor = value.type.tensor_type
        dtype = onnx.helper.tensor_dtype_to_np_dtype(tensor.elem_type)
        shape = [d.dim_value if d.HasField("dim_value") else 2 for d in tensor.shape.dim]
        if dtype == np.bool_:
            feeds[value.name] = rng.integers(0, 2, shape).astype(bool)
        elif np.issubdtype(dtype, np.integer):
            feeds[value.name] = rng.integers(0, 3, shape).astype(dtype)
        else:
            feeds[value.name] = rng.standard_normal(shape).astype(dtype)
    return feeds


def stored_feeds(path: Path, model: onnx.ModelProto) -> dict[str, np.ndarray] | None:
    """The first input set of ``<stem>.npz`` when its keys name exactly the graph inputs."""
    npz = path.with_suffix(".npz")
    if not npz.exists():
        return None
    sets = seqpasses.load_inputs(npz)
    initializers = {i.name for i in model.graph.initializer}
    names = {i.name for i in model.graph.input} - initializers
    if not sets or set(sets[0]) != names:
        print(f"<!-- {npz.name}: keys {sorted(sets[0]) if sets else []} != {sorted(names)} -->")
        return None
    return {k: np.asarray(v) for k, v in sets[0].items()}


def flatten(result: Any) -> list[Any]:
    if isinstance(result, (tuple, list)):
        return [leaf for item in result for leaf in flatten(item)]
    return [result]


def mismatch(want: np.ndarray, have: np.ndarray) -> str:
    """'' when ``have`` matches ``want`` (shape, then values), else how it differs."""
    if want.shape != have.shape:
        return f"shape {have.shape} not {want.shape}"
    if want.dtype.kind in "fc" or have.dtype.kind in "fc":
        if np.allclose(want, have, rtol=1e-4, atol=1e-5, equal_nan=True):
            return ""
        return f"max diff {np.max(np.abs(want.astype(float) - have.astype(float))):.3g}"
    return "" if np.array_equal(want, have) else "values differ"


def verdict(
    model: onnx.ModelProto, feeds: dict[str, np.ndarray], expected: list[np.ndarray]
) -> str:
    """'ok', 'wrong', 'rejected: <reason>' or 'run error: <reason>'."""
    try:
        module = onnx2torch.convert(model)
    except Exception as error:
        return f"rejected: {first_line(error)}"
    initializers = {i.name for i in model.graph.initializer}
    names = [i.name for i in model.graph.input if i.name not in initializers]
    args = [torch.from_numpy(np.array(feeds[n], order="C")) for n in names]  # keeps 0-d
    try:
        with torch.no_grad():
            got = [np.asarray(t.detach().cpu().numpy()) for t in flatten(module(*args))]
    except Exception as error:
        return f"run error: {first_line(error)}"
    if len(got) != len(expected):
        return f"wrong: {len(got)} outputs, not {len(expected)}"
    for index, (want, have) in enumerate(zip(expected, got, strict=True)):
        if why := mismatch(want, have):
            return f"wrong: output {index} {why}"
    return "ok"


def reason_group(cell: str) -> str:
    """A rejection reason with the model-specific names stripped."""
    text = cell.removeprefix("rejected: ")
    if text.startswith("No converter for"):
        return text
    return re.sub(r"""(['"])[^'"]*\1""", "'…'", re.sub(r"\d+", "N", text))


def main() -> int:
    warnings.simplefilter("ignore")
    rows: list[tuple[str, str, str]] = []
    skipped_io = 0
    for path in sorted(ROOT.rglob("*.onnx")):
        name = path.relative_to(ROOT).as_posix()
        if path.stat().st_size > MAX_BYTES:
            rows.append((name, "skipped: over 20 MB", "-"))
            continue
        model = onnx.load(path)
        if not all(
            v.type.HasField("tensor_type") for v in (*model.graph.input, *model.graph.output)
        ):
            skipped_io += 1
            continue
        try:
            optimized: onnx.ModelProto | None = seqpasses.optimize(model)
            failed = ""
        except Exception as error:
            optimized, failed = None, f"optimize failed: {first_line(error)}"
        feeds = stored_feeds(path, model) or random_feeds(model)
        try:
            options = ort.SessionOptions()
            options.log_severity_level = 4
            session = ort.InferenceSession(str(path), options, ["CPUExecutionProvider"])
            expected = [np.asarray(r) for r in session.run(None, feeds)]
        except Exception:
            rows.append((name, "original does not run", "-"))
            continue
        before = verdict(model, feeds, expected)
        after = verdict(optimized, feeds, expected) if optimized is not None else failed
        rows.append((name, before, after))

    print_report(rows, skipped_io)
    return 0


def print_report(rows: list[tuple[str, str, str]], skipped_io: int) -> None:
    """The table, the totals, the grouped rejections after seqpasses and the regressions."""
    print("| model | original | optimized |\n|---|---|---|")
    for row in rows:
        print("| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |")
    ran = [r for r in rows if r[2] != "-"]
    print(
        f"\n{len(ran)} models compared; {skipped_io} skipped (non-tensor inputs/outputs); "
        f"{len(rows) - len(ran)} not compared (original does not run, or over 20 MB).\n"
    )
    kinds = ("ok", "wrong", "rejected", "run error", "optimize failed")
    for label, kind in zip(("accepted and right", *kinds[1:]), kinds, strict=True):
        before, after = (sum(r[i].startswith(kind) for r in ran) for i in (1, 2))
        print(f"- {label}: {before} before, {after} after")
    print("\n## Rejection reasons after seqpasses\n")
    groups = Counter(reason_group(r[2]) for r in ran if r[2].startswith("rejected"))
    print("\n".join(f"- {count}x {reason}" for reason, count in groups.most_common()))
    print("\n## Accepted before, not after\n")
    lost = [f"- {n}: {a}" for n, b, a in ran if b == "ok" and a != "ok"]
    print("\n".join(lost) or "- none")
    print("\n## Wrong or failing to run after seqpasses\n")
    bad = [f"- {n}: {a}" for n, _, a in ran if a.startswith(("wrong", "run error"))]
    print("\n".join(bad) or "- none")


if __name__ == "__main__":
    sys.exit(main())

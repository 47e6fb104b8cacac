"""OpenVINO, a back end that rejects sequence ops, compiles what seqpasses writes.

Every sample and export model whose graph inputs and outputs are tensors is optimized (with
--inline-functions, as for a back end that rejects model-local functions) and compiled for
OpenVINO's CPU device. Skipped without OpenVINO (``pip install -e ".[backends]"``).
"""

from __future__ import annotations

from pathlib import Path

import onnx
import pytest

import seqpasses
from helpers import SAMPLES

ov = pytest.importorskip("openvino")
CORE = ov.Core()


def _tensors_only(path: Path) -> bool:
    graph = onnx.load(path, load_external_data=False).graph
    return all(v.type.HasField("tensor_type") for v in (*graph.input, *graph.output))


MODELS = sorted(p for p in SAMPLES.rglob("*.onnx") if _tensors_only(p))
# What OpenVINO still rejects after seqpasses, and why it is not a sequence op that seqpasses
# could have removed.
STILL_REJECTED = {
    "unlike_shapes.onnx": "its lists must stay (elements of two shapes): the inspect example",
    "wild/silero_vad.onnx": "no sequence op: OpenVINO cannot convert its Conv/ReduceMean",
}


def refusal(path: Path) -> str:
    try:
        CORE.compile_model(CORE.read_model(str(path)), "CPU")
    except Exception as error:
        return str(error).strip() or type(error).__name__
    return ""


@pytest.mark.parametrize("path", MODELS, ids=lambda p: p.relative_to(SAMPLES).as_posix())
def test_openvino_compiles_the_optimized_model(path: Path, tmp_path: Path) -> None:
    name = path.relative_to(SAMPLES).as_posix()
    out = tmp_path / "out.onnx"
    onnx.save(seqpasses.optimize(onnx.load(path), inline_functions=True), out)
    after = refusal(out)
    if name in STILL_REJECTED:
        assert after, f"{name} compiles now: drop it from STILL_REJECTED"
        assert refusal(path), name  # and it was rejected before too
        return
    assert not after, f"{name}: {after.splitlines()[-1] if after else ''}"


def test_models_openvino_rejected_for_their_sequence_ops_now_compile(tmp_path: Path) -> None:
    rescued = []
    for path in MODELS:
        before = refusal(path)
        if not before or path.relative_to(SAMPLES).as_posix() in STILL_REJECTED:
            continue
        out = tmp_path / "out.onnx"
        onnx.save(seqpasses.optimize(onnx.load(path), inline_functions=True), out)
        if not refusal(out):
            rescued.append(path.name)
    assert len(rescued) >= 25, rescued  # 29 on the current samples (docs/backends.md's table)

"""Back ends that reject sequence ops take what seqpasses writes: OpenVINO compiles it, tract
loads and runs it with the original's results.

Every sample and export model whose graph inputs and outputs are tensors is optimized (with
--inline-functions, as for a back end that rejects model-local functions). Each back end's
tests are skipped without it (``pip install -e ".[backends]"``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import pytest

import seqpasses
from helpers import SAMPLES
from seqpasses.verification import inputs_that_run


def _tensors_only(path: Path) -> bool:
    graph = onnx.load(path, load_external_data=False).graph
    return all(v.type.HasField("tensor_type") for v in (*graph.input, *graph.output))


MODELS = sorted(p for p in SAMPLES.rglob("*.onnx") if _tensors_only(p))
# What OpenVINO still rejects after seqpasses, and why it is not a sequence op that seqpasses
# could have removed.
STILL_REJECTED = {
    "unlike_shapes.onnx": "its lists must stay (elements of two shapes): the inspect example",
    "wild/silero_vad.onnx": "no sequence op: OpenVINO cannot convert its Conv/ReduceMean",
    "tf2onnx/tf_ragged_to_tensor.onnx": "no sequence op left: OpenVINO's CPU plugin rejects a "
    "Squeeze of dynamic rank that tf2onnx wrote in the loop body",
}


def refusal(path: Path) -> str:
    ov = pytest.importorskip("openvino")
    core = ov.Core()
    try:
        core.compile_model(core.read_model(str(path)), "CPU")
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


# -- tract ------------------------------------------------------------------------------------


def tract_outputs(path: Path, feeds: dict[str, np.ndarray] | None) -> list[np.ndarray] | str:
    """tract's outputs for ``feeds`` (none: only loaded), or why it rejects the model (loading
    or running it)."""
    tract = pytest.importorskip("tract")
    try:
        runnable = tract.onnx().load(str(path)).into_model().into_runnable()
        if feeds is None:
            return []
        names = [i.name for i in onnx.load(path, load_external_data=False).graph.input]
        return [t.to_numpy() for t in runnable.run([feeds[n] for n in names if n in feeds])]
    except Exception as error:
        return str(error).strip().splitlines()[0] or type(error).__name__


@pytest.mark.parametrize("path", MODELS, ids=lambda p: p.relative_to(SAMPLES).as_posix())
def test_tract_takes_no_fewer_models_and_gives_the_originals_results(
    path: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out.onnx"
    onnx.save(seqpasses.optimize(onnx.load(path), inline_functions=True), out)
    feeds = inputs_that_run(path)
    before, after = tract_outputs(path, feeds), tract_outputs(out, feeds)
    assert not (isinstance(after, str) and not isinstance(before, str)), after  # no loss
    if isinstance(after, str) or feeds is None:
        return
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    expected = session.run(None, feeds)
    for want, got in zip(expected, after, strict=True):
        assert want.shape == got.shape and np.allclose(want, got, rtol=1e-4, atol=1e-5)

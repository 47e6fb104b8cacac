"""Write models from the wild that are not PyTorch exports into ``sample_models/wild/``.

- scikit-learn classifiers converted by skl2onnx (logistic regression, a small random forest,
  a pipeline with a scaler): their ``ZipMap`` output is a ``seq(map(int64, tensor(float)))``,
  a type onnx_ir cannot hold, so seqpasses must write them unchanged (with a note);
- silero-vad's own ``silero_vad.onnx``, copied from its wheel (MIT licence; 25 ``If`` nodes,
  no sequence op): it must come out equivalent and no slower;
- models ONNX Runtime runs but the ONNX checker rejects: a graph output without a shape field
  (what ``make_tensor_value_info(name, type, None)`` writes) around a list that folds, and an
  IR version older than its content needs (initializers that are not graph inputs).

Each ``<name>.npz`` holds input sets (``run<k>.input:<name>``) and, where they are tensors,
ONNX Runtime's outputs of the original (``run<k>.output:<i>``). Needs scikit-learn, skl2onnx,
silero-vad and onnxruntime:

    python -m venv wild && wild/bin/pip install scikit-learn skl2onnx silero-vad onnxruntime
    wild/bin/python scripts/make_foreign_models.py [OUTDIR]
"""

from __future__ import annotations

import hashlib
import shutil
import sys
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper

SILERO_SHA256 = (
    "1a153a22f4509e292a94e67d6f9b85e8deb25b4988682b7e174c65279d8788e3"  # silero-vad 6.2.3
)


def _runs(path: Path, feeds: list[dict[str, np.ndarray]], outputs: bool) -> None:
    arrays: dict[str, np.ndarray] = {}
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    for k, feed in enumerate(feeds):
        for name, value in feed.items():
            arrays[f"run{k}.input:{name}"] = value
        if outputs:
            for i, out in enumerate(session.run(None, feed)):
                arrays[f"run{k}.output:{i}"] = np.asarray(out)
    np.savez(path.with_suffix(".npz"), **arrays)  # type: ignore[arg-type]


def sklearn_models(out: Path) -> None:
    from skl2onnx import to_onnx
    from sklearn.datasets import load_iris
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    x, y = load_iris(return_X_y=True)
    x = x.astype(np.float32)
    models: dict[str, Any] = {
        "sklearn_logreg": LogisticRegression(max_iter=500),
        "sklearn_forest": RandomForestClassifier(n_estimators=3, max_depth=3, random_state=0),
        "sklearn_scaler_logreg": make_pipeline(StandardScaler(), LogisticRegression(max_iter=500)),
    }
    for name, model in models.items():
        model.fit(x, y)
        onx = to_onnx(model, x[:1], target_opset={"": 17, "ai.onnx.ml": 3})
        path = out / f"{name}.onnx"
        onnx.save(onx, path)
        _runs(path, [{"X": x[k : k + 5]} for k in (0, 60, 120)], outputs=False)


def silero(out: Path) -> None:
    import silero_vad

    source = Path(silero_vad.__file__).parent / "data" / "silero_vad.onnx"
    digest = hashlib.sha256(source.read_bytes()).hexdigest()
    if digest != SILERO_SHA256:
        print(f"warning: silero_vad.onnx has sha256 {digest}, expected {SILERO_SHA256}")
    path = out / "silero_vad.onnx"
    shutil.copyfile(source, path)
    rng = np.random.default_rng(0)
    feeds = [
        {
            "input": rng.standard_normal((1, 512)).astype(np.float32) * 0.1,
            "state": np.zeros((2, 1, 128), np.float32),
            "sr": np.array(16000, np.int64),
        },
        {
            "input": rng.standard_normal((2, 256)).astype(np.float32) * 0.1,
            "state": rng.standard_normal((2, 2, 128)).astype(np.float32) * 0.1,
            "sr": np.array(8000, np.int64),
        },
    ]
    _runs(path, feeds, outputs=True)


def lenient(out: Path) -> None:
    """Models ONNX Runtime runs and the ONNX checker rejects."""
    nodes = [
        helper.make_node("Relu", ["x"], ["r"]),
        helper.make_node("SequenceConstruct", ["x", "r", "x"], ["s"]),
        helper.make_node("SequenceErase", ["s", "one"], ["t"]),
        helper.make_node("ConcatFromSequence", ["t"], ["y"], axis=0),
    ]
    one = helper.make_tensor("one", TensorProto.INT64, [], [1])
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [2, 3])
    no_shape = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    graph = helper.make_graph(nodes, "no_output_shape", [x], [no_shape], [one])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.save(model, out / "lenient_no_output_shape.onnx")
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 3])
    graph = helper.make_graph(nodes, "old_ir_version", [x], [y], [one])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 3  # initializers that are not graph inputs need IR version 4
    onnx.save(model, out / "lenient_old_ir_version.onnx")
    rng = np.random.default_rng(0)
    for name in ("lenient_no_output_shape", "lenient_old_ir_version"):
        feeds = [{"x": rng.standard_normal((2, 3)).astype(np.float32)} for _ in range(2)]
        _runs(out / f"{name}.onnx", feeds, outputs=True)


def main(argv: list[str]) -> int:
    out = Path(argv[0]) if argv else Path("sample_models") / "wild"
    out.mkdir(parents=True, exist_ok=True)
    sklearn_models(out)
    silero(out)
    lenient(out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

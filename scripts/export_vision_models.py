"""Export small vision and sequence models (scripts/torch_vision_exports.py) whose inputs have
symbolic batch, image and sequence sizes, with both of torch's exporters: models to compare
shape inference on (scripts/shape_compare.py).

Writes, for each module, ``sample_models/vision/ts_<name>.onnx`` (the TorchScript exporter,
traced, opset 17, ``dynamic_axes``) and ``dynamo_<name>.onnx`` (the dynamo exporter,
``dynamic_shapes`` of ``torch.export.Dim``; one self-contained file), each beside an ``.npz``
holding, for each run ``k``, the inputs (``run<k>.input:<name>``) and PyTorch's own outputs
(``run<k>.output:<i>``). There are two runs at other sizes than the export's sample (batch 1
and 2; images 64x64 and 96x72; sequences 7 and 12 long), and every export must give
PyTorch's outputs on ONNX Runtime on each (within 1e-4) or the script fails. A module the
dynamo exporter cannot export is skipped with a note. Run from the repository root with torch
installed (``pip install torch==2.13.0 onnxscript``):

    python scripts/export_vision_models.py [OUTDIR] [--only NAME ...]
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import torch
from export_torch_models import out_dir_and_only, save_runs
from torch import Tensor, nn
from torch_vision_exports import (
    FPN,
    TCN,
    DetectionHead,
    MobileNetV3,
    RecurrentStack,
    ResNet,
    TransformerEncoder,
    UNet,
    ViT,
)

OPSET = 17
DYNAMO_OPSET = 18
ATOL = 1e-4
# Dynamo exports that torch writes but that give other numbers or fail on ONNX Runtime at
# other sizes than the sample's: skipped with a note while they do (an unlisted one fails).
DYNAMO_BROKEN = {
    "gru_lstm": "torch 2.13's dynamo exporter fixes the sequence length of a stacked "
    "GRU + LSTM to the sample's (a Reshape to [9, -1, 24] between the layers)",
}

Inputs = tuple[Tensor, ...]


@dataclass
class Case:
    name: str
    make: Callable[[], nn.Module]
    input_names: list[str]
    output_names: list[str]
    axes: dict[str, dict[int, str]]  # input -> {axis: dim name}
    sample: Inputs  # what the exporters trace
    runs: tuple[Inputs, Inputs]  # what ONNX Runtime is checked on
    max_sizes: dict[str, int] | None = None  # torch.export.Dim's max, by dim name


def _cases() -> list[Case]:
    g = torch.Generator().manual_seed(1)

    def rand(*shape: int) -> Tensor:
        return torch.randn(*shape, generator=g)

    def images() -> tuple[Inputs, tuple[Inputs, Inputs]]:
        return (rand(2, 3, 80, 64),), ((rand(1, 3, 64, 64),), (rand(2, 3, 96, 72),))

    image_axes = {"image": {0: "batch", 2: "height", 3: "width"}}
    cases = []
    for name, make, outputs in (
        ("resnet", ResNet, ["logits"]),
        ("mobilenet_v3", MobileNetV3, ["logits"]),
        ("unet", UNet, ["mask"]),
        ("fpn", FPN, ["p3", "p4", "p5", "pool"]),
        ("detection_head", DetectionHead, ["scores", "boxes"]),
        ("vit", ViT, ["logits"]),
    ):
        sample, runs = images()
        cases.append(Case(name, make, ["image"], outputs, image_axes, sample, runs))
    cases.append(
        Case(
            "transformer_encoder",
            TransformerEncoder,
            ["x", "lengths"],
            ["frames", "pooled"],
            {"x": {0: "batch", 1: "seq"}, "lengths": {0: "batch"}},
            (rand(3, 9, 8), torch.tensor([9, 4, 6])),
            ((rand(1, 7, 8), torch.tensor([7])), (rand(2, 12, 8), torch.tensor([5, 12]))),
            max_sizes={"seq": 64},
        )
    )
    cases.append(
        Case(
            "gru_lstm",
            RecurrentStack,
            ["x"],
            ["frames", "last"],
            {"x": {0: "batch", 1: "seq"}},
            (rand(3, 9, 8),),
            ((rand(1, 7, 8),), (rand(2, 12, 8),)),
        )
    )
    cases.append(
        Case(
            "tcn",
            TCN,
            ["x"],
            ["frames"],
            {"x": {0: "batch", 2: "time"}},
            (rand(3, 4, 9),),
            ((rand(1, 4, 7),), (rand(2, 4, 12),)),
        )
    )
    return cases


def _outputs(result: object) -> list[np.ndarray]:
    items = result if isinstance(result, tuple | list) else (result,)
    return [t.detach().numpy() for t in items]


def _reference(case: Case) -> list[list[np.ndarray]]:
    module = case.make().eval()
    with torch.no_grad():
        return [_outputs(module(*inputs)) for inputs in case.runs]


def _check_on_ort(path: Path, case: Case, expected: list[list[np.ndarray]]) -> None:
    """ONNX Runtime's outputs on every run are PyTorch's, or AssertionError."""
    options = ort.SessionOptions()
    options.log_severity_level = 4  # (a failing run raises with the reason)
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    for k, (inputs, want) in enumerate(zip(case.runs, expected, strict=True)):
        feeds = {n: t.numpy() for n, t in zip(case.input_names, inputs, strict=True)}
        got = session.run(None, feeds)
        assert len(got) == len(want), f"{path.name} run {k}: {len(got)} outputs, {len(want)}"
        for i, (a, b) in enumerate(zip(got, want, strict=True)):
            np.testing.assert_allclose(
                a, b, rtol=0, atol=ATOL, err_msg=f"{path.name} run {k} output {i}"
            )


def _symbolic_inputs(model: onnx.ModelProto, case: Case) -> None:
    """Each of the case's dynamic input dims is a dim_param in the model, or AssertionError."""
    inputs = {i.name: i for i in model.graph.input}
    for name, axes in case.axes.items():
        dims = inputs[name].type.tensor_type.shape.dim
        for axis in axes:
            assert dims[axis].dim_param and not dims[axis].HasField("dim_value"), (
                f"{case.name}: input {name} dim {axis} is not symbolic: {dims[axis]}"
            )


def _strip_node_metadata(graph: onnx.GraphProto) -> None:
    """Drop the dynamo exporter's per-node metadata (stack traces with this machine's paths,
    FX nodes, module scopes: most of a small model's bytes) and doc strings, in every body."""
    for node in graph.node:
        del node.metadata_props[:]
        node.doc_string = ""
        for attr in node.attribute:
            if attr.type == onnx.AttributeProto.GRAPH:
                _strip_node_metadata(attr.g)
            for body in attr.graphs:
                _strip_node_metadata(body)


def _save(out_dir: Path, name: str, model: onnx.ModelProto, case: Case, expected: list) -> Path:
    model.producer_name = "pytorch"
    _strip_node_metadata(model.graph)
    for function in model.functions:
        for node in function.node:
            del node.metadata_props[:]
    onnx.checker.check_model(model, full_check=True)
    _symbolic_inputs(model, case)
    path = out_dir / f"{name}.onnx"
    onnx.save(model, path)  # (small: the initializers stay in the file)
    save_runs(
        out_dir / f"{name}.npz", case.input_names, list(zip(case.runs, expected, strict=True))
    )
    _check_on_ort(path, case, expected)
    return path


def export_torchscript(case: Case, out_dir: Path, expected: list) -> Path:
    module = case.make().eval()
    scratch = out_dir / f"ts_{case.name}.tmp.onnx"
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            module,
            case.sample,
            str(scratch),
            dynamo=False,
            opset_version=OPSET,
            input_names=case.input_names,
            output_names=case.output_names,
            dynamic_axes=case.axes,
        )
    model = onnx.load(scratch)
    scratch.unlink()
    return _save(out_dir, f"ts_{case.name}", model, case, expected)


def export_dynamo(case: Case, out_dir: Path, expected: list) -> Path | None:
    module = case.make().eval()
    dims: dict[str, torch.export.Dim] = {}
    for axes in case.axes.values():
        for dim_name in axes.values():
            top = (case.max_sizes or {}).get(dim_name)
            dims[dim_name] = (
                torch.export.Dim(dim_name, min=1, max=top)
                if top
                else torch.export.Dim(dim_name, min=1)
            )
    dynamic_shapes = tuple(
        {axis: dims[d] for axis, d in case.axes.get(n, {}).items()} for n in case.input_names
    )
    try:
        with warnings.catch_warnings(), torch.no_grad():
            warnings.simplefilter("ignore")
            program = torch.onnx.export(
                module,
                case.sample,
                dynamo=True,
                opset_version=DYNAMO_OPSET,
                input_names=case.input_names,
                output_names=case.output_names,
                dynamic_shapes=dynamic_shapes,
            )
    except Exception as error:
        first = str(error).strip().splitlines()[0] if str(error).strip() else ""
        print(f"  note: dynamo_{case.name} skipped: {type(error).__name__}: {first[:200]}")
        return None
    assert program is not None
    # program.model_proto holds the initializers: saved with onnx, one self-contained file
    name = f"dynamo_{case.name}"
    if case.name not in DYNAMO_BROKEN:
        return _save(out_dir, name, program.model_proto, case, expected)
    try:
        path = _save(out_dir, name, program.model_proto, case, expected)
    except Exception as error:
        for suffix in (".onnx", ".npz"):
            (out_dir / f"{name}{suffix}").unlink(missing_ok=True)
        first = str(error).strip().splitlines()[0][:160]
        print(
            f"  note: {name} skipped: {DYNAMO_BROKEN[case.name]} ({type(error).__name__}: {first})"
        )
        return None
    print(f"  note: {name} now matches PyTorch: drop it from DYNAMO_BROKEN")
    return path


def _describe(path: Path) -> str:
    model = onnx.load(path)
    return f"{path.name}: {len(model.graph.node)} nodes, {path.stat().st_size / 1024:.1f} KB"


def main(argv: list[str]) -> int:
    """``[OUTDIR] [--only NAME ...]``: every case, or only the named ones."""
    out_dir, only = out_dir_and_only(argv, Path("sample_models") / "vision")
    torch.backends.mha.set_fastpath_enabled(False)  # (the exporters take no fused attention)
    for case in _cases():
        if only is not None and case.name not in only:
            continue
        expected = _reference(case)
        print(_describe(export_torchscript(case, out_dir, expected)))
        path = export_dynamo(case, out_dir, expected)
        if path is not None:
            print(_describe(path))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

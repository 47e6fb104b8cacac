"""Export models that others wrote (timm, torchvision) with sequence ops, and their outputs.

Writes, for each case, ``sample_models/wild/<name>.onnx`` and ``<name>.npz`` with the inputs
and PyTorch's own outputs (``run<k>.input:<name>``, ``run<k>.output:<i>``), so that the tests
check seqpasses against PyTorch without torch installed. Needs torch, torchvision and timm:

    python -m venv tv && tv/bin/pip install torch==2.14.1 torchvision==0.29.1 timm
    tv/bin/python scripts/export_wild_models.py [OUTDIR] [--only NAME ...]

(torchvision's wheels on the package index are CUDA builds whose compiled ops do not load with
the CPU-only torch 2.13.0 on this machine; torch 2.14.1 with torchvision 0.29.1 are a matching
pair that runs on the CPU. timm needs torchvision only for pure-Python pieces.)

The models are scripted whole (``torch.jit.script``) and exported with the TorchScript exporter,
which keeps their lists as sequence ops. Small configurations of the architectures keep the
files small; the sequence-op structure is the architecture's own. Tried and not exportable
this way (faults of the TorchScript exporter, not of the models): timm's DenseNet
(``prim::isinstance``), DLA ("adding dynamic tensor list to another"), HRNet, and
torchvision's FeaturePyramidNetwork ("Couldn't lower all tuples").
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
import torch
from torch import nn


@dataclass
class Case:
    name: str
    make: Callable[[], nn.Module]
    shape: tuple[int, ...]  # the input's shape
    opset: int
    runs: int = 2


def _res2net() -> nn.Module:
    from timm.models.res2net import Bottle2neck
    from timm.models.resnet import ResNet

    torch.manual_seed(0)
    return ResNet(
        block=Bottle2neck,
        layers=(1, 1, 1, 1),
        channels=(8, 16, 32, 64),
        base_width=26,
        block_args={"scale": 4},
        num_classes=10,
    )


def _vovnet() -> nn.Module:
    from timm.models.vovnet import VovNet

    torch.manual_seed(0)
    cfg = {
        "stem_chs": [16, 16, 32],
        "stage_conv_chs": [16, 24, 32, 40],
        "stage_out_chs": [32, 48, 64, 80],
        "layer_per_block": 3,
        "block_per_stage": [1, 1, 1, 1],
        "residual": True,
        "depthwise": False,
        "attn": "ese",
    }
    return VovNet(cfg, num_classes=10)


def _timm(name: str, **kwargs: object) -> Callable[[], nn.Module]:
    def make() -> nn.Module:
        import timm

        torch.manual_seed(0)
        return timm.create_model(name, pretrained=False, scriptable=True, **kwargs)

    return make


CASES = [
    # timm's RDNet: dense blocks concatenate a growing list of features (torch.cat of a
    # list appended in a loop), which the scripted export keeps as sequences. A narrow
    # configuration whose float32 logits ONNX Runtime's fusions move by ~1e-6 (the full
    # rdnet_tiny: ~2e-5), so --check must compare with the fusions off.
    Case(
        "ts11_rdnet_mini",
        _timm(
            "rdnet_tiny",
            growth_rates=(64, 64, 32, 32, 16, 16, 16),
            num_blocks_list=(1, 1, 1, 1, 1, 1, 1),
            num_init_features=32,
        ),
        (1, 3, 64, 64),
        11,
    ),
    # timm's Res2Net block: torch.split of the channels, a loop appending each scale's output
    # to a list, torch.cat of the list (40 sequence ops at four stages).
    Case("ts17_res2net_mini", _res2net, (1, 3, 64, 64), 17),
    # timm's VoVNet (eSE): each one-shot aggregation block appends every layer's output to a
    # list in a loop and concatenates it (28 sequence ops).
    Case("ts17_vovnet_mini", _vovnet, (1, 3, 64, 64), 17),
]


def export(case: Case, out_dir: Path) -> None:
    module = torch.jit.script(case.make().eval())
    generator = torch.Generator().manual_seed(1)
    runs = [torch.randn(*case.shape, generator=generator) for _ in range(case.runs)]
    path = out_dir / f"{case.name}.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            module,
            (runs[0],),
            str(path),
            dynamo=False,
            opset_version=case.opset,
            input_names=["x"],
        )
    model = onnx.load(path)
    onnx.checker.check_model(model, full_check=True)
    arrays: dict[str, np.ndarray] = {}
    with torch.no_grad():
        for k, x in enumerate(runs):
            outputs = module(x)
            outputs = outputs if isinstance(outputs, tuple | list) else (outputs,)
            arrays[f"run{k}.input:x"] = x.numpy()
            for i, out in enumerate(outputs):
                arrays[f"run{k}.output:{i}"] = out.numpy()
    np.savez(out_dir / f"{case.name}.npz", **arrays)  # type: ignore[arg-type]


def main(argv: list[str]) -> int:
    only = set(argv[argv.index("--only") + 1 :]) if "--only" in argv else None
    argv = argv[: argv.index("--only")] if "--only" in argv else argv
    out_dir = Path(argv[0]) if argv else Path("sample_models") / "wild"
    out_dir.mkdir(parents=True, exist_ok=True)
    for case in CASES:
        if only is None or case.name in only:
            export(case, out_dir)
            print(case.name)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

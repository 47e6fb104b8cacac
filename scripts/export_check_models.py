"""Export the real models the --check cost is measured on (not committed: 5-32 MB each).

    python -m venv tv && tv/bin/pip install torch==2.14.1 torchvision==0.29.1 timm onnx
    tv/bin/python scripts/export_check_models.py OUTDIR
    python benchmarks/check_cost.py OUTDIR/*.onnx

Each model is scripted whole (``torch.jit.script``) and exported with the TorchScript
exporter, which keeps its lists (torchvision's DenseNet concatenates a list of features,
timm's MixNet splits and concatenates channel groups, GoogLeNet's inception blocks
concatenate branches) as sequence ops.
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import torch


def main() -> None:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "check_models")
    out.mkdir(parents=True, exist_ok=True)
    import timm
    import torchvision

    torch.manual_seed(0)
    models = {
        "mixnet_s": timm.create_model("mixnet_s", pretrained=False),
        "densenet121": torchvision.models.densenet121(),
        "googlenet": torchvision.models.googlenet(aux_logits=False, init_weights=True),
    }
    x = torch.randn(1, 3, 224, 224)
    for name, model in models.items():
        model.eval()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            scripted = torch.jit.script(model)
            torch.onnx.export(
                scripted,
                (x,),
                out / f"{name}.onnx",
                opset_version=17,
                dynamo=False,
                input_names=["x"],
            )
        print(f"wrote {out / name}.onnx")


if __name__ == "__main__":
    main()

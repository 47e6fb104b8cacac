"""Follow the model through ``seqpasses optimize IN -o OUT --check``: which modules hand it on.

Runs the CLI in this process under a profiler hook and records every call into a seqpasses
function that takes a model (an ``onnx.ModelProto`` or an ``onnx_ir.Model``) from a function
of another seqpasses module. Each such call is a *hop* (counted once per pair of modules);
a hop is a *reversal* when it goes against the layering, from a lower layer to a higher one
(for example ``pipeline`` calling back into ``api``). The layers, top to bottom:

    cli > api > pipeline > checks, verification, io, inference > passes > walk > transfer
    > core, report, options, errors

Usage: ``python scripts/trace_flow.py MODEL.onnx [--src SRC]`` (``--src``: the ``src`` folder
of another checkout, to measure an older version the same way).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from types import FrameType
from typing import Any

LAYERS = [
    ("program", "cli"),
    ("api", "inference"),
    ("pipeline", "loading"),
    # (and the top-level modules older versions had in their place)
    ("checks", "verification", "io", "wire", "admit", "selfcheck", "fullcheck", "verify"),
    ("passes",),
    ("transfer",),
    ("walk",),
    (
        "core",
        "report",
        "options",
        "errors",
        "transaction",
        "terminal",
        "interrupts",
        "progress",
    ),
]


def _module(filename: str, root: str) -> str | None:
    if not filename.startswith(root):
        return None
    rel = Path(filename).relative_to(root).with_suffix("")
    parts = [p for p in rel.parts if p != "__init__"]
    return ".".join(parts) or "seqpasses"


def _layer(module: str) -> int:
    head = module.split(".")[0]
    for rank, names in enumerate(LAYERS):
        if head in names:
            return rank
    return len(LAYERS)


def _wing(module: str) -> int:
    return _layer(module)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", type=Path)
    parser.add_argument("--src", type=Path, default=Path(__file__).parent.parent / "src")
    args = parser.parse_args()
    sys.path.insert(0, str(args.src.resolve()))
    import onnx
    import onnx_ir as ir

    import seqpasses
    from seqpasses.cli import main as cli_main

    root = str(Path(seqpasses.__file__).parent) + "/"
    kinds = (onnx.ModelProto, ir.Model)
    hops: dict[tuple[str, str], int] = {}

    def hook(frame: FrameType, event: str, arg: Any) -> None:
        if event != "call":
            return
        callee = _module(frame.f_code.co_filename, root)
        if callee is None:
            return
        code = frame.f_code
        names = code.co_varnames[: code.co_argcount + code.co_kwonlyargcount]
        if not any(isinstance(frame.f_locals.get(n), kinds) for n in names):
            return
        caller_frame = frame.f_back
        while caller_frame is not None:
            caller = _module(caller_frame.f_code.co_filename, root)
            if caller is not None:
                break
            caller_frame = caller_frame.f_back
        else:
            return
        if caller != callee:
            hops.setdefault((caller, callee), len(hops))

    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "out.onnx"
        sys.setprofile(hook)
        try:
            code = cli_main(["optimize", str(args.model), "-o", str(out), "--check"])
        except SystemExit as stop:
            code = stop.code  # type: ignore[assignment]
        finally:
            sys.setprofile(None)
    reversals = 0
    for caller, callee in sorted(hops, key=hops.__getitem__):
        back = _layer(callee) < _layer(caller)
        reversals += back
        print(f"{caller:>34} -> {callee:<34}{'  (reversal)' if back else ''}")
    wings = {(_wing(a), _wing(b)) for a, b in hops if _wing(a) != _wing(b)}
    print(
        f"exit {code}: {len(hops)} hops between modules ({len(wings)} between layers), "
        f"{reversals} reversals"
    )


if __name__ == "__main__":
    main()

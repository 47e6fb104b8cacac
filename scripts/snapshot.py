"""Everything seqpasses says of a corpus of models, to compare two versions byte for byte.

A change that means to keep behaviour (a refactoring of the engine) is checked by running
this before and after it on the same corpus and comparing: for each model, the optimized
model's bytes, its report (rewrites, what was left and why, notes, op counts), what
``inspect`` prints, what ``shapes --all --json`` prints and the bytes ``shapes -o`` writes,
with the default options and with ``--strict-spec --freeze-inputs``; an error's type and line
where there is one.

    python scripts/snapshot.py corpus DIR          # gather the corpus into DIR (once)
    python scripts/snapshot.py run DIR OUT         # what this checkout says of it
    python scripts/snapshot.py compare OUT1 OUT2   # the models on which they differ

The corpus: the sample models, ``../shared``'s repros and conformance models (when there),
the ``before`` model of every rule file, programs the property tests generate (hypothesis,
derandomized: the same ones every time for one hypothesis version) and the benchmark's
shapes at a small size.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import json
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import onnx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "benchmarks"))

GENERATED = 40
"""Programs drawn from each of the property tests' generators."""


def _generated() -> Iterator[tuple[str, onnx.ModelProto]]:
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    from fuzz_programs import loop_programs, nested_programs, programs
    from fuzz_stacked import carried_programs, stacked_programs

    makers: dict[str, st.SearchStrategy[Any]] = {
        "programs": programs(),
        "loops": loop_programs(),
        "nested": nested_programs(),
        "stacked": stacked_programs(),
        "carried": carried_programs(),
    }
    for name, strategy in makers.items():
        drawn: list[onnx.ModelProto] = []

        def keep(value: Any, drawn: list[onnx.ModelProto] = drawn) -> None:
            drawn.append(value if isinstance(value, onnx.ModelProto) else value.model)

        @settings(
            max_examples=GENERATED,
            derandomize=True,
            database=None,
            deadline=None,
            suppress_health_check=list(HealthCheck),
        )
        @given(strategy)
        def collect(value: Any) -> None:
            keep(value)

        collect()
        for number, model in enumerate(drawn):
            yield f"generated-{name}-{number:03d}", model


def gather(dest: Path) -> int:
    """Write the corpus into ``dest`` (one ``.onnx`` per model); how many."""
    from shapes import SHAPES

    from helpers import RULES, SAMPLES, SHARED, parse_rule

    dest.mkdir(parents=True, exist_ok=True)
    count = 0

    def put(name: str, model: onnx.ModelProto | bytes) -> None:
        nonlocal count
        data = model if isinstance(model, bytes) else model.SerializeToString()
        (dest / f"{name.replace('/', '--')}.onnx").write_bytes(data)
        count += 1

    for path in sorted(SAMPLES.rglob("*.onnx")):
        put(f"sample-{path.relative_to(SAMPLES).with_suffix('')}", path.read_bytes())
    for path in sorted(SHARED.glob("*/**/*.onnx")) if SHARED.is_dir() else []:
        if any(p.name.endswith(".data") for p in path.parent.iterdir()):
            continue  # (external data would not follow the model into the corpus)
        put(f"shared-{path.relative_to(SHARED).with_suffix('')}", path.read_bytes())
    for path in sorted(RULES.glob("*.rule")):
        put(f"rule-{path.stem}", parse_rule(path).before)
    for name, model in _generated():
        put(name, model)
    for name, make in SHAPES.items():
        put(f"bench-{name.replace(' ', '-')}", make(300))
    return count


def _captured(call: Callable[[], Any]) -> tuple[str, Any]:
    """What ``call`` prints, and what it returns (or its error, as text)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        try:
            returned = call()
        except Exception as error:
            returned = f"{type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}"
    return out.getvalue(), returned


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _one(path: Path, out: Path, variant: str, strict: bool) -> dict[str, Any]:
    import argparse as ap

    from seqpasses.cli.views import inspect_command, shapes_command
    from seqpasses.options import Options
    from seqpasses.pipeline import load, optimize_loaded
    from seqpasses.report import Report

    options = Options(infer_shapes=True, strict_spec=strict, freeze_inputs=strict)
    said: dict[str, Any] = {}

    def optimize() -> dict[str, Any]:
        report = Report()
        loaded = load(path, options)
        result = optimize_loaded(loaded, options, report)
        data = result.proto.SerializeToString(deterministic=True)
        (out / f"{path.stem}.{variant}.onnx").write_bytes(data)
        found = report.as_dict()
        found.pop("timings_s", None)
        return {"model": _digest(data), "report": found}

    _, said["optimize"] = _captured(optimize)

    def optimize_ir() -> dict[str, Any]:  # (no admission: what the property tests run)
        import onnx_ir as ir

        import seqpasses

        report = Report()
        model = ir.serde.deserialize_model(onnx.load(path))
        seqpasses.optimize_ir(model, report=report, strict_spec=strict, freeze_inputs=strict)
        data = ir.serde.serialize_model(model).SerializeToString(deterministic=True)
        found = report.as_dict()
        found.pop("timings_s", None)
        return {"model": _digest(data), "report": found}

    _, said["optimize_ir"] = _captured(optimize_ir)
    said["inspect"] = _captured(lambda: inspect_command(path, options))[0]
    if not strict:
        args = ap.Namespace(
            input=path,
            output=None,
            input_shape=[],
            strict_input=False,
            strict=False,
            quiet=False,
            json=True,
            all=True,
        )
        said["shapes"] = _captured(lambda: shapes_command(args))[0]
        written = out / f"{path.stem}.shapes.onnx"
        args = ap.Namespace(**{**vars(args), "output": written, "quiet": True, "json": False})
        _, code = _captured(lambda: shapes_command(args))
        said["shapes_written"] = _digest(written.read_bytes()) if written.exists() else code
    return said


def run(corpus: Path, out: Path) -> int:
    """What this checkout says of every model of ``corpus``, into ``out`` (a JSON each)."""
    out.mkdir(parents=True, exist_ok=True)
    models = sorted(corpus.glob("*.onnx"))
    start = time.perf_counter()
    for number, path in enumerate(models):
        said = {
            variant: _one(path, out, variant, strict)
            for variant, strict in (("default", False), ("strict", True))
        }
        (out / f"{path.stem}.json").write_text(json.dumps(said, indent=1, sort_keys=True) + "\n")
        if number % 50 == 0:
            print(f"{number}/{len(models)} ({time.perf_counter() - start:.0f} s)", flush=True)
    return len(models)


def compare(first: Path, second: Path) -> int:
    """The models on which two runs differ, and where; how many."""
    differ = 0
    names = sorted({p.name for p in first.glob("*.json")} | {p.name for p in second.glob("*.json")})
    for name in names:
        a, b = first / name, second / name
        if not a.exists() or not b.exists():
            print(f"{name}: only in {'second' if not a.exists() else 'first'}")
            differ += 1
            continue
        left, right = json.loads(a.read_text()), json.loads(b.read_text())
        if left == right:
            continue
        differ += 1
        for variant in left:
            for key in left[variant]:
                if left[variant][key] != right.get(variant, {}).get(key):
                    print(f"{name}: {variant} {key} differs")
    print(f"{len(names)} models, {differ} differ")
    return differ


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("corpus").add_argument("dest", type=Path)
    running = sub.add_parser("run")
    running.add_argument("corpus", type=Path)
    running.add_argument("out", type=Path)
    comparing = sub.add_parser("compare")
    comparing.add_argument("first", type=Path)
    comparing.add_argument("second", type=Path)
    args = parser.parse_args()
    if args.command == "corpus":
        print(f"{gather(args.dest)} models in {args.dest}")
        return 0
    if args.command == "run":
        print(f"{run(args.corpus, args.out)} models run")
        return 0
    return 1 if compare(args.first, args.second) else 0


if __name__ == "__main__":
    sys.exit(main())

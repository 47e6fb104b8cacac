"""Shapes three tools claim, settled by running the models: seqpasses, onnx's inference and
ONNX Runtime's symbolic shape inference (what transformer-optimization and TensorRT users run).

    python scripts/shape_compare.py [MODEL_OR_DIR ...] [--each] [--bodies]

(default: every model under sample_models/). For each model, every value of the main graph
gets each tool's claim (a rank and dims: numbers, named symbols, or unknown; for a sequence,
the shape its elements share). ONNX Runtime then runs the model on its stored inputs (the
``.npz`` beside it) or on drawn ones, returning every value, and each claim is checked: a
number that differs from the run, a rank that differs, or one symbol bound to two sizes is a
*disproved* claim. Counted per tool over the values it claims without being disproved:
integer dims, ranked values and named symbols (``unk__N`` and other generated names are not
named). A tool that crashes on a model claims nothing there. Prints a Markdown table of the
totals (``--each``: one row per model). ``--bodies`` adds the same table for the values inside
Loop, If, Scan and SequenceMap bodies: each tool's claims are the ``value_info`` of the bodies
of the model it writes, settled by ``onnx.reference`` runs that record every body value of
every iteration (ONNX Runtime returns none of them).
"""

from __future__ import annotations

import contextlib
import io
import re
import sys
import tempfile
import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime as ort

import seqpasses
from seqpasses.verification import load_inputs, random_inputs

ROOT = Path(__file__).resolve().parent.parent
Claim = tuple[int | str | None, ...]
_GENERATED = re.compile(r"unk__\d+|_dim_\d+\b|_o\d+__d\d+\b|^__|^\?$")
"""Made-up names, alone or in an expression (ONNX Runtime's ``Loop_9_o0__d0 + 1``,
seqpasses' ``min(unk__115,1000000000)``): a claim of a size no one named."""


def _type_claim(type_proto: onnx.TypeProto) -> Claim | None:
    t = type_proto
    while t.WhichOneof("value") in ("sequence_type", "optional_type"):
        t = getattr(t, str(t.WhichOneof("value"))).elem_type
    if t.WhichOneof("value") != "tensor_type" or not t.tensor_type.HasField("shape"):
        return None
    dims: list[int | str | None] = []
    for dim in t.tensor_type.shape.dim:
        if dim.HasField("dim_value") and dim.dim_value >= 0:
            dims.append(int(dim.dim_value))
        elif dim.dim_param:
            dims.append(dim.dim_param)
        else:
            dims.append(None)
    return tuple(dims)


def _proto_claims(model: onnx.ModelProto) -> dict[str, Claim]:
    graph = model.graph
    claims: dict[str, Claim] = {}
    for value in [*graph.value_info, *graph.output]:
        claim = _type_claim(value.type)
        if claim is not None:
            claims[value.name] = claim
    return claims


def onnx_claims(model: onnx.ModelProto) -> dict[str, Claim] | str:
    try:
        return _proto_claims(onnx.shape_inference.infer_shapes(model, data_prop=True))
    except Exception as error:
        return f"{type(error).__name__}"


def ort_claims(model: onnx.ModelProto) -> dict[str, Claim] | str:
    from onnxruntime.tools.symbolic_shape_infer import SymbolicShapeInference

    try:
        # ORT's inference writes sym_shape_infer_temp.onnx into the working folder.
        with (
            tempfile.TemporaryDirectory() as scratch,
            contextlib.chdir(scratch),
            contextlib.redirect_stdout(io.StringIO()),
            warnings.catch_warnings(),
        ):
            warnings.simplefilter("ignore")
            inferred = SymbolicShapeInference.infer_shapes(model, auto_merge=True)
    except Exception as error:
        return f"{type(error).__name__}"
    if inferred is None:
        return "gave up"
    return _proto_claims(inferred)


def seqpasses_claims(model: onnx.ModelProto) -> dict[str, Claim] | str:
    try:
        facts = seqpasses.shape_facts(model)
    except Exception as error:
        return f"{type(error).__name__}"
    return {f.name: f.shape for f in facts.values if f.graph == "main" and f.shape is not None}


def _body_claims(model: onnx.ModelProto) -> dict[str, Claim]:
    """What a model declares of the values inside its Loop, If, Scan and SequenceMap bodies
    (at any depth; ``value_info`` only, and not of a body's inputs and outputs: the model's
    own signature)."""
    claims: dict[str, Claim] = {}
    graphs = [attr.g for n in model.graph.node for attr in n.attribute if attr.type == attr.GRAPH]
    while graphs:
        graph = graphs.pop()
        signature = {v.name for v in (*graph.input, *graph.output)}
        for value in graph.value_info:
            if value.name in signature:
                continue  # (ONNX Runtime's tool lists a body's outputs there again)
            claim = _type_claim(value.type)
            if claim is not None:
                claims[value.name] = claim
        for node in graph.node:
            graphs.extend(attr.g for attr in node.attribute if attr.type == attr.GRAPH)
    return claims


def body_claims(tool: str, model: onnx.ModelProto) -> dict[str, Claim] | str:
    """Each tool's claims inside bodies: the model it writes (seqpasses: ``infer_shapes``,
    what ``seqpasses shapes -o`` writes), its bodies' ``value_info``."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if tool == "seqpasses":
                return _body_claims(seqpasses.infer_shapes(model))
            if tool == "onnx":
                return _body_claims(onnx.shape_inference.infer_shapes(model, data_prop=True))
            from onnxruntime.tools.symbolic_shape_infer import SymbolicShapeInference

            with (
                tempfile.TemporaryDirectory() as scratch,
                contextlib.chdir(scratch),
                contextlib.redirect_stdout(io.StringIO()),
            ):
                inferred = SymbolicShapeInference.infer_shapes(model, auto_merge=True)
            return "gave up" if inferred is None else _body_claims(inferred)
    except Exception as error:
        return f"{type(error).__name__}"


def body_shapes(path: Path, model: onnx.ModelProto) -> list[dict[str, list[tuple[int, ...]]]]:
    """Per input set onnx.reference runs: the shapes each value inside a body takes, every
    iteration and branch taken (a sequence's: its elements'). ONNX Runtime returns no value
    of a body; onnx.reference builds each body's evaluator from the class of the one it runs,
    so a subclass sees every body run."""
    from onnx.reference import ReferenceEvaluator

    seen: dict[str, list[tuple[int, ...]]] = {}

    class Recording(ReferenceEvaluator):  # type: ignore[misc]
        def run(  # type: ignore[override]
            self,
            output_names: Any,
            feed_inputs: dict[str, Any],
            attributes: dict[str, Any] | None = None,
            intermediate: bool = False,
        ) -> Any:
            results = super().run(None, feed_inputs, attributes, intermediate=True)
            if self is not top:
                for name, value in results.items():
                    if name in feed_inputs or value is None:
                        continue
                    elements = value if isinstance(value, list) else [value]
                    seen.setdefault(name, []).extend(tuple(np.shape(e)) for e in elements)
            if intermediate:
                return results
            return [results[n] for n in (output_names or self.output_names)]

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            top = Recording(model)
    except Exception:
        return []
    runs = []
    for feeds in _feeds(path, model):
        seen = {}
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                top.run(None, dict(feeds))
        except Exception:
            continue
        runs.append(seen)
    return runs


def _feeds(path: Path, model: onnx.ModelProto) -> list[dict[str, Any]]:
    stored = path.with_suffix(".npz")
    if stored.exists():
        return load_inputs(stored)[:2]
    return [random_inputs(model, seed, scale=scale) for seed in (0, 1) for scale in (1, 16)]


def actual_shapes(path: Path, model: onnx.ModelProto) -> list[dict[str, list[tuple[int, ...]]]]:
    """Per input set ONNX Runtime runs: each main-graph value's shape (a sequence's: its
    elements' shapes)."""
    names = [out for node in model.graph.node for out in node.output if out]
    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    have = {o.name for o in probe.graph.output}
    for name in names:
        if name not in have:
            probe.graph.output.append(onnx.helper.make_empty_tensor_value_info(name))
    options = ort.SessionOptions()
    options.log_severity_level = 4
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    try:
        session = ort.InferenceSession(
            probe.SerializeToString(), options, providers=["CPUExecutionProvider"]
        )
    except Exception:
        return []
    wanted = [o.name for o in session.get_outputs()]
    runs = []
    for feeds in _feeds(path, model):
        try:
            values = session.run(None, dict(feeds))
        except Exception:
            continue
        shapes: dict[str, list[tuple[int, ...]]] = {}
        for name, value in zip(wanted, values, strict=True):
            if isinstance(value, list):
                shapes[name] = [tuple(np.asarray(e).shape) for e in value]
            elif value is not None:
                shapes[name] = [tuple(np.asarray(value).shape)]
        runs.append(shapes)
    return runs


@dataclass
class Tally:
    dims: int = 0
    ranked: int = 0
    symbols: int = 0
    disproved: int = 0
    crashed: int = 0
    examples: list[str] = field(default_factory=list)


_KEYS = ("dims", "ranked", "symbols", "disproved", "crashed")


def _named(dim: object) -> bool:
    return isinstance(dim, str) and not _GENERATED.search(dim)


def settle(
    claims: dict[str, Claim] | str,
    runs: Iterable[dict[str, list[tuple[int, ...]]]],
    tally: Tally,
    where: str,
) -> None:
    if isinstance(claims, str):
        tally.crashed += 1
        return
    runs = list(runs)
    for name, claim in claims.items():
        observed = [shape for run in runs for shape in run.get(name, [])]
        if not observed and runs:
            continue  # (not a value ONNX Runtime returns: a sequence's empty list, ...)
        wrong = ""
        binding: dict[str, int] = {}
        for run in runs:
            binding.clear()
            for shape in run.get(name, []):
                if len(shape) != len(claim):
                    wrong = f"rank {len(claim)} vs {shape}"
                    break
                for want, got in zip(claim, shape, strict=True):
                    if isinstance(want, int) and want != got:
                        wrong = f"{claim} vs {shape}"
                    elif _named(want) and binding.setdefault(str(want), got) != got:
                        wrong = f"symbol {want} bound to two sizes"
            if wrong:
                break
        if wrong:
            tally.disproved += 1
            if len(tally.examples) < 8:
                tally.examples.append(f"{where}: {name}: {wrong}")
            continue
        tally.ranked += 1
        tally.dims += sum(isinstance(d, int) for d in claim)
        tally.symbols += sum(_named(d) for d in claim)


def _tallies(
    claims: dict[str, dict[str, Claim] | str],
    runs: list[dict[str, list[tuple[int, ...]]]],
    totals: dict[str, Tally],
    path: Path,
) -> dict[str, Tally]:
    """Each tool's claims on one model settled by ``runs``, added to ``totals``."""
    row = {}
    for name, given in claims.items():
        tally = Tally()
        settle(given, runs, tally, path.name)
        row[name] = tally
        total = totals[name]
        for key in _KEYS:
            setattr(total, key, getattr(total, key) + getattr(tally, key))
        total.examples.extend(tally.examples[: max(0, 8 - len(total.examples))])
    return row


def _print_totals(totals: dict[str, Tally], models: int) -> None:
    print("| tool | integer dims | ranked values | named symbols | disproved claims | crashed on |")
    print("|---|---|---|---|---|---|")
    for name, t in totals.items():
        print(
            f"| {name} | {t.dims} | {t.ranked} | {t.symbols} | {t.disproved} | "
            f"{t.crashed} of {models} |"
        )


def _ahead(rows: list[tuple[Path, dict[str, Tally]]], other: str, says: str) -> str:
    """The models where the tool ``other`` (when it finished) counts more than seqpasses."""
    ahead = [
        (path, key)
        for path, row in rows
        for key in ("dims", "ranked", "symbols")
        if not row[other].crashed and getattr(row[other], key) > getattr(row["seqpasses"], key)
    ]
    return (
        f"models where {says} than seqpasses: {len({p for p, _ in ahead})} of {len(rows)}"
        + "".join(f"\n  {p.name}: more {k}" for p, k in ahead[:12])
    )


def main(argv: list[str]) -> None:
    args = [a for a in argv if not a.startswith("--")]
    each = "--each" in argv
    paths: list[Path] = []
    for given in args or [str(ROOT / "sample_models")]:
        path = Path(given)
        paths.extend(sorted(path.rglob("*.onnx")) if path.is_dir() else [path])
    tools = {"seqpasses": seqpasses_claims, "onnxruntime symbolic": ort_claims, "onnx": onnx_claims}
    totals = {name: Tally() for name in tools}
    rows = []
    bodies = "--bodies" in argv
    inner_totals = {name: Tally() for name in tools}
    inner_rows: list[tuple[Path, dict[str, Tally]]] = []
    for path in paths:
        model = onnx.load(path)
        runs = actual_shapes(path, model)
        rows.append((path, _tallies({n: t(model) for n, t in tools.items()}, runs, totals, path)))
        if bodies and any(
            attr.type == attr.GRAPH for node in model.graph.node for attr in node.attribute
        ):
            claims = {name: body_claims(name, model) for name in tools}
            inner_rows.append(
                (path, _tallies(claims, body_shapes(path, model), inner_totals, path))
            )
    _print_totals(totals, len(paths))
    if each:
        print()
        print("| model | " + " | ".join(f"{n} dims/ranked/symbols/disproved" for n in tools) + " |")
        print("|---|" + "---|" * len(tools))
        for path, row in rows:
            cells = [
                f"{t.dims}/{t.ranked}/{t.symbols}/{t.disproved}" + (" crash" if t.crashed else "")
                for t in row.values()
            ]
            print(
                f"| {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path} | "
                + " | ".join(cells)
                + " |"
            )
    finished = [row for _, row in rows if not row["onnxruntime symbolic"].crashed]
    print()
    print(f"on the {len(finished)} models ONNX Runtime's symbolic inference finishes:")
    print()
    print("| tool | integer dims | ranked values | named symbols | disproved claims |")
    print("|---|---|---|---|---|")
    for name in tools:
        cells = [sum(getattr(row[name], key) for row in finished) for key in _KEYS[:4]]
        print(f"| {name} | " + " | ".join(str(c) for c in cells) + " |")
    print()
    print(_ahead(rows, "onnxruntime symbolic", "ONNX Runtime's symbolic inference knows more"))
    if bodies:
        print()
        print(f"inside the bodies of {len(inner_rows)} models with Loop, If, Scan or SequenceMap:")
        print()
        _print_totals(inner_totals, len(inner_rows))
        for other in ("onnxruntime symbolic", "onnx"):
            print()
            print(_ahead(inner_rows, other, f"{other} knows more inside bodies"))
        for name, total in inner_totals.items():
            for example in total.examples[:5]:
                print(f"  {name} disproved inside bodies: {example}", file=sys.stderr)
    for name, total in totals.items():
        for example in total.examples[:5]:
            print(f"  {name} disproved: {example}", file=sys.stderr)


if __name__ == "__main__":
    main(sys.argv[1:])

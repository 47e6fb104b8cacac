"""A mutation fuzzer of the command line: the sample models, their bytes flipped or cut, or
their structure bent (data types, ranks, dims, arities, names, nesting, attributes, ops,
opsets), run through ``seqpasses`` with random options. Whatever comes in, a run must end in
exit 0, 1, 2 or 4, say a refusal in one line, print no traceback and no "bug in seqpasses",
and stay within 10 s and 1 GiB.

The cases run in-process (``seqpasses.cli.main``) in worker processes that import once, a
few thousand a minute; each case's time is bounded by an alarm and its memory read off the
worker's peak. ``tests/test_mutation_fuzz.py`` runs it in CI for a fixed time; for a long
campaign, or to replay a case:

    python tests/mutation_fuzz.py [--seconds 600] [--seed N] [--jobs 2]
    python tests/mutation_fuzz.py --replay SEED:INDEX

A failure is saved (the model and the command) under ``$TMPDIR/seqpasses-mutants/``.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import multiprocessing
import os
import random
import resource
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import onnx
from onnx import TensorProto as T
from onnx import helper as h

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_models"
SAVED = Path(tempfile.gettempdir()) / "seqpasses-mutants"

SECONDS_BOUND = 10.0
MEMORY_BOUND = 1 << 30  # bytes over the worker's own footprint
GOOD_EXITS = {0, 1, 2, 4}

_DTYPES = [0, -1, 17, 23, 27, 28, 29, 31, 65, 1000, 2**31 - 1, *range(1, 17)]
_DIMS = [-7, -1, 0, 1, 2**31, 2**40, 2**62, 2**63 - 1]
_TEXTS = ["", "\x1b]0;t\x07", "a\nb", "\r", "x" * 300, "é", "\u202e", "dup"]
_OPTIONS = [
    ["--check"],
    ["--check", "--check-runs", "1"],
    ["--strict-spec"],
    ["--freeze-inputs"],
    ["--inline-functions"],
    ["--max-unroll", "0"],
    ["--no-infer-shapes"],
    ["--external-data"],
    ["-v"],
]


def seeds() -> list[tuple[str, bytes]]:
    """The sample models (without external data), by name, in a fixed order."""
    found = []
    for path in sorted(SAMPLES.rglob("*.onnx")):
        data = path.read_bytes()
        found.append((str(path.relative_to(SAMPLES)), data))
    return found


@dataclass
class Case:
    """One mutant: where it came from, its bytes, and the command's options."""

    label: str
    data: bytes
    options: list[str] = field(default_factory=list)
    command: str = "optimize"


# -- mutations ------------------------------------------------------------------------------


def _flip(rng: random.Random, data: bytes) -> tuple[str, bytes]:
    out = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        at = rng.randrange(len(out))
        out[at] = rng.randrange(256)
    return "bytes flipped", bytes(out)


def _cut(rng: random.Random, data: bytes) -> tuple[str, bytes]:
    return "truncated", data[: rng.randrange(1, len(data))]


def _graphs(model: onnx.ModelProto) -> list[onnx.GraphProto]:
    found = [model.graph]
    stack = [model.graph, *model.functions]
    while stack:
        graph = stack.pop()
        for node in graph.node:
            for attr in node.attribute:
                if attr.type == onnx.AttributeProto.GRAPH:
                    found.append(attr.g)
                    stack.append(attr.g)
                elif attr.type == onnx.AttributeProto.GRAPHS:
                    found.extend(attr.graphs)
                    stack.extend(attr.graphs)
    return found


def _nodes(model: onnx.ModelProto) -> list[onnx.NodeProto]:
    nodes = [node for graph in _graphs(model) for node in graph.node]
    nodes.extend(node for function in model.functions for node in function.node)
    return nodes


def _values(model: onnx.ModelProto) -> list[onnx.ValueInfoProto]:
    return [
        info
        for graph in _graphs(model)
        for info in (*graph.input, *graph.output, *graph.value_info)
    ]


def _tensor_types(model: onnx.ModelProto) -> list[onnx.TypeProto.Tensor]:
    found = []
    for info in _values(model):
        kind: onnx.TypeProto = info.type
        while kind.WhichOneof("value") in ("sequence_type", "optional_type"):
            inner = kind.WhichOneof("value")
            kind = getattr(kind, inner).elem_type
        if kind.WhichOneof("value") == "tensor_type":
            found.append(kind.tensor_type)
    return found


def _tensors(model: onnx.ModelProto) -> list[onnx.TensorProto]:
    found = [t for graph in _graphs(model) for t in graph.initializer]
    for node in _nodes(model):
        found.extend(a.t for a in node.attribute if a.type == onnx.AttributeProto.TENSOR)
    return found


def _dtype(rng: random.Random, model: onnx.ModelProto) -> str:
    choices: list[Callable[[int], None]] = []
    for tensor_type in _tensor_types(model):
        choices.append(lambda v, t=tensor_type: setattr(t, "elem_type", v))
    for tensor in _tensors(model):
        choices.append(lambda v, t=tensor: setattr(t, "data_type", v))
    for node in _nodes(model):
        for attr in node.attribute:
            if attr.name in ("to", "dtype"):
                choices.append(lambda v, a=attr: setattr(a, "i", v))
    if not choices:
        return ""
    value = rng.choice(_DTYPES)
    with contextlib.suppress(ValueError):
        rng.choice(choices)(value)
    return f"dtype {value}"


def _rank(rng: random.Random, model: onnx.ModelProto) -> str:
    extra = rng.choice([1, 3, 33, 64, 65, 70])
    if rng.random() < 0.5:
        types = [t for t in _tensor_types(model) if t.HasField("shape")]
        if not types:
            return ""
        shape = rng.choice(types).shape
        for _ in range(extra):
            shape.dim.add().dim_value = 1
    else:
        tensors = _tensors(model)
        if not tensors:
            return ""
        tensor = rng.choice(tensors)
        tensor.dims.extend([1] * extra)
    return f"rank +{extra}"


def _dim(rng: random.Random, model: onnx.ModelProto) -> str:
    value = rng.choice(_DIMS)
    if rng.random() < 0.5:
        dims = [d for t in _tensor_types(model) if t.HasField("shape") for d in t.shape.dim]
        if not dims:
            return ""
        dim = rng.choice(dims)
        if rng.random() < 0.3:
            dim.dim_param = rng.choice([*_TEXTS, "N"])
        else:
            dim.dim_value = value
    else:
        tensors = [t for t in _tensors(model) if t.dims]
        if not tensors:
            return ""
        tensor = rng.choice(tensors)
        tensor.dims[rng.randrange(len(tensor.dims))] = value
    return f"dim {value}"


def _arity(rng: random.Random, model: onnx.ModelProto) -> str:
    nodes = _nodes(model)
    if not nodes:
        return ""
    node = rng.choice(nodes)
    what = rng.choice(["drop input", "add input", "drop output", "add output", "body input"])
    if what == "drop input" and node.input:
        del node.input[rng.randrange(len(node.input))]
    elif what == "add input":
        names = [n for other in nodes for n in other.output] or ["x"]
        node.input.append(rng.choice([*names, ""]))
    elif what == "drop output" and node.output:
        del node.output[rng.randrange(len(node.output))]
    elif what == "add output":
        node.output.append(f"extra{rng.randrange(100)}")
    elif what == "body input":
        bodies = [a.g for a in node.attribute if a.type == onnx.AttributeProto.GRAPH]
        if bodies and bodies[0].input:
            del bodies[0].input[rng.randrange(len(bodies[0].input))]
    return f"{what} of {node.op_type}"


def _name(rng: random.Random, model: onnx.ModelProto) -> str:
    text = rng.choice([*_TEXTS, "\udcff"])
    places: list[Callable[[str], None]] = []
    for node in _nodes(model):
        places.append(lambda v, n=node: setattr(n, "name", v))
        if node.output:
            places.append(lambda v, n=node: n.output.__setitem__(0, v))
    for info in _values(model):
        places.append(lambda v, i=info: setattr(i, "name", v))
    places.append(lambda v: setattr(model, "producer_name", v))
    places.append(lambda v: setattr(model.graph, "name", v))
    with contextlib.suppress(ValueError, UnicodeEncodeError):
        if text == "dup" and _values(model):
            text = rng.choice(_values(model)).name
        rng.choice(places)(text)
    return f"name {text!r}"


def _nest(rng: random.Random, model: onnx.ModelProto) -> str:
    depth = rng.choice([2, 8, 9, 20, 70])
    if rng.random() < 0.5 and model.graph.input:
        info = rng.choice(list(model.graph.input))
        inner = onnx.TypeProto()
        inner.CopyFrom(info.type)
        for _ in range(depth):
            inner = h.make_sequence_type_proto(inner)
        info.type.CopyFrom(inner)
        return f"type nested {depth}"
    graph = model.graph
    condition = h.make_tensor_value_info("c", T.BOOL, [])
    base = onnx.GraphProto()  # (the else branch: the model's own graph, of a fixed size)
    base.CopyFrom(graph)
    base.ClearField("input")
    base.ClearField("initializer")
    for level in range(depth):
        branch = onnx.GraphProto()
        branch.CopyFrom(graph)
        branch.ClearField("input")
        branch.ClearField("initializer")
        branch.name = f"b{level}"
        node = h.make_node(
            "If", ["c"], [o.name for o in graph.output], then_branch=branch, else_branch=base
        )
        graph = h.make_graph(
            [node], f"g{level}", [*model.graph.input, condition], list(model.graph.output)
        )
    model.graph.CopyFrom(graph)
    return f"bodies nested {depth}"


def _attribute(rng: random.Random, model: onnx.ModelProto) -> str:
    attrs = [a for node in _nodes(model) for a in node.attribute if a.type == a.INT]
    if not attrs:
        return ""
    attr = rng.choice(attrs)
    attr.i = rng.choice([-1000, -2, -1, 0, 1, 2, 63, 64, 1000, 2**62])
    return f"attribute {attr.name}={attr.i}"


_OPS = [
    "SequenceAt",
    "SequenceInsert",
    "SequenceErase",
    "SequenceLength",
    "SequenceConstruct",
    "SequenceEmpty",
    "ConcatFromSequence",
    "SplitToSequence",
    "Loop",
    "If",
    "Identity",
    "Concat",
    "Split",
    "Gather",
    "Bogus",
]


def _op(rng: random.Random, model: onnx.ModelProto) -> str:
    nodes = _nodes(model)
    if not nodes:
        return ""
    node = rng.choice(nodes)
    node.op_type = rng.choice(_OPS)
    return f"op -> {node.op_type}"


def _opset(rng: random.Random, model: onnx.ModelProto) -> str:
    if not model.opset_import:
        return ""
    opset = rng.choice(list(model.opset_import))
    opset.version = rng.choice([1, 7, 10, 11, 13, 16, 18, 21, 23, 24, 99])
    if rng.random() < 0.3:
        model.ir_version = rng.choice([1, 3, 4, 7, 8, 10, 11, 99])
    return f"opset {opset.version}"


_STRUCTURAL = [_dtype, _rank, _dim, _arity, _name, _nest, _attribute, _op, _opset]


def _structural(rng: random.Random, data: bytes) -> tuple[str, bytes]:
    model = onnx.ModelProto()
    model.ParseFromString(data)
    done = []
    for _ in range(rng.randint(1, 3)):
        said = rng.choice(_STRUCTURAL)(rng, model)
        if said:
            done.append(said)
    out = model.SerializeToString()
    if rng.random() < 0.15:  # a name made of bytes that are not UTF-8
        names = [n.name for n in _nodes(model) if n.name] + [model.graph.name]
        name = rng.choice([n for n in names if n] or ["g"]).encode("utf-8", "surrogatepass")
        if name and name in out:
            out = out.replace(name, b"\xff\xfe" + name[2:], 1)
            done.append("text not UTF-8")
    return "; ".join(done) or "unchanged", out


def case(seed: int, index: int, models: list[tuple[str, bytes]]) -> Case:
    """The ``index``-th case of campaign ``seed`` (the same every time)."""
    rng = random.Random(f"{seed}:{index}")
    name, data = models[rng.randrange(len(models))]
    roll = rng.random()
    mutate = _flip if roll < 0.3 else _cut if roll < 0.4 else _structural
    try:
        what, mutated = mutate(rng, data)
    except Exception as error:  # (a mutation the protobuf library refuses to make)
        what, mutated = f"mutation refused ({type(error).__name__})", data
    options = [] if rng.random() < 0.4 else list(rng.choice(_OPTIONS))
    command = rng.choices(["optimize", "inspect", "shapes"], weights=[8, 1, 1])[0]
    if command != "optimize":
        options = [o for o in options if o in ("--strict-spec", "--freeze-inputs")]
        if command == "shapes":
            options = []
    return Case(f"{seed}:{index} {name}: {what}", mutated, options, command)


# -- running ------------------------------------------------------------------------------


class _Late(BaseException):
    """The alarm of a case past its time (not an Exception: the CLI must not catch it)."""


def _alarm(signum: int, frame: object) -> None:
    raise _Late


@dataclass
class Outcome:
    label: str
    code: int | None
    stderr: str
    seconds: float
    rss: int  # the worker's peak after the case, in bytes
    problem: str = ""


def _judge(outcome: Outcome, baseline: int) -> str:
    """What is wrong with an outcome ('' when nothing)."""
    if outcome.code is None:
        return f"past {SECONDS_BOUND:g} s"
    if outcome.code not in GOOD_EXITS:
        return f"exit {outcome.code}"
    if "Traceback" in outcome.stderr or "bug in seqpasses" in outcome.stderr:
        return "a traceback or an internal error"
    if outcome.code == 2 and len(outcome.stderr.strip().splitlines()) != 1:
        return "a refusal that is not one line"
    if outcome.seconds > SECONDS_BOUND:
        return f"took {outcome.seconds:.1f} s"
    if outcome.rss - baseline > MEMORY_BOUND:
        return f"peak memory {outcome.rss >> 20} MiB"
    return ""


def run_case(item: Case, folder: Path) -> Outcome:
    """Run one case in this process (the alarm bounds its time)."""
    from seqpasses.cli import main

    model = folder / "in.onnx"
    model.write_bytes(item.data)
    argv = [item.command, str(model)]
    if item.command == "optimize":
        argv += ["-o", str(folder / "out.onnx")]
    argv += item.options
    out, err = io.StringIO(), io.StringIO()
    start = time.perf_counter()
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, SECONDS_BOUND)
    code: int | None
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = main(argv)
            except SystemExit as done:  # (argparse)
                code = done.code if isinstance(done.code, int) else 2
    except _Late:
        code = None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    seconds = time.perf_counter() - start
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    for entry in folder.iterdir():
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink()
    return Outcome(item.label, code, err.getvalue(), seconds, rss)


def _peak_reset(baseline: int) -> int:
    """The footprint a case's run starts from: the resident size now, with the process's peak
    set back to it (Linux: ``/proc/self/clear_refs``); ``baseline`` where that cannot be done
    (the peak then keeps what earlier cases and their making reached)."""
    try:
        with open("/proc/self/clear_refs", "w") as refs:
            refs.write("5")
        status = Path("/proc/self/status").read_text()
    except OSError:
        return baseline
    for line in status.splitlines():
        if line.startswith("VmRSS:"):
            return max(int(line.split()[1]) * 1024, baseline)
    return baseline


ADDRESS_SPACE = 8 << 30
"""A worker's address space: past it an allocation fails (a MemoryError, judged as a fault)
instead of the machine's memory running out."""


def _worker(seed: int, indices: list[int], until: float, pipe: Any) -> None:
    """Run cases in this process, saying which one starts before it runs and what came of
    it after (a case that kills the process is the one that started last)."""
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))
    import seqpasses.cli  # noqa: F401  (imported once, before the clock matters)
    from seqpasses.cli.commands import _load

    _load(argparse.Namespace(command="optimize", check=True))
    models = seeds()
    baseline = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    folder = Path(tempfile.mkdtemp(prefix="seqpasses-fuzz-"))
    try:
        for index in indices:
            if time.time() > until:
                break
            pipe.send(index)
            item = case(seed, index, models)
            # (making a case may take more than running it: 20 nested copies of a body cost
            # the generator 1 GB for 139 MB of model; only what the run adds is judged)
            start = _peak_reset(baseline)
            outcome = run_case(item, folder)
            del item
            outcome.problem = _judge(outcome, start)
            if outcome.problem:
                outcome.label = f"{outcome.label} [{index}]"
            pipe.send(outcome)
            if outcome.rss - start > MEMORY_BOUND and start == baseline:
                break  # (the peak stays: no later case's memory can be told apart)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        pipe.send(None)


def _share(
    context: Any, seed: int, indices: list[int], until: float, models: list[tuple[str, bytes]]
) -> list[Outcome]:
    """Run ``indices`` in worker processes, one after another: when a case kills its worker
    (a native library's abort, say), it is a failure and a new worker goes on after it."""
    outcomes: list[Outcome] = []
    left = list(indices)
    while left and time.time() < until:
        reader, writer = context.Pipe(duplex=False)
        process = context.Process(target=_worker, args=(seed, left, until, writer))
        process.start()
        writer.close()
        current: int | None = None
        finished = False
        while True:
            # (a case stuck in native code past its alarm holds its worker: it is stopped)
            if not reader.poll(2 * SECONDS_BOUND + 30):
                process.kill()
                break
            try:
                message = reader.recv()
            except EOFError:
                break
            if message is None:
                finished = True
                break
            if isinstance(message, int):
                current = message
            else:
                outcomes.append(message)
                left.remove(current)
                current = None
        process.join()
        if finished or current is None:
            break
        died = f"the process ended ({_exit_name(process.exitcode)})"
        label = f"{case(seed, current, models).label} [{current}]"
        outcomes.append(Outcome(label, None, "", 0.0, 0, died))
        left.remove(current)
    return outcomes


def _exit_name(code: int | None) -> str:
    if code is not None and code < 0:
        return signal.Signals(-code).name
    return f"exit {code}"


def campaign(seed: int, count: int, seconds: float, jobs: int = 2) -> list[Outcome]:
    """Run up to ``count`` cases of campaign ``seed`` on ``jobs`` workers at a time, for at
    most ``seconds``; every outcome."""
    import threading

    until = time.time() + seconds
    context = multiprocessing.get_context("fork")
    models = seeds()
    results: list[list[Outcome]] = [[] for _ in range(jobs)]

    def run(k: int) -> None:
        results[k] = _share(context, seed, list(range(k, count, jobs)), until, models)

    threads = [threading.Thread(target=run, args=(k,)) for k in range(jobs)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return [outcome for share in results for outcome in share]


def save(outcome: Outcome, seed: int, models: list[tuple[str, bytes]]) -> Path:
    """Save a failing case's model and command for replaying."""
    index = int(outcome.label.rsplit("[", 1)[1].rstrip("]"))
    item = case(seed, index, models)
    SAVED.mkdir(exist_ok=True)
    path = SAVED / f"{seed}-{index}.onnx"
    path.write_bytes(item.data)
    command = " ".join(["seqpasses", item.command, str(path), *item.options])
    (SAVED / f"{seed}-{index}.txt").write_text(f"{outcome.label}\n{command}\n")
    return path


def _summary(outcomes: list[Outcome]) -> Iterator[str]:
    bad = [o for o in outcomes if o.problem]
    codes: dict[int | None, int] = {}
    for outcome in outcomes:
        codes[outcome.code] = codes.get(outcome.code, 0) + 1
    yield f"{len(outcomes)} cases, {len(bad)} failed; exits {dict(sorted(codes.items(), key=str))}"
    for outcome in bad:
        line = outcome.stderr.strip().splitlines()[-1:] or [""]
        yield f"  {outcome.problem}: {outcome.label}: {line[0][:200]}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=120.0)
    parser.add_argument("--count", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--replay", help="SEED:INDEX: run that one case here, and say how")
    parser.add_argument("--json", action="store_true", help="print the outcome as JSON")
    args = parser.parse_args()
    models = seeds()
    if args.replay:
        seed, index = map(int, args.replay.split(":"))
        item = case(seed, index, models)
        folder = Path(tempfile.mkdtemp())
        outcome = run_case(item, folder)
        print(item.label, item.command, item.options)
        print(f"exit {outcome.code} in {outcome.seconds:.2f} s\n{outcome.stderr}")
        return 0
    seed = args.seed if args.seed is not None else random.randrange(10**6)
    if not args.json:
        print(f"seed {seed}")
    outcomes = campaign(seed, args.count, args.seconds, args.jobs)
    if args.json:
        codes: dict[str, int] = {}
        for outcome in outcomes:
            codes[str(outcome.code)] = codes.get(str(outcome.code), 0) + 1
        failures = [
            {"problem": o.problem, "case": o.label, "stderr": o.stderr[-400:]}
            for o in outcomes
            if o.problem
        ]
        print(
            json.dumps({"seed": seed, "cases": len(outcomes), "exits": codes, "failed": failures})
        )
        return 1 if failures else 0
    for line in _summary(outcomes):
        print(line)
    for outcome in outcomes:
        if outcome.problem and "[" in outcome.label:
            print(f"  saved {save(outcome, seed, models)}")
    return 1 if any(o.problem for o in outcomes) else 0


if __name__ == "__main__":
    os.environ.setdefault("SEQPASSES_FUZZ", "1")
    sys.exit(main())

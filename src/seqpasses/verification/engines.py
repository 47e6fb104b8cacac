"""The two evaluators, one way each to get a runner: ONNX Runtime (graph optimizations off,
a session from :mod:`seqpasses.checks.runtime`, which admission asks too) and
``onnx.reference`` with the spec-exact kernels of :mod:`seqpasses.verification.kernels`."""

from __future__ import annotations

import contextlib
import os
import resource
from collections.abc import Callable, Iterator
from typing import Any

import onnx

from seqpasses.checks.runtime import Held, ort_session

__all__ = [
    "PAST_BOUND",
    "Held",
    "Runner",
    "bound_runs",
    "error_line",
    "ort_missing",
    "ort_session",
    "outcome",
    "reference",
    "runtime",
]

Runner = Callable[[dict[str, Any]], list[Any]]


REFERENCE_MAX_BYTES = 256 << 20
"""The most bytes of weights ``onnx.reference`` is given a model whole with (it holds each as
a numpy array): above, it runs only the region a rewrite changed."""


def error_line(error: BaseException) -> str:
    """``Type: first line of the message``."""
    text = str(error).strip()
    return f"{type(error).__name__}: {text.splitlines()[0] if text else ''}".rstrip(": ")


def runtime(model: Held) -> Runner | str:
    """A runner on ONNX Runtime, or why there is none."""
    try:
        session = ort_session(model)
    except Exception as error:
        return error_line(error)
    return lambda feeds: list(session.run(None, feeds))


def reference(model: Held, strict_spec: bool) -> Runner | str:
    """A runner on ``onnx.reference`` with seqpasses' kernel overrides, or why there is none
    (its weights read into memory: at most :data:`REFERENCE_MAX_BYTES` of them)."""
    from seqpasses.verification.kernels import overrides

    size = model.weight_bytes
    if size > REFERENCE_MAX_BYTES:
        return (
            f"its weights on disk ({size / 2**30:.1f} GiB) are more than onnx.reference is "
            f"given whole ({REFERENCE_MAX_BYTES >> 20} MiB)"
        )
    try:
        evaluator = _evaluator(model.whole(), overrides(strict_spec))
    except Exception as error:
        return error_line(error)
    return lambda feeds: list(evaluator.run(None, feeds))


def _evaluator(proto: onnx.ModelProto, new_ops: list[type[Any]]) -> Any:
    """``onnx.reference`` on ``proto``, each model-local function given only the functions it
    calls (onnx's own constructor gives each every function before it: memory that grows with
    the square of their count, a GB for 2,000 small ones), and those the graph never calls
    left out."""
    from onnx.reference import ReferenceEvaluator

    if not proto.functions:
        return ReferenceEvaluator(proto, new_ops=new_ops)
    from seqpasses.checks.functions import calls

    functions = {(f.domain, f.name): f for f in proto.functions}
    built: dict[tuple[str, str], Any] = {}

    def build(key: tuple[str, str]) -> Any:
        if key not in built:
            callees = [build(c) for c in sorted(set(calls(functions[key]))) if c in functions]
            built[key] = ReferenceEvaluator(functions[key], functions=callees)
        return built[key]

    used = [build(c) for c in sorted(set(calls(proto.graph))) if c in functions]
    opsets = {op.domain: op.version for op in proto.opset_import}
    return ReferenceEvaluator(proto.graph, opsets=opsets, functions=used, new_ops=new_ops)


def ort_missing() -> str:
    try:
        import onnxruntime  # noqa: F401
    except ImportError:
        return "ONNX Runtime is not installed (pip install onnxruntime)"
    return ""


def outcome(runner: Runner | str, feeds: dict[str, Any]) -> tuple[list[Any] | None, str]:
    """The outputs of one run, or None and why it failed."""
    if isinstance(runner, str):
        return None, f"cannot load: {runner}"
    try:
        with _memory_bound():
            return runner(feeds), ""
    except MemoryError:
        return None, _past_bound()
    except Exception as error:
        if _out_of_memory(str(error)) and _budget[0]:
            return None, _past_bound()
        return None, error_line(error)


def _out_of_memory(text: str) -> bool:
    """Whether an evaluator's error says an allocation failed (ONNX Runtime's ``bad_alloc``,
    ``Failed to allocate memory``), not merely mentions allocation: a shape that disagrees
    with a pre-allocated output's is ONNX Runtime's "pre-allocated output OrtValues" error."""
    lowered = text.lower()
    return (
        "bad_alloc" in lowered
        or "failed to allocate" in lowered
        or ("allocat" in lowered and "pre-allocated" not in lowered)
    )


PAST_BOUND = "it needs more than"
"""How the reason of a run past :func:`bound_runs`' bound begins."""


def _past_bound() -> str:
    return f"{PAST_BOUND} {_budget[0] >> 20:,} MiB of memory to run (--check's bound)"


_budget = [0]
"""The most memory (bytes of address space) one run of a model may add (0: unbounded)."""


def bound_runs(budget: int) -> None:
    """Bound the memory each evaluator's run may take to ``budget`` bytes more than the
    process holds when it starts (0: unbounded, the default). The command line sets it: a
    few hundred bytes of Loop can double a tensor 30 times (24 GB), and a run past the
    bound fails, as a run of the original that fails does, instead of the machine."""
    _budget[0] = max(0, budget)


@contextlib.contextmanager
def _memory_bound() -> Iterator[None]:
    budget = _budget[0]
    if not budget or not hasattr(resource, "RLIMIT_AS"):
        yield
        return
    try:
        pages = int(open("/proc/self/statm").read().split()[0])  # noqa: SIM115
        used = pages * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        yield
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = used + budget
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    if soft != resource.RLIM_INFINITY and soft <= limit:
        yield  # (a tighter bound is set already)
        return
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))

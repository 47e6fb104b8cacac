"""The one optimize path, which ``optimize()``, the CLI (one model or a folder) and
``inspect`` all run:

1. :func:`load`: read the model, pass it through the data gate
   (:mod:`seqpasses.checks.external`) and admission (:mod:`seqpasses.checks.admission`), and
   hold it in onnx_ir (or say why it is handed back unchanged);
2. :func:`optimize_loaded`: fix input shapes, run the passes, fill in shapes, inline
   functions, self-check (:mod:`seqpasses.checks.selfcheck`); the result and its report.

Each stage writes its own fields of the :class:`~seqpasses.report.Report`: load the warnings,
the passes the rewrites, what was left and their notes, this module the op counts, timings
and what became of the model as a whole.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, fields

import onnx
import onnx.inliner
import onnx_ir as ir

from seqpasses.checks.admission import runtime_says
from seqpasses.checks.selfcheck import passes_checker, self_check, without_inner_shapes
from seqpasses.core.graph import DEFAULT_DOMAINS
from seqpasses.core.ops import LEFT_OPS
from seqpasses.core.pause import no_cycle_collection
from seqpasses.core.proto import all_proto_nodes
from seqpasses.core.skeleton import Skeleton, skeleton
from seqpasses.errors import BadInputError, SelfCheckError
from seqpasses.loading import Loaded, load
from seqpasses.options import Group, Options
from seqpasses.passes.fill_shapes import fill_shapes_in_place
from seqpasses.passes.input_shapes import fix_input_shapes
from seqpasses.passes.repair_shapes import repair_declarations
from seqpasses.progress import stage
from seqpasses.report import ORIGIN, Report, Rewrite, count_ops

__all__ = ["Loaded", "Result", "load", "optimize_loaded"]  # (Loaded, load: seqpasses.loading)


@dataclass
class Result:
    """The optimized model: the onnx_ir model (None when the input was handed back
    unchanged: ``given`` is the input), its self-checked skeleton (the protobuf without the
    weights' data: :mod:`seqpasses.core.skeleton`), and the report. :attr:`proto` is the
    whole model, made when it is asked for."""

    skeleton: Skeleton
    model: ir.Model | None
    report: Report
    given: onnx.ModelProto | None = None

    @property
    def proto(self) -> onnx.ModelProto:
        """The whole model as a ModelProto (a copy: its weights are serialized now)."""
        if self.model is None:
            assert self.given is not None
            copy = onnx.ModelProto()
            copy.CopyFrom(self.given)
            return copy
        initializers = self.model.graph.initializers
        weights = {}
        for name in self.skeleton.hidden:
            tensor = initializers[name].const_value
            assert tensor is not None
            weights[name] = ir.serde.serialize_tensor(tensor)
        return self.skeleton.full(weights)


def run_passes(
    model: ir.Model,
    options: Options,
    report: Report,
    original: Callable[[], ir.Model] | None = None,
) -> None:
    """The passes on ``model``, in place (no self-check); ``original`` makes a fresh copy of
    ``model`` as it is now (see :class:`FoldSequencesPass`)."""
    start = time.perf_counter()
    stage("rewriting sequence ops")
    with no_cycle_collection():  # (the pass writes the op counts, the rewrites, what is left)
        from seqpasses.passes.fold_sequences import FoldSequencesPass  # (not for `shapes`)

        FoldSequencesPass(options.fold(), report, original)(model)
    report.timings["passes"] = time.perf_counter() - start


def _input_shape_note(loaded: Loaded, options: Options, report: Report) -> str:
    """What --input-shape enabled: the sequence ops left without it, on a fresh copy."""
    without = Report()
    run_passes(loaded.fresh(), options, without)
    left = without.sequence_ops_after
    gained = left - report.sequence_ops_after
    return (
        f"--input-shape let {gained} more sequence op(s) go ({left} would stay without it, "
        f"{report.sequence_ops_after} stay with it)"
    )


def _skeleton(model: ir.Model, options: Options, report: Report) -> Skeleton:
    """The result's skeleton (its weights' data left out), its functions inlined when asked."""
    result = skeleton(model)
    if options.inline_functions:
        result.proto = _inline_functions(result.proto, report)
    return result


def _inline_functions(proto: onnx.ModelProto, report: Report) -> onnx.ModelProto:
    """``proto`` with its model-local functions inlined at their call sites (``onnx.inliner``),
    for back ends that reject them (OpenVINO: "No conversion rule found")."""
    if not proto.functions:
        return proto
    count = len(proto.functions)
    inlined: onnx.ModelProto = onnx.inliner.inline_local_functions(proto)
    report.notes.append(f"inlined {count} model-local function(s) at their call sites")
    return inlined


def _keep_output_declarations(model: ir.Model, proto: onnx.ModelProto) -> None:
    """A graph output a rewrite left with no shape keeps the one the input declared (ONNX
    wants a shape on every graph output; nothing proved the declaration wrong)."""
    declared = {
        o.name: o.type.tensor_type.shape
        for o in proto.graph.output
        if o.type.HasField("tensor_type") and o.type.tensor_type.HasField("shape")
    }
    for value in model.graph.outputs:
        shape = declared.get(value.name or "")
        if value.shape is None and shape is not None and isinstance(value.type, ir.TensorType):
            value.shape = ir.Shape(
                [
                    d.dim_value if d.HasField("dim_value") else (d.dim_param or None)
                    for d in shape.dim
                ]
            )


def _as_given(loaded: Loaded, report: Report, why: str) -> Result:
    """The input as it was, after a run that changed nothing (the report keeps what the run
    recorded of each op it left)."""
    report.unchanged = why
    return Result(loaded.skeleton(), None, report, loaded.proto)


def _unchanged(loaded: Loaded, report: Report, why: str = "", kind: str = "") -> Result:
    """The input handed back as it was; every sequence op it holds is left, for ``why``."""
    report.ops_before = report.ops_after = count_ops(loaded.proto)
    report.unchanged = why or loaded.unheld
    for node in all_proto_nodes(loaded.proto):
        if node.op_type in LEFT_OPS and node.domain in DEFAULT_DOMAINS:
            text = "the model is handed back unchanged (report.unchanged says why)"
            origin = next((p.value for p in node.metadata_props if p.key == ORIGIN), "")
            report.left.append(
                Rewrite(
                    "left",
                    node.name,
                    node.op_type,
                    "",
                    text,
                    "",
                    kind or loaded.unheld_kind,
                    origin,
                )
            )
    return Result(loaded.skeleton(), None, report, loaded.proto)


def optimize_loaded(
    loaded: Loaded,
    options: Options,
    report: Report | None = None,
    *,
    self_check_result: bool = True,
) -> Result:
    """Optimize a loaded model in place (see the module docstring); fill ``report``.

    A result with more sequence ops than the input (lists held as one tensor that every
    reader still needs as a sequence, written back once per reader) is made again, on a
    fresh copy, with those lists left as sequences; if that has more too, it is a fault.
    A fault on an input that is not valid (onnx's full check rejects it, and ONNX Runtime
    cannot load it either: a type error the plain checker does not see, say) is the input's:
    :class:`BadInputError`, one line."""
    report = report if report is not None else Report()
    report.warnings.extend(loaded.warnings)
    try:
        return _optimize_again_if_bigger(loaded, options, report, self_check_result)
    except (BadInputError, MemoryError):
        raise
    except Exception:
        why = _invalid(loaded)
        if why:
            raise BadInputError(f"{loaded.name}: {why}; refused") from None
        raise


def _invalid(loaded: Loaded) -> str:
    """Why the input is not a model anyone runs ('' when onnx's full check takes it or ONNX
    Runtime loads it)."""
    said = passes_checker(loaded.skeleton().proto)
    if not said:
        return ""
    refusal = runtime_says(loaded.file if loaded.file is not None else loaded.proto)
    if not refusal:
        return ""
    return (
        f"the model fails onnx's full check ({said}) and ONNX Runtime cannot load it "
        f"either ({refusal})"
    )


def _optimize_again_if_bigger(
    loaded: Loaded, options: Options, report: Report, self_check_result: bool
) -> Result:
    try:
        return _optimize_loaded(loaded, options, report, self_check_result)
    except SelfCheckError as error:
        if error.kind != "more-sequence-ops" or not options.fold().enabled(Group.STACKED):
            raise
    again = Loaded(
        loaded.proto,
        loaded.fresh(),
        loaded.name,
        loaded.folder,
        file=loaded.file,
        by_runtime=loaded.by_runtime,
    )
    retry = Report(warnings=list(report.warnings))
    result = _optimize_loaded(
        again, options.but(skip=(*options.skip, Group.STACKED)), retry, self_check_result
    )
    retry.notes.append(
        "lists of run-time length left as sequences: held as one tensor, they had to be "
        "written back as sequences for every reader, more sequence ops than the input"
    )
    for name in [f.name for f in fields(Report)]:
        setattr(report, name, getattr(retry, name))
    return Result(result.skeleton, result.model, report, result.given)


def _optimize_loaded(
    loaded: Loaded, options: Options, report: Report, self_check_result: bool
) -> Result:
    model = loaded.model
    if model is None:
        return _unchanged(loaded, report)
    shapes = options.shapes()
    asked = bool(shapes) or options.inline_functions  # (what changes the model by itself)
    if not asked and not any(
        node.op_type in LEFT_OPS and node.domain in DEFAULT_DOMAINS
        for node in all_proto_nodes(loaded.proto)
    ):
        # nothing seqpasses is for: not even a constant If is folded, no shape declared
        report.ops_before = report.ops_after = count_ops(loaded.proto)
        return _as_given(loaded, report, "it holds no sequence or optional op")
    with no_cycle_collection():
        if shapes:
            report.notes.extend(fix_input_shapes(model, shapes))
        fresh = None if shapes else loaded.fresh
        run_passes(model, options, report, fresh)
        if shapes:
            report.notes.append(_input_shape_note(loaded, options.but(input_shapes=()), report))
        if not asked and not report.changed:
            # no rewrite: the input as it was, not even a shape declared (a declaration the
            # input lacked can make a model ONNX Runtime loads one it refuses)
            left = report.sequence_ops_after
            return _as_given(loaded, report, f"no rewrite applies ({left} sequence op(s) left)")
        if options.infer_shapes:
            start = time.perf_counter()
            stage("inferring shapes")
            fill_shapes_in_place(model)
            report.timings["shapes"] = time.perf_counter() - start
        _keep_output_declarations(model, loaded.proto)
        start = time.perf_counter()
        result = _skeleton(model, options, report)
        report.ops_after = count_ops(result.proto)
        report.timings["serialize"] = time.perf_counter() - start
        if self_check_result and (report.changed or shapes or options.inline_functions):
            start = time.perf_counter()
            stage("self-check: onnx's full check of the result")
            # (onnx's full check, in linear pieces: once, unless the result changes)
            why = passes_checker(result.proto)
            if why and repair_declarations(model, report.notes.append):
                # declared shapes the rewritten graph contradicts (an exporter's guess the
                # original's sequence ops kept ONNX from checking): replaced, then checked
                result = _skeleton(model, options, Report())
                why = passes_checker(result.proto)
            if why:
                bare = without_inner_shapes(result.proto)
                still = passes_checker(bare)
                if not still:
                    report.notes.append(
                        f"declared shapes of intermediate values dropped: with them onnx's check "
                        f"rejects a node that fails at run time ({why})"
                    )
                    result.proto, why = bare, ""
                elif "ShapeInferenceError" in still and not passes_checker(loaded.skeleton().proto):
                    # what the rewrites proved shows onnx's inference a node that fails at run
                    # time (shapes that can never broadcast, an axis a scalar lacks), which the
                    # input hid in its sequences: the input, which runs as it did, goes back
                    report.rewrites.clear()
                    report.left.clear()
                    text = f"onnx's full check would reject the optimized model ({still})"
                    return _unchanged(loaded, report, text, "run-time-failure")
            # (the op counts taken above: declarations may have changed since, nodes not)
            self_check(
                result.proto,
                report.sequence_ops_before,
                lambda: not passes_checker(loaded.skeleton().proto),
                why=why,
                sequence_ops_after=report.sequence_ops_after,
            )
            nodes = sum(report.ops_after.values())
            refused = _runtime_refuses(loaded, result, report.notes, nodes)
            if refused:
                report.rewrites.clear()
                report.left.clear()
                text = f"ONNX Runtime, which loads the input, would not load the result ({refused})"
                return _unchanged(loaded, report, text, "invalid")
            report.timings["self_check"] = time.perf_counter() - start
    return Result(result, model, report)


RUNTIME_CHECK_NODES = 1000
"""Up to this many nodes (subgraphs and functions included) the self-check also loads the
result in ONNX Runtime (graph optimizations off, one thread: milliseconds); above it, only
where the input was taken because ONNX Runtime loads it (it failed onnx's checker). A result
that passes onnx's full check is one ONNX Runtime's inference nearly always accepts, but not
always: a ``ConcatFromSequence`` of ``new_axis=-2`` that ONNX Runtime loads while its input's
elements are unknown is refused once they are known. The load, 20 to 100 µs per node (a
second on a graph of 20,000; more for function calls, which it inlines), is kept for where
it is cheap or can tell more."""


def _runtime_refuses(loaded: Loaded, result: Skeleton, notes: list[str], nodes: int) -> str:
    """Why ONNX Runtime refuses the result of ``nodes`` nodes where it loads the input (''
    when it does not): a declaration seqpasses added that ONNX Runtime's inference rejects is
    dropped first (the result then has none inside), and only what still fails is a refusal."""
    if not loaded.by_runtime and nodes > RUNTIME_CHECK_NODES:
        return ""
    refused = runtime_says(result.proto)
    if not refused or runtime_says(loaded.skeleton().proto):
        return ""  # (loads; or the input does not load either: nothing was lost)
    bare = without_inner_shapes(result.proto)
    if runtime_says(bare):
        return refused
    notes.append(
        "declared shapes of intermediate values dropped: ONNX Runtime's inference rejects "
        f"them ({refused})"
    )
    result.proto = bare
    return ""

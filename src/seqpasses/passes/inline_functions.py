"""Model-local functions whose sequences cross their boundary, inlined when that pays.

torchlib writes ``aten_split`` and ``aten_getitem`` as functions: the sequence one returns is
read by the other, and neither folds on its own. :func:`fold_with_functions_inlined` folds the
model as it is and, on a copy, with those functions inlined at their call sites (onnx_ir's
``InlinePass``), and keeps whichever leaves fewer sequence ops (the model as it is on a tie).
Functions with no sequence op stay functions.
"""

from __future__ import annotations

from collections.abc import Callable

import onnx_ir as ir
import onnx_ir.passes.common as common_passes

from seqpasses.core.graph import functions_holding, is_default
from seqpasses.core.ops import SEQUENCE_OPS
from seqpasses.report import Report, Rewrite, count_sequence_ops

__all__ = ["fold_with_functions_inlined", "sequence_functions"]


def sequence_functions(model: ir.Model) -> set[ir.OperatorIdentifier]:
    """The model-local functions whose bodies hold a sequence op, or call one that does."""
    return functions_holding(model, lambda node: node.op_type in SEQUENCE_OPS and is_default(node))


def _adopt(model: ir.Model, other: ir.Model) -> None:
    """Make ``model`` hold ``other``'s graph and functions (an in-place pass keeps the
    caller's Model object; the opset imports are the graph's)."""
    model.graph = other.graph
    model.functions.clear()
    model.functions.update(other.functions)


def fold_with_functions_inlined(
    model: ir.Model,
    carriers: set[ir.OperatorIdentifier],
    fold: Callable[[ir.Model, Report], bool],
    report: Report,
    original: Callable[[], ir.Model] | None = None,
) -> bool:
    """Fold ``model`` with ``fold``, and a copy with ``carriers`` inlined; keep the better one
    (in ``model``) and its records (in ``report``); whether ``model`` changed.

    The copy is ``original()`` when given (a fresh model equal to ``model`` as it is now: the
    caller still holds what it was loaded from), else a snapshot serialized before folding
    (the whole model, paid even when no trial is needed)."""
    if original is None:
        snapshot = ir.serde.serialize_model(model)
        original = lambda: ir.serde.deserialize_model(snapshot)  # noqa: E731
    kept = Report()
    modified = fold(model, kept)
    left = count_sequence_ops(model)
    if left:
        trial, inlined = Report(), original()
        try:
            common_passes.InlinePass(criteria=lambda fn: fn.identifier() in carriers)(inlined)
        except Exception as error:  # cycles, opset clashes: fold the functions as they are
            kept.notes.append(f"functions with sequences not inlined: {error}")
        else:
            fold(inlined, trial)
            if count_sequence_ops(inlined) < left:
                names = ", ".join(sorted(name for _, name, _ in carriers))
                detail = f"{names}: inlined at the call sites (sequences cross them)"
                trial.rewrites.insert(0, Rewrite("function-inline", "", "function", "main", detail))
                _adopt(model, inlined)
                kept, modified = trial, True
    report.rewrites.extend(kept.rewrites)
    report.left.extend(kept.left)
    report.notes.extend(kept.notes)
    return modified

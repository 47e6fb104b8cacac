"""The composite pass: walk, repair declared shapes, remove dead code, record what was left."""

from __future__ import annotations

from collections.abc import Callable

import onnx_ir as ir

from seqpasses.core.graph import unique_value_names
from seqpasses.options import FoldOptions, Group
from seqpasses.passes.anchor_checks import anchor_checks
from seqpasses.passes.dead_code import RemoveDeadNodesPass, dead_nodes
from seqpasses.passes.guesses import forget_guesses, set_aside_output_numbers
from seqpasses.passes.initializers import constants_to_initializers
from seqpasses.passes.inline_functions import fold_with_functions_inlined, sequence_functions
from seqpasses.passes.narrow_splits import narrow_splits
from seqpasses.passes.record_left import RecordLeftPass
from seqpasses.passes.repair_shapes import RepairShapesPass, repair_declarations
from seqpasses.passes.walk import WalkPass, main_opset
from seqpasses.report import Report, count_ops

__all__ = ["FoldSequencesPass"]


class FoldSequencesPass(ir.passes.InPlacePass):
    """Fold static sequences and lower the ops that read them, then drop dead producers.

    Runs, in order, on the main graph, every subgraph and every model-local function:

    1. :class:`~seqpasses.passes.walk.WalkPass`: the transfers (``SequenceAt(s, const)`` ->
       the element, ``SequenceLength`` -> a Constant, ``ConcatFromSequence`` -> ``Concat``,
       ``SplitToSequence`` -> ``Split``, control flow, loops);
    2. :class:`~seqpasses.passes.repair_shapes.RepairShapesPass`: declared shapes made untrue;
    3. :class:`~seqpasses.passes.dead_code.RemoveDeadNodesPass`: producers the rewrites made
       dead; not a node dead in the model as given, one that fails at run time or a check a
       rewrite emitted (:meth:`~seqpasses.walk.edits.Edits.protected`: failures are kept);
    4. :func:`~seqpasses.passes.narrow_splits.narrow_splits`: a Split it wrote of which one
       piece is read becomes a Slice; the constants it wrote in the main graph become
       initializers (:mod:`seqpasses.passes.initializers`);
    5. :class:`~seqpasses.passes.record_left.RecordLeftPass`: what stays, and why.

    Model-local functions whose sequences cross their boundary are inlined when that leaves
    fewer sequence ops (:mod:`seqpasses.passes.inline_functions`). ``modified`` is true only
    when the model really changed, so a second run reports false.
    """

    def __init__(
        self,
        options: FoldOptions | None = None,
        report: Report | None = None,
        original: Callable[[], ir.Model] | None = None,
    ) -> None:
        """``original``, when given, makes a fresh copy of the model as the pass receives it
        (what the caller loaded it from): the function-inlining trial then needs no snapshot."""
        super().__init__()
        self.options = options or FoldOptions()
        self.report = report if report is not None else Report()
        self.original = original

    def __call__(self, model: ir.Model | ir.passes.PassResult) -> ir.passes.PassResult:
        if not isinstance(model, ir.Model | ir.passes.PassResult):
            raise TypeError(
                f"FoldSequencesPass runs on an onnx_ir.Model, not {type(model).__name__}: "
                "for a ModelProto, use seqpasses.optimize(model) or "
                "FoldSequencesPass()(onnx_ir.from_proto(model))"
            )
        return super().__call__(model)

    def call(self, model: ir.Model) -> ir.passes.PassResult:
        """Fold ``model`` in place; the report gets the op counts before and after, every
        rewrite and every op left with its reason (as ``optimize`` reports)."""
        self.report.ops_before = count_ops(model)
        main_opset(model)  # (a model without an ONNX opset is refused before anything runs)
        carriers = (
            set() if not self.options.enabled(Group.FUNCTION_INLINE) else sequence_functions(model)
        )
        if not carriers:
            modified = self._fold(model, self.report)
        else:
            modified = fold_with_functions_inlined(
                model, carriers, self._fold, self.report, self.original
            )
        self.report.ops_after = count_ops(model)
        return ir.passes.PassResult(model, modified=modified)

    def _fold(self, model: ir.Model, report: Report) -> bool:
        """The four passes on ``model``, recording into ``report``; whether it changed."""
        forget_guesses(model, declared=True)  # (again: a model given to the pass itself)
        walk = WalkPass(self.options, report)
        edits = walk.walker.edits
        edits.keep.dead_in_input = dead_nodes(model)  # (not removed: only what the rewrites kill)
        signature = set_aside_output_numbers(model)
        walk(model)
        for k, given, shape in signature:  # (the model's signature again, for what follows)
            output = model.graph.outputs[k]
            if output is given:
                output.shape = shape
            else:  # (a value the walk put in the slot: what its old one declared, if it holds)
                edits.declare_output(output, shape)
        RepairShapesPass(walk.walker)(model)
        dead = RemoveDeadNodesPass(edits.keep.protected(model))
        dead(model)
        walk.walker.edits.recorder.drop_unused()
        created = walk.walker.edits.created
        narrow_splits(created, main_opset(model))
        anchor_checks(edits.keep.check_nodes)
        if created:
            # onnx_ir names new values per graph ("val_0"), which can repeat a name of an
            # enclosing graph; ONNX wants names unique across nested scopes.
            unique_value_names(model)
            constants_to_initializers(model, created)
        if walk.walker.edits.recorder.unverified or walk.walker.edits.recorder.diverged:
            repair_declarations(model, walk.walker.edits.recorder.note)
        RecordLeftPass(walk.walker, report)(model)
        # (nodes seqpasses made and dropped again in this run are no change)
        return walk.walker.edits.recorder.rewrote or any(
            node not in created for node in dead.removed
        )

"""seqpasses: fold and lower ONNX sequence ops whose length is known before run time."""

from __future__ import annotations

from seqpasses.admit import BadInputError
from seqpasses.api import InputWarning, optimize, optimize_ir
from seqpasses.inference import ShapeFacts, ValueFact, infer_shapes, shape_facts
from seqpasses.passes import FoldSequencesPass
from seqpasses.report import Report, count_ops, count_sequence_ops
from seqpasses.transfer.table import GROUPS as REWRITES
from seqpasses.verify import VerifyReport, load_inputs, verify
from seqpasses.walk.context import FoldOptions

__version__ = "0.1.0"

__all__ = [
    "REWRITES",
    "BadInputError",
    "FoldOptions",
    "FoldSequencesPass",
    "InputWarning",
    "Report",
    "ShapeFacts",
    "ValueFact",
    "VerifyReport",
    "__version__",
    "count_ops",
    "count_sequence_ops",
    "infer_shapes",
    "load_inputs",
    "optimize",
    "optimize_ir",
    "shape_facts",
    "verify",
]

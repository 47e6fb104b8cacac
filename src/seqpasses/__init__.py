"""seqpasses: fold and lower ONNX sequence ops whose length is known before run time."""

from __future__ import annotations

from seqpasses.api import optimize, optimize_ir
from seqpasses.passes.fold import FoldOptions, FoldSequencesPass
from seqpasses.report import Report, count_ops, count_sequence_ops
from seqpasses.verify import VerifyReport, verify

__version__ = "0.1.0"

__all__ = [
    "FoldOptions",
    "FoldSequencesPass",
    "Report",
    "VerifyReport",
    "__version__",
    "count_ops",
    "count_sequence_ops",
    "optimize",
    "optimize_ir",
    "verify",
]

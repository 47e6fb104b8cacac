"""seqpasses: fold and lower ONNX sequence ops whose length is known before run time.

The names below are imported when first used, so that ``import seqpasses`` (and the command
line's ``--help``) does not pay for onnx, onnx_ir and numpy before it needs them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS = {
    "BadInputError": "seqpasses.errors",
    "InputWarning": "seqpasses.errors",
    "SelfCheckError": "seqpasses.errors",
    "FoldOptions": "seqpasses.options",
    "Options": "seqpasses.options",
    "REWRITES": "seqpasses.options",
    "optimize": "seqpasses.api",
    "optimize_ir": "seqpasses.api",
    "ShapeFacts": "seqpasses.inference",
    "ValueFact": "seqpasses.inference",
    "infer_shapes": "seqpasses.inference",
    "shape_facts": "seqpasses.inference",
    "FoldSequencesPass": "seqpasses.passes",
    "Report": "seqpasses.report",
    "count_ops": "seqpasses.report",
    "count_sequence_ops": "seqpasses.report",
    "VerifyReport": "seqpasses.verification",
    "load_inputs": "seqpasses.verification",
    "verify": "seqpasses.verification",
}

__all__ = [
    "REWRITES",
    "BadInputError",
    "FoldOptions",
    "FoldSequencesPass",
    "InputWarning",
    "Options",
    "Report",
    "SelfCheckError",
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

if TYPE_CHECKING:
    from seqpasses.api import optimize, optimize_ir
    from seqpasses.errors import BadInputError, InputWarning, SelfCheckError
    from seqpasses.inference import ShapeFacts, ValueFact, infer_shapes, shape_facts
    from seqpasses.options import GROUPS as REWRITES
    from seqpasses.options import FoldOptions, Options
    from seqpasses.passes import FoldSequencesPass
    from seqpasses.report import Report, count_ops, count_sequence_ops
    from seqpasses.verification import VerifyReport, load_inputs, verify


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'seqpasses' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), "GROUPS" if name == "REWRITES" else name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))

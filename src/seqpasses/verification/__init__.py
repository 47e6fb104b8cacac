"""Differential verification: the model before and after, run on the same inputs by
``onnx.reference`` (with spec-exact kernels) and ONNX Runtime, outputs compared."""

from seqpasses.verification.compare import EngineResult, VerifyReport, compare, verify
from seqpasses.verification.inputs import inputs_that_run, load_inputs, random_inputs
from seqpasses.verification.kernels import REFERENCE_OVERRIDES

__all__ = [
    "REFERENCE_OVERRIDES",
    "EngineResult",
    "VerifyReport",
    "compare",
    "inputs_that_run",
    "load_inputs",
    "random_inputs",
    "verify",
]

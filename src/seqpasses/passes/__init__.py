"""The passes, one onnx_ir pass per file, and :class:`FoldSequencesPass`, which runs them."""

from seqpasses.passes.fold_sequences import FoldSequencesPass

__all__ = ["FoldSequencesPass"]

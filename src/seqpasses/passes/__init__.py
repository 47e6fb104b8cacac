"""The passes, one onnx_ir pass per file, and :class:`FoldSequencesPass`, which runs them.

The package imports none of them itself: a pass a run does not use (the fold, for ``shapes``)
costs it nothing to load."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from seqpasses.passes.fold_sequences import FoldSequencesPass

__all__ = ["FoldSequencesPass"]


def __getattr__(name: str) -> Any:
    if name != "FoldSequencesPass":
        raise AttributeError(f"module 'seqpasses.passes' has no attribute {name!r}")
    from seqpasses.passes.fold_sequences import FoldSequencesPass

    return FoldSequencesPass

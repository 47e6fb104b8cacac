"""The passes. Importing this package registers every transfer function."""

from seqpasses.passes import control, fold, loops

__all__ = ["control", "fold", "loops"]

"""Transfer functions, one family per module, each with its own declared table.

``sequence_ops`` (straight-line ops on static sequences), ``unit_split`` (reads of a split
into chunks of one), ``control`` (If, SequenceMap, Optional), ``loops`` (a package: induction,
scan outputs, lifted reads, unrolling); ``table`` merges them and registers the rewrite ids.
"""

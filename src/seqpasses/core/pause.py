"""Pausing Python's cyclic garbage collector around work that makes no cycles."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["no_cycle_collection"]


@contextmanager
def no_cycle_collection() -> Iterator[None]:
    """Pause Python's cyclic garbage collector: loading, walking and saving a model allocate
    many small objects and free none in cycles, so the collector would only rescan the ever
    larger heap (superlinear in the model's size). Memory is freed by reference counts as
    before; the collector runs again afterwards. Pauses nest (only the outermost resumes):
    a caller that loads a model and goes on to optimize it holds one pause over both, since
    the first collection after a pause traverses everything made during it (the whole model
    just loaded: 0.14 s on a graph of 20,000 nodes)."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()

"""Bounding the memory of a native call that may ask for far more than its input warrants."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["address_space"]


def _mapped() -> int | None:
    """The process's address space now, in bytes (Linux; None elsewhere)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmSize:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        return None
    return None


@contextmanager
def address_space(extra: int) -> Iterator[None]:
    """Run the block with the process's address space bounded to what it is now plus
    ``extra`` bytes: an allocation past it fails (a native library's ``std::bad_alloc``
    comes out as :class:`MemoryError`) instead of filling the machine's memory. The bound is
    lifted after the block. Where the address space cannot be read or bounded (not Linux),
    the block runs unbounded."""
    mapped = _mapped()
    try:
        import resource
    except ImportError:  # (not a Unix)
        mapped = None
    if mapped is None:
        yield
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = mapped + extra
    for bound in (soft, hard):
        if bound != resource.RLIM_INFINITY:
            limit = min(limit, bound)
    resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))

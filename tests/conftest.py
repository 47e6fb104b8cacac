import os
import signal
import sys
from pathlib import Path

import pytest
from hypothesis import settings

sys.path.insert(0, str(Path(__file__).parent))

# CI (.ci/run sets CI=1) runs the property tests on the same examples every time, with no
# example database: a landing never depends on the draw. Locally they explore new examples.
settings.register_profile("ci", derandomize=True, database=None)
if os.environ.get("CI"):
    settings.load_profile("ci")

# A shell without job control starts a background job with Ctrl-C ignored, and what the tests
# start would inherit it: the tests of interrupts need Python's own handler.
signal.signal(signal.SIGINT, signal.default_int_handler)


# The modules that take most of the suite's time (measured on a 2-core machine with
# --durations=0: the signal and interrupt trials, the fuzzers, the CLI's own runs in child
# processes). `python -m pytest -q -m "not slow"` runs the rest, every rewrite's structure and
# numbers among them, in a few minutes.
SLOW = {
    "test_trust.py",
    "test_mutation_fuzz.py",
    "test_shapes_written.py",
    "test_cli.py",
    "test_docs.py",
    "test_spec_programs.py",
    "test_limits.py",
    "test_files_and_checks.py",
    "test_wild.py",
    "test_scale.py",
    "test_output_paths.py",
    "test_security.py",
    "test_batch.py",
}


def pytest_collection_modifyitems(config: object, items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.name in SLOW:
            item.add_marker(pytest.mark.slow)

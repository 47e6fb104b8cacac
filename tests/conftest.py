import os
import signal
import sys
from pathlib import Path

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

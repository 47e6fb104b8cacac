"""The mutation fuzzer (tests/mutation_fuzz.py) for a fixed time: every mutant of the sample
models, run through the command line with random options, ends in exit 0, 1, 2 or 4, says
a refusal in one line, prints no traceback, and stays within 10 s and 1 GiB.

CI (``CI=1``) runs the same campaign every time (seed 0); elsewhere each run draws a new one,
whose seed a failure names (``python tests/mutation_fuzz.py --seed N`` replays it).
``SEQPASSES_FUZZ_SECONDS`` sets the time (default 150 s)."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

FUZZER = Path(__file__).with_name("mutation_fuzz.py")
SECONDS = float(os.environ.get("SEQPASSES_FUZZ_SECONDS", "150"))
LEAST = 1000
"""The fewest cases a run must reach for its verdict to mean something (a quiet 2-core machine
runs about 100 a second)."""


def test_mutants_of_the_sample_models_end_cleanly() -> None:
    seed = 0 if os.environ.get("CI") else random.randrange(10**6)
    result = subprocess.run(
        [sys.executable, str(FUZZER), "--json", "--seed", str(seed), "--seconds", str(SECONDS)],
        capture_output=True,
        text=True,
        timeout=SECONDS + 300,
        check=False,
    )
    assert result.stdout.strip(), result.stderr[-2000:]
    outcome = json.loads(result.stdout.strip().splitlines()[-1])
    failed = "\n".join(f"{f['problem']}: {f['case']}: {f['stderr']}" for f in outcome["failed"])
    assert not outcome["failed"], f"seed {seed}, {len(outcome['failed'])} failed:\n{failed}"
    assert outcome["cases"] >= LEAST, outcome
    exits = outcome["exits"]
    assert int(exits.get("0", 0)) > 0 and int(exits.get("2", 0)) > 0, exits  # (both kinds met)

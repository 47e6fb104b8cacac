"""A long fuzz campaign: random sequence programs, optimized and verified.

Usage: python scripts/fuzz.py --examples 5000 [--seed 0] [--loops | --nested]
(--loops: programs built around a Loop that carries a list, instead of straight-line ones;
--nested: such a Loop holding an inner Loop or an If)
Prints the number of programs run and any failure (with the program) and exits non-zero on one.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from hypothesis import HealthCheck, given, seed, settings

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from fuzz_programs import loop_programs, nested_programs, programs
from test_fuzz import check_program


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--loops", action="store_true", help="fuzz loops that carry lists")
    parser.add_argument(
        "--nested", action="store_true", help="fuzz loops holding an inner Loop or an If"
    )
    args = parser.parse_args()
    count = 0

    strategy = nested_programs() if args.nested else loop_programs() if args.loops else programs()

    @seed(args.seed)
    @settings(
        max_examples=args.examples,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(strategy)
    def campaign(model):  # type: ignore[no-untyped-def]
        nonlocal count
        count += 1
        check_program(model)

    start = time.perf_counter()
    try:
        campaign()
    except Exception as error:  # the falsifying program is in the message
        print(f"FAILED after {count} programs: {type(error).__name__}: {error}")
        for note in getattr(error, "__notes__", []):
            print(note)
        return 1
    kind = "nested programs" if args.nested else "loop programs" if args.loops else "programs"
    print(f"{count} {kind}, 0 failures, {time.perf_counter() - start:.0f} s (seed {args.seed})")
    return 0


if __name__ == "__main__":
    sys.exit(main())

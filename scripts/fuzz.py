"""A long fuzz campaign: random sequence programs, optimized and verified.

Usage: python scripts/fuzz.py --examples 5000 [--seed 0] [--loops | --nested | --stacked | --carried]
(--loops: programs built around a Loop that carries a list, instead of straight-line ones;
--nested: such a Loop holding an inner Loop or an If; --stacked: lists edited and read at
run-time positions, of run-time length, with input sets in range and out of it; --carried:
a Loop whose body reads and edits its list at run-time positions)
Prints the number of programs run and any failure (with the program) and exits non-zero on one.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

import onnx
from hypothesis import HealthCheck, given, seed, settings

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from fuzz_programs import loop_programs, nested_programs, programs
from fuzz_stacked import carried_programs, stacked_programs
from test_fuzz import check_program

FAILURE = Path(tempfile.gettempdir()) / "seqpasses_fuzz_failure.onnx"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--loops", action="store_true", help="fuzz loops that carry lists")
    parser.add_argument(
        "--nested", action="store_true", help="fuzz loops holding an inner Loop or an If"
    )
    parser.add_argument(
        "--stacked", action="store_true", help="fuzz run-time positions and lengths"
    )
    parser.add_argument(
        "--carried", action="store_true", help="fuzz loops that edit their list at run time"
    )
    args = parser.parse_args()
    count = 0

    strategies = {
        "nested": nested_programs,
        "loops": loop_programs,
        "stacked": stacked_programs,
        "carried": carried_programs,
    }
    chosen = next((k for k in strategies if getattr(args, k)), None)
    strategy = strategies[chosen]() if chosen else programs()

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
        proto = model.model if chosen in ("stacked", "carried") else model
        try:
            if chosen in ("stacked", "carried"):
                check_program(model.model, model.inputs)
            else:
                check_program(model)
        except Exception as error:
            error.add_note(onnx.printer.to_text(proto))
            onnx.save(proto, FAILURE)  # the last one saved is the shrunk example hypothesis reports
            error.add_note(f"(saved as {FAILURE})")
            raise

    start = time.perf_counter()
    try:
        campaign()
    except Exception as error:  # the falsifying program is in the message
        print(f"FAILED after {count} programs: {type(error).__name__}: {error}")
        for one in getattr(error, "exceptions", [error]):
            if one is not error:
                print(f"--- {type(one).__name__}: {one}")
            for note in getattr(one, "__notes__", []):
                print(note)
        return 1
    kind = f"{chosen} programs" if chosen else "programs"
    print(f"{count} {kind}, 0 failures, {time.perf_counter() - start:.0f} s (seed {args.seed})")
    return 0


if __name__ == "__main__":
    sys.exit(main())

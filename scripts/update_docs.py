"""Regenerate the generated tables of README.md and docs/ in place.

    python scripts/update_docs.py            rewrite every table between <!-- NAME --> and <!-- /NAME -->
    python scripts/update_docs.py --check    change nothing; exit 1 if some table is out of date

Each table is the output of the command its page names beside it; this script runs them all,
from the repository root. A table whose command needs a package that is not installed
(onnxscript, openvino, tract) is left as it is, with a line on stderr saying so.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import os
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import shape_compare
import shape_table
import summary_table
import torch_table

ROOT = Path(__file__).resolve().parent.parent


def _output(run: Callable[[], object]) -> str:
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer), contextlib.redirect_stderr(io.StringIO()):
        run()
    return buffer.getvalue()


def rule_table() -> str:
    """The rule catalogue, from the registry and the ``# rule:`` line of each rule file."""
    from seqpasses.core.sequence import REASON_KINDS
    from seqpasses.transfer.table import RULES

    files: dict[str, list[str]] = {}
    for path in sorted((ROOT / "rules").glob("*.rule")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.startswith("# rule:"):
                files.setdefault(line.split(":", 1)[1].strip(), []).append(f"`{path.stem}`")
    lines = ["| rewrite id | group | what it does | rule files |", "|---|---|---|---|"]
    for rule in RULES.values():
        shown = ", ".join(files.get(rule.id, []))
        lines.append(f"| `{rule.id}` | {rule.group} | {rule.doc} | {shown} |")
    lines += ["", "| a node left because | kind | rule files |", "|---|---|---|"]
    for kind, doc in REASON_KINDS.items():
        lines.append(f"| {doc} | `{kind}` | {', '.join(files.get(kind, [])) or '-'} |")
    return "\n".join(lines) + "\n"


def _openvino_table() -> None:
    import openvino_table

    openvino_table.main()


def _tract_table() -> None:
    import tract_table

    tract_table.main()


@dataclass(frozen=True)
class Section:
    """One generated table: the page it sits in, what makes it, the package it needs."""

    page: str
    make: Callable[[], str]
    needs: str = ""
    key: Callable[[str], str] = lambda text: text  # what must match for the table to be current


def _verdicts(text: str) -> str:
    """tract's table without the first error's words: tract analyses a graph in an order of
    its own hashing, which changes from run to run, and so does which failing node it names
    first (``ts_unet``: its Pad, or a Div after it). Whether it runs is what must match."""
    return re.sub(r"\| no: [^|]*", "| no ", text)


SECTIONS: dict[str, Section] = {
    "summary-table": Section("README.md", lambda: _output(lambda: summary_table.main([]))),
    "sample-table": Section(
        "docs/sample-models.md", lambda: _output(lambda: summary_table.main(["--each"]))
    ),
    "rule-table": Section("docs/rules.md", rule_table),
    "torch-table": Section("docs/exports.md", lambda: _output(lambda: torch_table.main([]))),
    "pipeline-table": Section(
        "docs/pipelines.md",
        lambda: _output(lambda: torch_table.main(["--pipeline"])),
        needs="onnxscript",
    ),
    "shape-table": Section("docs/shapes.md", lambda: _output(lambda: shape_table.main([]))),
    "shape-compare-table": Section(
        "docs/shapes.md", lambda: _output(lambda: shape_compare.main(["--bodies"]))
    ),
    "openvino-table": Section("docs/backends.md", lambda: _output(_openvino_table), "openvino"),
    "tract-table": Section(
        "docs/backends.md", lambda: _output(_tract_table), "tract", key=_verdicts
    ),
}


def _pattern(name: str) -> re.Pattern[str]:
    return re.compile(rf"(<!-- {name} -->\n).*?(<!-- /{name} -->)", re.DOTALL)


def stale(names: list[str]) -> list[str]:
    """Those of ``names`` whose table differs from what its command prints now (rewriting none)."""
    return [name for name in names if _updated(name) is not None]


def _updated(name: str) -> str | None:
    """The page of section ``name`` with the table made afresh, or None when it is current."""
    section = SECTIONS[name]
    path = ROOT / section.page
    text = path.read_text(encoding="utf-8")
    pattern = _pattern(name)
    if not pattern.search(text):
        raise LookupError(f"{section.page} has no <!-- {name} --> section")
    cwd = os.getcwd()
    os.chdir(ROOT)  # the table scripts name sample_models/ from the repository root
    try:
        body = section.make()
    finally:
        os.chdir(cwd)
    new = pattern.sub(lambda m: m.group(1) + body + m.group(2), text)
    return None if section.key(new) == section.key(text) else new


def main(argv: list[str]) -> int:
    check = argv == ["--check"]
    out_of_date = []
    for name, section in SECTIONS.items():
        if section.needs and importlib.util.find_spec(section.needs) is None:
            print(f"{name}: left as it is ({section.needs} is not installed)", file=sys.stderr)
            continue
        new = _updated(name)
        if new is None:
            continue
        out_of_date.append(f"{section.page} ({name})")
        if not check:
            (ROOT / section.page).write_text(new, encoding="utf-8")
    if out_of_date:
        verb = "out of date" if check else "updated"
        print(f"{verb}: " + ", ".join(out_of_date), file=sys.stderr)
    return 1 if check and out_of_date else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

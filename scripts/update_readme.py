"""Regenerate README's generated tables in place (between ``<!-- NAME -->`` and ``<!-- /NAME -->``).

    python scripts/update_readme.py

Each table is the output of the command README names beside it; this script runs them all.
"""

from __future__ import annotations

import contextlib
import io
import re
import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import torch_table

README = Path(__file__).resolve().parent.parent / "README.md"


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
    for path in sorted((README.parent / "rules").glob("*.rule")):
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


SECTIONS: dict[str, Callable[[], str]] = {
    "rule-table": rule_table,
    "torch-table": lambda: _output(lambda: torch_table.main([])),
    "pipeline-table": lambda: _output(lambda: torch_table.main(["--pipeline"])),
}


def main() -> int:
    text = README.read_text(encoding="utf-8")
    for name, make in SECTIONS.items():
        pattern = re.compile(rf"(<!-- {name} -->\n).*?(<!-- /{name} -->)", re.DOTALL)
        if not pattern.search(text):
            print(f"README has no <!-- {name} --> section", file=sys.stderr)
            return 1
        body = make()
        text = pattern.sub(lambda m, body=body: m.group(1) + body + m.group(2), text)
    README.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())

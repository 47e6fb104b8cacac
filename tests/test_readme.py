"""README's examples, run as written, in document order, from a copy of the repository's models.

- ```python blocks run in one shared namespace (a block that imports torch is skipped when torch
  is not installed; the suite never depends on it);
- plain ``` blocks whose lines start with ``$ seqpasses`` run that command; the lines after it
  are its expected output (stdout, then stderr), ``...`` inside a line matching any text and a
  line of just ``...`` any number of lines;
- ```bash blocks: each ``seqpasses ...`` command in them (after ``&&`` too) must exit 0.
"""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from helpers import ROOT, SAMPLES

README = ROOT / "README.md"


@dataclass(frozen=True)
class Block:
    language: str
    line: int  # 1-based line of the opening fence
    text: str


def _blocks() -> list[Block]:
    blocks: list[Block] = []
    lines = README.read_text(encoding="utf-8").splitlines()
    index = 0
    while index < len(lines):
        match = re.fullmatch(r"```(\w*)\s*", lines[index])
        if match is None:
            index += 1
            continue
        start = index
        index += 1
        body: list[str] = []
        while not lines[index].startswith("```"):
            body.append(lines[index])
            index += 1
        index += 1
        blocks.append(Block(match.group(1), start + 1, "\n".join(body)))
    return blocks


def _runnable(block: Block) -> bool:
    if block.language == "python":
        return True
    if block.language == "bash":
        return bool(_bash_commands(block.text))
    return block.language == "" and block.text.startswith("$ seqpasses")


def _bash_commands(text: str) -> list[str]:
    parts = (part.strip() for line in text.splitlines() for part in line.split("&&"))
    return [part for part in parts if part.startswith("seqpasses ")]


BLOCKS = [b for b in _blocks() if _runnable(b)]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A stand-in for the repository root: a copy of sample_models, room for outputs."""
    root = tmp_path_factory.mktemp("readme")
    shutil.copytree(SAMPLES, root / "sample_models")
    return root


@pytest.fixture(scope="module")
def namespace() -> dict[str, Any]:
    return {"__name__": "readme"}


def _seqpasses(command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    argv = shlex.split(command)
    assert argv[0] == "seqpasses"
    return subprocess.run(
        [sys.executable, "-m", "seqpasses", *argv[1:]],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def _line_pattern(expected: str) -> re.Pattern[str]:
    return re.compile(".*".join(re.escape(part) for part in expected.split("...")))


def _matches(expected: list[str], got: list[str]) -> bool:
    if not expected:
        return not got
    head, rest = expected[0], expected[1:]
    if head == "...":
        return any(_matches(rest, got[k:]) for k in range(len(got) + 1))
    return bool(got) and bool(_line_pattern(head).fullmatch(got[0])) and _matches(rest, got[1:])


def test_the_output_matcher_is_strict_but_for_ellipses() -> None:
    got = ["[1/3] ok   a.onnx: sequence ops 2 -> 0 (0.01 s)", "b", "c", "3 models"]
    assert _matches(["[1/3] ok   a.onnx: sequence ops 2 -> 0 (... s)", "...", "3 models"], got)
    assert not _matches(["[1/3] ok   a.onnx: sequence ops 2 -> 1 (... s)", "...", "3 models"], got)
    assert not _matches(["[1/3] ok   a.onnx: sequence ops 2 -> 0 (... s)", "b", "3 models"], got)
    assert not _matches(["...", "2 models"], got)


def test_the_readme_has_examples_of_each_kind() -> None:
    kinds = {b.language or "console" for b in BLOCKS}
    assert kinds == {"python", "bash", "console"}
    assert len(BLOCKS) >= 12


@pytest.mark.parametrize("block", BLOCKS, ids=[f"line{b.line}" for b in BLOCKS])
def test_readme_example(
    block: Block, workdir: Path, namespace: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(workdir)
    where = f"README.md line {block.line}"
    if block.language == "python":
        if re.search(r"^import torch\b", block.text, re.MULTILINE):
            pytest.importorskip("torch")
        exec(compile(block.text, where, "exec"), namespace)
    elif block.language == "bash":
        for command in _bash_commands(block.text):
            result = _seqpasses(command, workdir)
            assert result.returncode == 0, f"{where}: {command}\n{result.stderr}"
    else:
        lines = block.text.splitlines()
        command = lines[0].removeprefix("$ ")
        result = _seqpasses(command, workdir)
        got = [line.rstrip() for line in (result.stdout + result.stderr).splitlines()]
        expected = [line.rstrip() for line in lines[1:]]
        assert _matches(expected, got), (
            f"{where}: `{command}` printed\n"
            + "\n".join(got)
            + "\nREADME shows\n"
            + "\n".join(expected)
        )

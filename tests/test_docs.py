"""The examples of README.md and of every page under docs/, run as written.

Each Markdown file runs in order, in a copy of the repository's models of its own:

- ```python blocks run each alone, in a fresh interpreter namespace, as a reader pastes one;
  on a page that says, in those words, that its examples continue each other
  (:data:`CONTINUED`), in one namespace per page. A block that imports an optional package
  (``import torch``, ``from onnxscript import ...``, ``import openvino``) is skipped when that
  package is not installed; the suite never depends on them.
- plain ``` blocks start with ``$ seqpasses`` and run that command; the lines after it are its
  expected output (stdout, then stderr), ``...`` inside a line matching any text and a line of
  just ``...`` any number of lines. A plain block that is not a command fails: illustrations
  go in ```text blocks, which are not run.
- ```bash blocks: each ``seqpasses ...`` command in them (after ``&&`` too) must exit 0.

Besides: the README stays short, every relative link leads to a file (and heading) that
exists, docs/index.md links every page, and each generated table (``<!-- NAME -->``) is what
its command prints now (``python scripts/update_docs.py`` rewrites them).
"""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import seqpasses
from helpers import ROOT, SAMPLES

README = ROOT / "README.md"
DOCS = ROOT / "docs"
PAGES = [README, *sorted(DOCS.rglob("*.md"))]
LINKED = [*PAGES, ROOT / "CHANGELOG.md"]

# Packages no extra of `pip install -e ".[test,backends]"` is needed for, or that only some
# extras bring: an example that imports one is skipped without it.
OPTIONAL = ("torch", "onnxscript", "openvino")
CONTINUED = "The Python examples on this page continue each other"
# So that `python -m seqpasses` in a child process runs the seqpasses this test imported
# (from the checkout under test), whatever the working directory.
SOURCE = str(Path(seqpasses.__file__).resolve().parent.parent)


@dataclass(frozen=True)
class Block:
    page: Path
    language: str
    line: int  # 1-based line of the opening fence
    text: str

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)} line {self.line}"


def _blocks(page: Path) -> list[Block]:
    blocks: list[Block] = []
    lines = page.read_text(encoding="utf-8").splitlines()
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
        blocks.append(Block(page, match.group(1), start + 1, "\n".join(body)))
    return blocks


def _runnable(block: Block) -> bool:
    if block.language == "python":
        return True
    if block.language == "bash":
        return bool(_bash_commands(block.text))
    return block.language == ""


def _bash_commands(text: str) -> list[str]:
    parts = (part.strip() for line in text.splitlines() for part in line.split("&&"))
    return [part for part in parts if part.startswith("seqpasses ")]


def _needs(block: Block) -> str | None:
    """The optional package a python block imports, if any."""
    for package in OPTIONAL:
        if re.search(rf"^(import|from) {package}\b", block.text, re.MULTILINE):
            return package
    return None


BLOCKS = [b for page in PAGES for b in _blocks(page) if _runnable(b)]


@pytest.fixture(scope="module")
def workdirs() -> dict[Path, Path]:
    """Per page, a stand-in for the repository root (see :func:`_workdir`)."""
    return {}


@pytest.fixture(scope="module")
def namespaces() -> dict[Path, dict[str, Any]]:
    """Per page, the namespace its python blocks share."""
    return {}


def _workdir(page: Path, workdirs: dict[Path, Path], factory: pytest.TempPathFactory) -> Path:
    """A copy of sample_models and room for outputs, made on the page's first example."""
    if page not in workdirs:
        root = factory.mktemp(page.stem)
        shutil.copytree(SAMPLES, root / "sample_models")
        workdirs[page] = root
    return workdirs[page]


def _seqpasses(command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    argv = shlex.split(command)
    assert argv[0] == "seqpasses"
    path = os.environ.get("PYTHONPATH")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([SOURCE, *([path] if path else [])])}
    return subprocess.run(
        [sys.executable, "-m", "seqpasses", *argv[1:]],
        cwd=cwd,
        env=env,
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


def test_the_examples_are_of_each_kind() -> None:
    in_readme = {b.language or "console" for b in BLOCKS if b.page == README}
    assert in_readme == {"python", "bash", "console"}
    assert {b.page for b in BLOCKS} >= {README, DOCS / "cli.md", DOCS / "api.md"}
    assert len(BLOCKS) >= 25


@pytest.mark.parametrize("block", BLOCKS, ids=[f"{b.page.stem}-line{b.line}" for b in BLOCKS])
def test_example(
    block: Block,
    workdirs: dict[Path, Path],
    namespaces: dict[Path, dict[str, Any]],
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    workdir = _workdir(block.page, workdirs, tmp_path_factory)
    monkeypatch.chdir(workdir)
    if block.language == "python":
        package = _needs(block)
        if package is not None:
            pytest.importorskip(package)
        namespace: dict[str, Any] = {"__name__": block.page.stem}  # (each block alone...)
        if CONTINUED in block.page.read_text(encoding="utf-8"):  # (...unless the page says)
            namespace = namespaces.setdefault(block.page, namespace)
        exec(compile(block.text, block.where, "exec"), namespace)
    elif block.language == "bash":
        for command in _bash_commands(block.text):
            result = _seqpasses(command, workdir)
            assert result.returncode == 0, f"{block.where}: {command}\n{result.stderr}"
    else:
        lines = block.text.splitlines()
        assert lines and lines[0].startswith("$ seqpasses "), (
            f"{block.where}: a plain ``` block must be a `$ seqpasses ...` command and its "
            "output; mark an illustration ```text"
        )
        command = lines[0].removeprefix("$ ")
        result = _seqpasses(command, workdir)
        got = [line.rstrip() for line in (result.stdout + result.stderr).splitlines()]
        expected = [line.rstrip() for line in lines[1:]]
        assert _matches(expected, got), (
            f"{block.where}: `{command}` printed\n"
            + "\n".join(got)
            + "\nthe page shows\n"
            + "\n".join(expected)
        )


# -- the pages themselves ---------------------------------------------------------------


def test_the_readme_is_short() -> None:
    assert len(README.read_text(encoding="utf-8").splitlines()) <= 300


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    text = page.read_text(encoding="utf-8")
    text = re.sub(r"^```.*?^```", "", text, flags=re.MULTILINE | re.DOTALL)
    return {_slug(m.group(1)) for m in re.finditer(r"^#+ (.+)$", text, re.MULTILINE)}


def _links(page: Path) -> list[str]:
    text = page.read_text(encoding="utf-8")
    text = re.sub(r"^```.*?^```", "", text, flags=re.MULTILINE | re.DOTALL)
    return re.findall(r"\]\(([^)\s]+)\)", text)


@pytest.mark.parametrize("page", LINKED, ids=lambda p: str(p.relative_to(ROOT)))
def test_links_lead_somewhere(page: Path) -> None:
    for link in _links(page):
        if re.match(r"[a-z]+:", link):
            continue  # http(s), mailto: not checked here
        target, _, anchor = link.partition("#")
        path = (page.parent / target).resolve() if target else page
        assert path.exists(), f"{page.relative_to(ROOT)}: {link} leads nowhere"
        if anchor and path.suffix == ".md":
            assert anchor in _anchors(path), f"{page.relative_to(ROOT)}: no heading for {link}"


def test_the_index_and_the_readme_link_every_page() -> None:
    index = {(DOCS / link.partition("#")[0]).resolve() for link in _links(DOCS / "index.md")}
    readme = {(ROOT / link.partition("#")[0]).resolve() for link in _links(README)}
    for page in DOCS.rglob("*.md"):
        if page.name != "index.md":
            assert page.resolve() in index, f"docs/index.md does not link {page.name}"
            assert page.resolve() in readme, f"README.md does not link docs/{page.name}"


# -- generated tables ---------------------------------------------------------------------

sys.path.insert(0, str(ROOT / "scripts"))
import update_docs  # noqa: E402


@pytest.mark.parametrize("name", list(update_docs.SECTIONS))
def test_generated_table_is_current(name: str) -> None:
    section = update_docs.SECTIONS[name]
    if section.needs and importlib.util.find_spec(section.needs) is None:
        pytest.skip(f"{section.needs} is not installed")
    assert not update_docs.stale([name]), (
        f"{section.page}: the <!-- {name} --> table is not what its command prints now; "
        "run python scripts/update_docs.py"
    )

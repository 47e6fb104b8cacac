"""Where the CLI writes: a symlink is followed, a pipe or a character device is written into,
nothing that is not a regular file is ever replaced (`-o /dev/null` as root once replaced the
machine's /dev/null), and a pipe can be read from."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

import onnx
import pytest

from helpers import SAMPLES, run_cli

SAMPLE = SAMPLES / "unbind_stack.onnx"
ROOT_ONLY = pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() != 0, reason="mknod needs root"
)


def _expected(tmp_path: Path) -> bytes:
    """The bytes a plain run writes to a regular file."""
    out = tmp_path / "plain.onnx"
    result = run_cli("optimize", SAMPLE, "-o", out, "-q")
    assert result.returncode == 0, result.stderr
    return out.read_bytes()


class _Reader(threading.Thread):
    """Reads a FIFO to its end, as `cat fifo > file` would."""

    def __init__(self, fifo: Path) -> None:
        super().__init__(daemon=True)
        self.fifo = fifo
        self.data = b""

    def run(self) -> None:
        with open(self.fifo, "rb") as handle:
            self.data = handle.read()


def test_a_symlink_is_followed_and_stays_a_link(tmp_path: Path) -> None:
    target = tmp_path / "target.onnx"
    target.write_bytes(b"old")
    link = tmp_path / "link.onnx"
    link.symlink_to(target.name)
    result = run_cli("optimize", SAMPLE, "-o", link, "-q")
    assert result.returncode == 0, result.stderr
    assert link.is_symlink() and os.readlink(link) == target.name
    assert target.read_bytes() == _expected(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link.onnx", "plain.onnx", "target.onnx"]


def test_a_dangling_symlink_gets_its_target_made(tmp_path: Path) -> None:
    link = tmp_path / "link.onnx"
    link.symlink_to("made.onnx")
    assert run_cli("optimize", SAMPLE, "-o", link, "-q").returncode == 0
    assert link.is_symlink() and (tmp_path / "made.onnx").is_file()
    onnx.checker.check_model(onnx.load(tmp_path / "made.onnx"))


def test_a_fifo_gets_the_bytes_written_into_it(tmp_path: Path) -> None:
    fifo = tmp_path / "out.onnx"
    os.mkfifo(fifo)
    reader = _Reader(fifo)
    reader.start()
    result = run_cli("optimize", SAMPLE, "-o", fifo, "-q")
    reader.join(30)
    assert result.returncode == 0, result.stderr
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert reader.data == _expected(tmp_path)


def test_the_report_goes_into_a_fifo(tmp_path: Path) -> None:
    fifo = tmp_path / "report.json"
    os.mkfifo(fifo)
    reader = _Reader(fifo)
    reader.start()
    result = run_cli("optimize", SAMPLE, "-o", tmp_path / "out.onnx", "-q", "--report", fifo)
    reader.join(30)
    assert result.returncode == 0, result.stderr
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert b'"sequence_ops_after": 0' in reader.data


def test_external_data_into_a_pipe_is_refused_with_nothing_written(tmp_path: Path) -> None:
    fifo = tmp_path / "out.onnx"
    os.mkfifo(fifo)
    result = run_cli("optimize", SAMPLE, "-o", fifo, "--external-data", "w.bin")
    assert result.returncode == 2
    assert "needs a file" in result.stderr and len(result.stderr.splitlines()) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.onnx"]


def test_model_on_stdout_keeps_the_table_off_it(tmp_path: Path) -> None:
    out = tmp_path / "out.onnx"
    with open(out, "wb") as handle:
        import subprocess
        import sys

        result = subprocess.run(
            [sys.executable, "-m", "seqpasses", "optimize", str(SAMPLE), "-o", "/dev/stdout"],
            stdout=handle,
            stderr=subprocess.PIPE,
            text=False,
            timeout=120,
            check=False,
        )
    assert result.returncode == 0, result.stderr
    assert b"sequence ops: 4 -> 0" in result.stderr
    assert out.read_bytes() == _expected(tmp_path)


def test_a_model_is_read_from_a_pipe(tmp_path: Path) -> None:
    fifo = tmp_path / "in.onnx"
    os.mkfifo(fifo)

    def feed() -> None:
        with open(fifo, "wb") as handle:
            handle.write(SAMPLE.read_bytes())

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    out = tmp_path / "out.onnx"
    result = run_cli("optimize", fifo, "-o", out, "-q")
    writer.join(30)
    assert result.returncode == 0, result.stderr
    assert out.read_bytes() == _expected(tmp_path)


@ROOT_ONLY
def test_a_character_device_is_written_into_not_replaced(tmp_path: Path) -> None:
    null = tmp_path / "null"
    os.mknod(null, stat.S_IFCHR | 0o666, os.makedev(1, 3))  # a second /dev/null
    for args in (("-o", null), ("-o", tmp_path / "out.onnx", "--report", null)):
        result = run_cli("optimize", SAMPLE, *args, "-q")
        assert result.returncode == 0, result.stderr
        assert stat.S_ISCHR(os.lstat(null).st_mode)
        assert os.lstat(null).st_rdev == os.makedev(1, 3)


@ROOT_ONLY
def test_a_block_device_is_refused(tmp_path: Path) -> None:
    block = tmp_path / "disk"
    os.mknod(block, stat.S_IFBLK | 0o600, os.makedev(7, 200))  # a loop device node, unused
    result = run_cli("optimize", SAMPLE, "-o", block)
    assert result.returncode == 2 and "is a block device" in result.stderr
    assert stat.S_ISBLK(os.lstat(block).st_mode)


def test_folder_mode_follows_a_symlinked_output(tmp_path: Path) -> None:
    source = tmp_path / "in"
    source.mkdir()
    (source / "a.onnx").write_bytes(SAMPLE.read_bytes())
    out = tmp_path / "out"
    out.mkdir()
    target = tmp_path / "elsewhere.onnx"
    target.write_bytes(b"old")
    (out / "a.onnx").symlink_to(target)
    result = run_cli("optimize", source, "-o", out, "-q")
    assert result.returncode == 0, result.stdout + result.stderr
    assert (out / "a.onnx").is_symlink()
    assert target.read_bytes() == _expected(tmp_path)


def test_an_interrupt_while_files_go_in_place_is_raised_after_them(tmp_path: Path) -> None:
    import signal

    from seqpasses.interrupts import held_back

    done = tmp_path / "done"
    with pytest.raises(KeyboardInterrupt), held_back():
        signal.raise_signal(signal.SIGINT)
        done.write_text("whole")  # (the interrupt waits for the block)
    assert done.read_text() == "whole"
    with pytest.raises(ValueError), held_back():  # a failing block's own error goes on
        signal.raise_signal(signal.SIGINT)
        raise ValueError
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler

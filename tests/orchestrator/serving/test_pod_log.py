"""The pod's log is capped whatever fills it: logging, print, raw writes to fd 2 and the
children that inherit it; it rotates into one older file."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from orchestrator.config.paths import UnsafePathError
from orchestrator.serving.pod_log import CappedLog

ROOT = Path(__file__).resolve().parents[3]


def test_a_log_past_its_cap_rotates_into_one_older_file(tmp_path: Path) -> None:
    log = CappedLog(tmp_path / "p.log", max_bytes=1000)
    for number in range(250):
        log.write(f"line {number:03}\n".encode())  # 9 bytes each
    log.close()
    current = (tmp_path / "p.log").read_text()
    older = (tmp_path / "p.log.1").read_text()
    assert len(current) <= 1000 and len(older) <= 1000
    assert current.endswith("line 249\n")
    assert older.splitlines()[-1] == f"line {int(current.split()[1]) - 1:03}"
    assert sorted(n for n in os.listdir(tmp_path) if n.startswith("p.")) == ["p.log", "p.log.1"]


def test_one_write_larger_than_the_cap_keeps_its_end(tmp_path: Path) -> None:
    log = CappedLog(tmp_path / "p.log", max_bytes=1000)
    log.write(b"x" * 5000 + b"the last words\n")
    log.close()
    text = (tmp_path / "p.log").read_bytes()
    assert len(text) <= 1000 and text.endswith(b"the last words\n")
    assert text.startswith(b"[... cut to the log's size cap]")


def test_an_existing_log_counts_toward_the_cap(tmp_path: Path) -> None:
    path = tmp_path / "p.log"
    path.write_bytes(b"o" * 900)
    path.chmod(0o600)
    log = CappedLog(path, max_bytes=1000)
    log.write(b"n" * 200)
    log.close()
    assert path.read_bytes() == b"n" * 200 and (tmp_path / "p.log.1").read_bytes() == b"o" * 900


def test_a_link_at_the_log_path_is_refused(tmp_path: Path) -> None:
    (tmp_path / "p.log").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(UnsafePathError):
        CappedLog(tmp_path / "p.log")


def test_everything_a_process_and_its_children_write_is_capped(tmp_path: Path) -> None:
    path = tmp_path / "pod.log"
    script = textwrap.dedent(
        f"""
        import logging, os, subprocess, sys
        from pathlib import Path
        from orchestrator.serving.pod_log import log_to
        log_to(Path({str(path)!r}), max_bytes=200_000)
        logging.basicConfig()
        for n in range(3000):
            logging.getLogger("flood").error("a traceback's worth of words %d " + "x" * 200, n)
        print("y" * 300_000)
        os.write(2, b"z" * 300_000 + b"\\n")
        subprocess.run(["sh", "-c", "head -c 500000 /dev/zero | tr '\\\\0' c >&2"], check=True)
        print("the last line", flush=True)
        """
    )
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout == b"" and done.stderr == b""  # all of it went to the log
    assert path.stat().st_size <= 200_000
    assert (tmp_path / "pod.log.1").stat().st_size <= 200_000
    assert path.read_text().endswith("the last line\n")
    assert sorted(n for n in os.listdir(tmp_path) if n.startswith("pod.")) == [
        "pod.log",
        "pod.log.1",
    ]

"""``--json-stdout``: an MCP server's stdout reaches the pod as its JSON-RPC lines, and the
first few stray lines; the rest of the noise is a count on stderr."""

from __future__ import annotations

import json
import subprocess
import sys

from orchestrator.adapters.procs import Supervision
from orchestrator.adapters.procs.supervisor import NOISE_PASSED, LineFilter


def feed_in_pieces(text: bytes, size: int, passed_noise: int = NOISE_PASSED) -> tuple[bytes, int]:
    line_filter = LineFilter(passed_noise)
    out = b"".join(line_filter.feed(text[at : at + size]) for at in range(0, len(text), size))
    return out, line_filter.noise


def test_json_lines_pass_whole_however_the_stream_is_cut() -> None:
    message = b'{"jsonrpc":"2.0","id":1,"result":{"text":"' + b"x" * 5000 + b'"}}\n'
    stream = b"building...\n" * 20 + message + b"  [1,2]\n" + b"done\n"
    for size in (1, 7, 64, 4096, len(stream)):
        out, noise = feed_in_pieces(stream, size, passed_noise=0)
        assert out == message + b"  [1,2]\n", size
        assert noise == 21


def test_the_first_stray_lines_pass_so_the_pod_can_name_them() -> None:
    stream = b"".join(f"line {n}\n".encode() for n in range(10)) + b'{"id":1}\n'
    out, noise = feed_in_pieces(stream, 3, passed_noise=2)
    assert out == b'line 0\nline 1\n{"id":1}\n' and noise == 10


def test_blank_lines_are_dropped_uncounted() -> None:
    out, noise = feed_in_pieces(b"\n   \n\t\r\n" + b'{"id":2}\n', 2, passed_noise=0)
    assert out == b'{"id":2}\n' and noise == 0


def test_a_message_without_its_newline_yet_is_not_held_back() -> None:
    line_filter = LineFilter(0)
    assert line_filter.feed(b'{"id":3,') == b'{"id":3,'
    assert line_filter.feed(b'"x":1}\nnoise') == b'"x":1}\n'


def test_the_supervisor_filters_a_real_command(tmp_path: object) -> None:
    script = (
        "import sys\n"
        "for n in range(250000): sys.stdout.write(f'progress {n}\\n')\n"
        'sys.stdout.write(\'{"jsonrpc":"2.0","id":1,"result":{}}\\n\')\n'
    )
    argv = Supervision(json_stdout=True, cgroup=False).argv([sys.executable, "-c", script])
    done = subprocess.run(argv, capture_output=True, timeout=60)
    lines = done.stdout.decode().splitlines()
    assert done.returncode == 0
    assert lines[:NOISE_PASSED] == [f"progress {n}" for n in range(NOISE_PASSED)]
    assert json.loads(lines[-1]) == {"jsonrpc": "2.0", "id": 1, "result": {}}
    assert len(lines) == NOISE_PASSED + 1
    said = done.stderr.decode().splitlines()
    assert said[-1] == (
        f"supervisor: 250000 lines on stdout were not JSON-RPC; {250000 - NOISE_PASSED} dropped"
    )

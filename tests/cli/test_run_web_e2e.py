"""``pod run`` on a real pod whose model searches the web: the project's fake Messages API
(real HTTP and SSE) streams a reply holding a ``server_tool_use``, its
``web_search_tool_result`` and cited text, as the API does (a cited block's
``citations_delta`` before its text); the pod's SDK parses it, the pod commits it, and
``pod run`` prints the search, its results, the answer with ``[n]`` after the cited text and
the sources after it.

The fake does not send server tool blocks of its own yet, so the test teaches its SSE
rendering those three kinds of block (in this process, where the fake runs:
:func:`tests.cli.web_session.web_search_api`).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.helpers import pod
from tests.cli.web_session import DOCS, EVIL_URL, web_search_api


def test_pod_run_prints_a_search_its_results_and_the_cited_answer(
    env: dict[str, str], workspace: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with web_search_api(monkeypatch) as api:
        env = {**env, "ANTHROPIC_API_KEY": "test-key", "ANTHROPIC_BASE_URL": api.base_url}
        done = pod(
            env, "run", "what is asyncio?", "--provider", "anthropic", "--model",
            "claude-test-model", "--workspace", str(workspace), "--shutdown-after",
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(
        "Let me search. Per the docs, asyncio writes concurrent code [1][2].\n\n"
        "[1] asyncio — Asynchronous I/O — https://docs.python.org/3/library/asyncio.html\n"
        "[2] \\x1b]52;c;ZXZpbA==\\x07\\x1b]0;PWNED\\x07[bold red]Owned[/] AAA"
    ), done.stdout
    assert done.stdout.endswith(f"— {EVIL_URL} (not a web link)\n")
    lines = done.stderr.splitlines()
    search = lines.index('⌕ search: "python asyncio"')
    assert lines[search + 1].startswith(
        "  → 2 results: asyncio — Asynchronous I/O (docs.python.org), \\x1b]52;c;"
    )
    assert "\x1b" not in done.stdout + done.stderr and DOCS in done.stdout

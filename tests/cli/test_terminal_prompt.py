"""pod run's questions share one terminal: an approval and a request for input that wait at
once are asked one after the other, each answered by the lines typed for it."""

from __future__ import annotations

import asyncio
import io
import os
from typing import Any

from cli.approval_prompt import TerminalApprover
from cli.elicitation_prompt import TerminalElicitor

APPROVAL = {"id": "t1", "tool": "bash", "summary": "run: ls", "reason": "asks"}
INPUT = {"id": "input_1", "server": "a", "message": "Sure?", "mode": "form", "schema": {}}


async def _type(err: io.StringIO, fd: int, prompt: str, line: str, seen: int) -> int:
    """Wait for the ``seen``-th+1 ``prompt`` on the terminal, then type ``line``."""
    for _ in range(500):
        if err.getvalue().count(prompt) > seen:
            os.write(fd, line.encode())
            return seen + 1
        await asyncio.sleep(0.01)
    raise AssertionError(f"no {prompt!r} in {err.getvalue()!r}")


async def test_two_kinds_of_question_take_turns_on_one_terminal() -> None:
    read, write = os.pipe()
    err = io.StringIO()
    sent: list[tuple[str, dict[str, Any]]] = []

    async def send(method: str, params: dict[str, Any]) -> None:
        sent.append((method, params))

    approver = TerminalApprover(send, err=err, interactive=True, stdin_fd=read)
    elicitor = TerminalElicitor(
        send, err=err, interactive=True, stdin_fd=read, terminal=approver.terminal
    )
    try:
        await approver.request(APPROVAL)
        await elicitor.request(INPUT)
        await _type(err, write, "Allow?", "y\n", 0)
        await _type(err, write, "[f]ill in, [d]ecline, [c]ancel: ", "d\n", 0)
        for _ in range(500):
            if len(sent) == 2:
                break
            await asyncio.sleep(0.01)
    finally:
        await approver.close()
        await elicitor.close()
        os.close(read)
        os.close(write)
    assert sent == [
        ("approve", {"id": "t1", "scope": "once"}),
        ("answer_elicitation", {"id": "input_1", "action": "decline"}),
    ]
    # The request for input was not shown until the approval was answered.
    shown = err.getvalue()
    assert shown.index("Allow?") < shown.index("? MCP server a asks: Sure?")


async def test_without_a_terminal_a_request_to_keep_held_paths_is_denied_unasked() -> None:
    sent: list[tuple[str, dict[str, Any]]] = []

    async def send(method: str, params: dict[str, Any]) -> None:
        sent.append((method, params))

    approver = TerminalApprover(send, err=io.StringIO(), interactive=False, stdin_fd=-1)
    await approver.request({**APPROVAL, "held": [".git"]})
    await approver.request(APPROVAL)
    assert [params["message"] for _, params in sent] == [
        "pod run is not interactive; what the command planted stays undone",
        "pod run is not interactive; allow such calls with --permission-mode (accept-edits, "
        "yolo) or an allow rule in [permissions]",
    ]
    assert all(method == "deny" and params["asked"] is False for method, params in sent)

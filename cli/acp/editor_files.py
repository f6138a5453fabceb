"""The editor's files for the pod's file tools: ``client_io_request`` events of the pod put
to the editor as ACP's ``fs/read_text_file`` and ``fs/write_text_file``.

An editor that declares both ``fs.readTextFile`` and ``fs.writeTextFile`` in ``initialize``
gets its session's pod to read and write through it (``offer_client_io``): ``read_file``
sees unsaved buffers, and ``write_file`` / ``edit_file`` land in the editor. The pod still
decides every path (its scope, its permissions, plan mode) and checks that the disk holds
what was written; this module only carries the requests and answers, and any failure of the
editor's is answered ``ok: false`` so the pod does the work itself.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from acp import RequestError, schema

from orchestrator.serving.client import ClientError, PodClient

__all__ = ["FILE_TIMEOUT_S", "serve_request", "serves_files"]

log = logging.getLogger(__name__)

ANSWER_ID = "client-io:"
"""The id prefix of our ``client_io_result`` requests, so a refusal of one (a late answer to a
request the pod stopped waiting for) is told apart from a turn's errors."""

FILE_TIMEOUT_S = 20.0
"""How long the editor has to read or write a file (the pod waits a little longer)."""


def serves_files(capabilities: schema.ClientCapabilities | None) -> bool:
    """Whether the editor declared it reads and writes text files for the agent."""
    fs = capabilities.fs if capabilities is not None else None
    return bool(fs is not None and fs.read_text_file and fs.write_text_file)


def serves_terminal(capabilities: schema.ClientCapabilities | None) -> bool:
    """Whether the editor declared it runs commands in its terminals for the agent."""
    return bool(capabilities is not None and capabilities.terminal)


async def serve_request(
    conn: Any, client: PodClient, session_id: str, data: dict[str, Any], terminals: dict[str, str]
) -> None:
    """Put one request of the pod's to the editor and answer the pod with what came of it.
    ``terminals``: the session's commands running in the editor, the pod's request id to the
    editor's terminal id (a ``kill_command`` names the request)."""
    request_id = str(data["id"])
    if data["op"] == "kill_command":
        terminal = terminals.get(request_id)
        if terminal is not None:
            await _quietly(conn.kill_terminal(session_id=session_id, terminal_id=terminal))
        return  # the run's own answer says how it ended
    answer: dict[str, Any] = {"id": request_id, "ok": False}
    if data["op"] == "run_command":
        answer = await _run(conn, session_id, data, terminals)
        await _answer(client, request_id, answer)
        return
    try:
        async with asyncio.timeout(FILE_TIMEOUT_S):
            if data["op"] == "read_text_file":
                read = await conn.read_text_file(session_id=session_id, path=str(data["path"]))
                answer.update(ok=True, content=read.content)
            else:
                await conn.write_text_file(
                    session_id=session_id, path=str(data["path"]), content=str(data["content"])
                )
                answer["ok"] = True
    except (RequestError, TimeoutError, ConnectionError, OSError) as exc:
        answer["message"] = _why(exc)
    except Exception as exc:  # the editor's answer did not fit the schema, and the like
        log.warning("the editor failed a file request: %s", exc)
        answer["message"] = f"{type(exc).__name__}: {exc}"
    await _answer(client, request_id, answer)


async def _answer(client: PodClient, request_id: str, answer: dict[str, Any]) -> None:
    try:
        await client.send("client_io_result", answer, id=f"{ANSWER_ID}{request_id}")
    except ClientError as exc:
        log.warning("could not answer the pod's request %s: %s", request_id, exc)


async def _run(
    conn: Any, session_id: str, data: dict[str, Any], terminals: dict[str, str]
) -> dict[str, Any]:
    """Run a command in the editor's terminal: created, waited for (killed at its timeout),
    its output read, released. Once created it may be running: every later failure answers
    ``started`` so the pod never runs it again."""
    request_id = str(data["id"])
    argv = [str(part) for part in data["argv"]]
    try:
        async with asyncio.timeout(FILE_TIMEOUT_S):
            created = await conn.create_terminal(
                session_id=session_id,
                command=argv[0],
                args=argv[1:],
                cwd=str(data["cwd"]) or None,
                output_byte_limit=data.get("output_byte_limit"),
            )
    except Exception as exc:  # it did not start: the pod may run it itself
        return {"id": request_id, "ok": False, "started": False, "message": _why(exc)}
    terminal = created.terminal_id
    terminals[request_id] = terminal
    timed_out = False
    try:
        try:
            async with asyncio.timeout(float(data.get("timeout_s") or 600)):
                ended = await conn.wait_for_terminal_exit(
                    session_id=session_id, terminal_id=terminal
                )
        except TimeoutError:
            timed_out = True
            await conn.kill_terminal(session_id=session_id, terminal_id=terminal)
            async with asyncio.timeout(FILE_TIMEOUT_S):
                ended = await conn.wait_for_terminal_exit(
                    session_id=session_id, terminal_id=terminal
                )
        async with asyncio.timeout(FILE_TIMEOUT_S):
            shown = await conn.terminal_output(session_id=session_id, terminal_id=terminal)
    except Exception as exc:
        await _quietly(conn.kill_terminal(session_id=session_id, terminal_id=terminal))
        return {"id": request_id, "ok": False, "started": True, "message": _why(exc)}
    finally:
        terminals.pop(request_id, None)
        await _quietly(conn.release_terminal(session_id=session_id, terminal_id=terminal))
    return {
        "id": request_id,
        "ok": True,
        "content": shown.output,
        "truncated": shown.truncated,
        "exit_code": ended.exit_code,
        "signal": ended.signal,
        "timed_out": timed_out,
    }


async def kill_all(conn: Any, session_id: str, terminals: dict[str, str]) -> None:
    """The pod went away: end the session's commands still running in the editor."""
    for terminal in list(terminals.values()):
        await _quietly(conn.kill_terminal(session_id=session_id, terminal_id=terminal))
    terminals.clear()


async def _quietly(call: Any) -> None:
    """An editor call whose failure changes nothing (a kill or release of what is over)."""
    try:
        async with asyncio.timeout(FILE_TIMEOUT_S):
            await call
    except Exception as exc:
        log.info("an editor call failed: %s", exc)


def _why(exc: BaseException) -> str:
    if isinstance(exc, TimeoutError):
        return f"the editor did not answer in {FILE_TIMEOUT_S:.0f} s"
    if isinstance(exc, RequestError):
        said = (exc.data or {}).get("message") if isinstance(exc.data, dict) else None
        return f"the editor refused: {said or exc}"
    return f"the editor went away: {exc}"

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


async def serve_request(
    conn: Any, client: PodClient, session_id: str, data: dict[str, Any]
) -> None:
    """Put one file request to the editor and answer the pod with what came of it."""
    request_id = str(data["id"])
    answer: dict[str, Any] = {"id": request_id, "ok": False}
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
    try:
        await client.send("client_io_result", answer, id=f"{ANSWER_ID}{request_id}")
    except ClientError as exc:
        log.warning("could not answer the pod's file request %s: %s", request_id, exc)


def _why(exc: BaseException) -> str:
    if isinstance(exc, TimeoutError):
        return f"the editor did not answer in {FILE_TIMEOUT_S:.0f} s"
    if isinstance(exc, RequestError):
        said = (exc.data or {}).get("message") if isinstance(exc.data, dict) else None
        return f"the editor refused: {said or exc}"
    return f"the editor went away: {exc}"

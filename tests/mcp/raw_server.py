"""An MCP server over stdio that writes JSON-RPC by hand, so it can break the protocol.

    python -m tests.mcp.raw_server

The SDK's server cannot send a response for the wrong request; this one can. Tools:

* ``echo`` answers properly;
* ``wrong_id`` answers with a response for a request that was never made;
* ``null_id`` answers with an error whose ``id`` is null;
* ``not_jsonrpc`` writes a JSON line that is not JSON-RPC;
* ``noise`` writes ``megabytes`` (default 50) of lines that are not JSON to stdout, then
  answers properly;
* ``late`` answers properly after ``seconds``, serving other calls meanwhile;
* ``ask_many`` sends ``count`` requests for input (``elicitation/create``) at once, appends
  each answer's action to the file at ``path`` as it comes, and once all are answered says
  how many got each action and reason (JSON).

After a broken answer the server keeps serving, as the servers found in the wild did: it is the
client's job to stop trusting it. With ``RAW_BREAK_INIT=1`` it answers ``initialize`` with the
wrong id. Each start appends its pid to the file ``RAW_PIDFILE`` names.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

TOOLS = ["echo", "wrong_id", "null_id", "not_jsonrpc", "noise", "late", "ask_many"]
NOISE_LINE = b"progress: " + b"#" * 88 + b"\n"  # 99 bytes: the shape of a chatty build tool


def config(**env: str) -> dict[str, Any]:
    """An ``[mcp.servers.<name>]`` entry that runs this server (its tools allowed)."""
    return {
        "command": sys.executable,
        "args": ["-m", "tests.mcp.raw_server"],
        "cwd": str(Path(__file__).resolve().parents[2]),
        "permission": "allow",
        "env": env,
    }


_writing = threading.Lock()


def _write(out: Any, message: dict[str, Any]) -> None:
    with _writing:
        out.write(json.dumps(message).encode() + b"\n")
        out.flush()


def _tool(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "description": f"the {name} case",
        "inputSchema": {
            "type": "object",
            "properties": {
                "text": {"type": "string"},
                "megabytes": {"type": "number"},
                "count": {"type": "integer"},
                "path": {"type": "string"},
            },
        },
    }


def _result(text: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "isError": False}


class _Flood:
    """The requests for input ``ask_many`` sent, and how they were answered."""

    def __init__(self, call_id: Any, count: int, path: str) -> None:
        self.call_id, self.count, self.path = call_id, count, path
        self.tally: dict[str, int] = {}

    def start(self, out: Any) -> None:
        form = {
            "type": "object",
            "properties": {"answer": {"type": "string", "description": "What to write down"}},
            "required": ["answer"],
        }
        for number in range(self.count):
            params = {"message": f"flood {number}: what to write down?", "requestedSchema": form}
            _write(
                out,
                {
                    "jsonrpc": "2.0",
                    "id": f"ask-{number}",
                    "method": "elicitation/create",
                    "params": params,
                },
            )

    def answered(self, out: Any, message: dict[str, Any]) -> bool:
        """One answer taken; True once all are in (the call answered)."""
        result = message.get("result") or {}
        action = result.get("action", "error")
        reason = (result.get("_meta") or {}).get("pod-orchestrator/reason", "")
        key = f"{action}: {reason}"
        self.tally[key] = self.tally.get(key, 0) + 1
        with open(self.path, "a") as record:
            record.write(f"{message.get('id')} {action}\n")
        if sum(self.tally.values()) < self.count:
            return False
        answer = _result(json.dumps(self.tally))
        _write(out, {"jsonrpc": "2.0", "id": self.call_id, "result": answer})
        return True


_flood: _Flood | None = None


def _call(out: Any, request_id: Any, name: str, args: dict[str, Any]) -> None:
    global _flood
    if name == "ask_many":
        _flood = _Flood(request_id, int(args.get("count", 100)), str(args.get("path")))
        _flood.start(out)
    elif name == "wrong_id":
        _write(out, {"jsonrpc": "2.0", "id": 987654, "result": _result("for someone else")})
    elif name == "null_id":
        _write(
            out,
            {"jsonrpc": "2.0", "id": None, "error": {"code": -32603, "message": "it went wrong"}},
        )
    elif name == "not_jsonrpc":
        _write(out, {"status": "ok", "answer": 42})
    elif name == "noise":
        lines = int(float(args.get("megabytes", 50)) * 1_000_000 / len(NOISE_LINE))
        block = NOISE_LINE * 1000
        for _ in range(lines // 1000):
            out.write(block)
        out.write(NOISE_LINE * (lines % 1000))
        _write(out, {"jsonrpc": "2.0", "id": request_id, "result": _result("done")})
    elif name == "late":
        # In a thread: the next calls are answered meanwhile, and this answer comes after the
        # client may have given up on it (a late answer, not a wrong one).
        def answer_later() -> None:
            time.sleep(float(args.get("seconds", 5)))
            _write(out, {"jsonrpc": "2.0", "id": request_id, "result": _result("late")})

        threading.Thread(target=answer_later).start()
    else:
        _write(out, {"jsonrpc": "2.0", "id": request_id, "result": _result(str(args.get("text")))})


def main() -> None:
    global _flood
    pidfile = os.environ.get("RAW_PIDFILE")
    if pidfile:
        with open(pidfile, "a") as record:
            record.write(f"{os.getpid()}\n")
    out = sys.stdout.buffer
    for line in sys.stdin.buffer:
        try:
            message = json.loads(line)
        except ValueError:
            continue
        method, request_id = message.get("method"), message.get("id")
        if method is None and _flood is not None and str(request_id).startswith("ask-"):
            if _flood.answered(out, message):
                _flood = None
            continue
        if request_id is None:
            continue  # a notification
        params = message.get("params") or {}
        if method == "initialize" and os.environ.get("RAW_BREAK_INIT") == "1":
            _write(out, {"jsonrpc": "2.0", "id": 424242, "result": {}})
            continue
        if method == "initialize":
            result: dict[str, Any] = {
                # An older protocol than the client's newest: there, a server may send requests
                # of its own (elicitation/create) on stdio at any time.
                "protocolVersion": os.environ.get("RAW_PROTOCOL") or params.get("protocolVersion"),
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "raw", "version": "1"},
            }
        elif method == "tools/list":
            result = {"tools": [_tool(name) for name in TOOLS]}
        elif method == "tools/call":
            _call(out, request_id, params.get("name", ""), params.get("arguments") or {})
            continue
        else:
            _write(
                out,
                {
                    "jsonrpc": "2.0",
                    "id": request_id,
                    "error": {"code": -32601, "message": f"no method {method}"},
                },
            )
            continue
        _write(out, {"jsonrpc": "2.0", "id": request_id, "result": result})


if __name__ == "__main__":
    main()

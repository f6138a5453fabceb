"""A deliberately broken pod: a proxy in front of a real pod that breaks one protocol rule.

    python broken_pod.py --fault swallow-pause --socket OUTER -- REAL-POD-COMMAND...

The real pod listens on its own socket (its command says where, e.g. ``{socket}.inner``);
this proxy listens on ``OUTER`` and relays lines both ways, except:

* ``swallow-pause``: ``pause`` lines never reach the pod;
* ``paused-says-idle``: ``get_status`` replies report ``idle`` instead of ``paused``;
* ``approve-as-deny``: ``approve`` lines reach the pod as ``deny``;
* ``session-as-once``: ``approve`` lines reach the pod with ``scope: "once"``;
* ``cancel-ends-paused``: ``run_end`` ``cancelled`` reaches clients as ``paused``;
* ``compaction-survives``: a compaction that was stopped is announced as committed;
* ``ignore-answer``: ``answer_elicitation`` lines never reach the pod;
* ``answer-as-decline``: ``answer_elicitation`` lines reach the pod as a ``decline``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import subprocess
import sys
from pathlib import Path


def _inner_socket(command: list[str]) -> Path:
    return Path(command[command.index("--socket") + 1])


def _client_line(fault: str, line: bytes) -> bytes | None:
    if fault in ("swallow-pause", "ignore-answer"):
        swallowed = "pause" if fault == "swallow-pause" else "answer_elicitation"
        with contextlib.suppress(ValueError):
            if json.loads(line).get("method") == swallowed:
                return None
    if fault == "answer-as-decline":
        with contextlib.suppress(ValueError):
            raw = json.loads(line)
            if raw.get("method") == "answer_elicitation":
                raw["params"] = {"id": (raw.get("params") or {}).get("id"), "action": "decline"}
                return (json.dumps(raw) + "\n").encode()
    if fault == "session-as-once":
        with contextlib.suppress(ValueError):
            raw = json.loads(line)
            if raw.get("method") == "approve":
                raw["params"] = {**(raw.get("params") or {}), "scope": "once"}
                return (json.dumps(raw) + "\n").encode()
    if fault == "approve-as-deny":
        with contextlib.suppress(ValueError):
            raw = json.loads(line)
            if raw.get("method") == "approve":
                raw["method"] = "deny"
                raw["params"] = {"id": (raw.get("params") or {}).get("id")}
                return (json.dumps(raw) + "\n").encode()
    return line


_SEEN_COMPACTING: set[str] = set()


def _pod_line(fault: str, line: bytes) -> bytes:
    if fault in ("cancel-ends-paused", "compaction-survives"):
        with contextlib.suppress(ValueError):
            raw = json.loads(line)
            data = raw.get("data") or {}
            ended = raw.get("event") == "run_end" and data.get("result") == "cancelled"
            if fault == "cancel-ends-paused" and ended:
                data["result"] = "paused"
                return (json.dumps(raw) + "\n").encode()
            if fault == "compaction-survives" and raw.get("event") == "status":
                if data.get("state") == "compacting":
                    _SEEN_COMPACTING.add("yes")
                elif data.get("state") == "idle" and _SEEN_COMPACTING:
                    _SEEN_COMPACTING.clear()
                    fake = {"event": "compaction", "data": {"seq": 999, "summary": "made up"}}
                    return (json.dumps(fake) + "\n").encode() + line
    if fault == "paused-says-idle":
        with contextlib.suppress(ValueError):
            raw = json.loads(line)
            data = raw.get("data") or {}
            if raw.get("event") == "status" and "id" in data and data.get("state") == "paused":
                data.update(status="idle", state="idle")
                return (json.dumps(raw) + "\n").encode()
    return line


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, change: object) -> None:
    # Whatever arrived together is passed on together: the kit pipelines a method and its
    # get_status in one write, and relayed a line at a time they reached the pod apart, so a
    # loaded machine let the pod's turn move on in between (a different failure than the one
    # a fault is there to show).
    pending = b""
    try:
        while chunk := await reader.read(1 << 16):
            *lines, pending = (pending + chunk).split(b"\n")
            outs = [change(line + b"\n") for line in lines]  # type: ignore[operator]
            writer.write(b"".join(out for out in outs if out is not None))
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        writer.close()


async def main(fault: str, outer: Path, command: list[str]) -> int:
    inner = _inner_socket(command)
    pod = subprocess.Popen(command)
    while not inner.exists():
        if pod.poll() is not None:
            return pod.returncode
        await asyncio.sleep(0.02)

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        pod_reader, pod_writer = await asyncio.open_unix_connection(str(inner))
        await asyncio.gather(
            _pipe(reader, pod_writer, lambda line: _client_line(fault, line)),
            _pipe(pod_reader, writer, lambda line: _pod_line(fault, line)),
        )

    server = await asyncio.start_unix_server(serve, path=str(outer))
    while pod.poll() is None:
        await asyncio.sleep(0.05)
    server.close()
    outer.unlink(missing_ok=True)
    return pod.returncode


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "--fault",
        required=True,
        choices=[
            "swallow-pause",
            "paused-says-idle",
            "approve-as-deny",
            "session-as-once",
            "cancel-ends-paused",
            "compaction-survives",
            "ignore-answer",
            "answer-as-decline",
        ],
    )
    parser.add_argument("--socket", required=True, type=Path)
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    sys.exit(asyncio.run(main(args.fault, args.socket, command)))

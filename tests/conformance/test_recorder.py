"""The kit's recorder keeps every event in order and reads past a pod's garbage."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from conformance.recorder import Mismatch, Recorder


async def test_garbage_is_kept_aside_and_later_events_still_arrive(short_dir: Path) -> None:
    path = short_dir / "s"

    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.readline()  # the kit's get_status
        writer.write(b'{"event": "hello"}\nnot an event\n{"event": "status", "data": {"id": ')
        writer.write(b'"kit-status-1", "status": "idle"}}\n')
        await writer.drain()
        await reader.read()
        writer.close()

    server = await asyncio.start_unix_server(handle, str(path))
    try:
        recorder = await Recorder.connect(path)
        seen = await recorder.status(timeout=5)
        assert seen.data == {"id": "kit-status-1", "status": "idle"}
        assert [e.event for e in recorder.events] == ["hello", "status"]
        assert recorder.garbage == ["not an event\n"]
        with pytest.raises(Mismatch, match=r"timed out after 0\.1 s waiting for nothing"):
            await recorder.wait_for(lambda e: False, start=0, timeout=0.1, what="nothing")
        await recorder.close()
    finally:
        server.close()
        await server.wait_closed()

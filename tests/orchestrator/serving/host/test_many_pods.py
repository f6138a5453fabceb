"""Many pods in one host at once, over their real sockets: turns stream side by side while some
are paused and resumed, tools run, and every session stays complete and wire-valid; a pod's
MCP server leaves with it on an unload and comes back with it."""

from __future__ import annotations

import asyncio
import json
import secrets
import sys
from pathlib import Path
from typing import Any

from orchestrator.adapters.session import load_session
from orchestrator.config.model import PodConfig
from orchestrator.core.history import Item, ToolResult, UserMessage
from orchestrator.core.segments import TextSegment
from orchestrator.core.validator import validate_wire
from orchestrator.core.wire import to_wire
from orchestrator.serving.client import PodClient
from orchestrator.serving.host import Host, ask_host
from tests.e2e.harness import collect_until
from tests.processes import gone, kill_all, wait_running

PODS = 8
PAUSED = {1, 4, 6}
"""Pods paused mid-stream and resumed while the others stream on."""


def _script(tmp_path: Path, name: str) -> Path:
    """A turn that reads a file, then streams a long answer slowly enough to be paused in."""
    replies: list[dict[str, Any]] = [
        {"text": "reading", "tool_calls": [{"name": "read_file", "input": {"path": "README.md"}}]},
        {"text": f"{name} says " + "word " * 120, "chunk_size": 4, "chunk_delay_s": 0.01},
        {"text": f"{name} carries on"},  # the resumed turn asks again
    ]
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps({"replies": replies}))
    return path


async def _load(host: Host, tmp_path: Path, short_dir: Path, name: str) -> Path:
    workspace = tmp_path / name
    workspace.mkdir()
    (workspace / "README.md").write_text(f"# {name}\n")
    config = PodConfig(
        workspace=workspace,
        name=name,
        provider="scripted",
        scripted_script=_script(tmp_path, name),
        sandbox={"mode": "off"},  # type: ignore[arg-type]
        session=tmp_path / f"{name}.jsonl",
    )
    row = await ask_host(
        "load",
        {"config": config.model_dump(mode="json"), "socket": str(short_dir / f"{name}.sock")},
        path=host.control_path,
    )
    return Path(row["socket"])


async def _drive(socket: Path, pause: bool) -> list[str]:
    """One pod's turn; paused mid-stream and resumed when ``pause``; the run_end results."""
    client = await PodClient.connect(socket)
    await client.send("run", {"input": "go"})
    results: list[str] = []
    if pause:
        await collect_until(client, "tool_result", timeout=60)  # then the long answer streams
        await collect_until(client, "text_delta", timeout=60)
        await client.send("pause")
        events = await collect_until(client, "run_end", timeout=60)
        results.append(events[-1].data["result"])
        await client.send("resume")
    events = await collect_until(client, "run_end", timeout=120)
    results.append(events[-1].data["result"])
    await client.close()
    return results


def _items(path: Path) -> list[Item]:
    loaded = load_session(path)
    assert not loaded.warnings, loaded.warnings  # no torn, repeated or stray line
    return loaded.items


async def test_turns_stream_side_by_side_while_some_pause_and_resume(
    host: Host, tmp_path: Path, short_dir: Path
) -> None:
    names = [f"m{n}" for n in range(PODS)]
    sockets = [await _load(host, tmp_path, short_dir, name) for name in names]
    results = await asyncio.gather(
        *(_drive(socket, n in PAUSED) for n, socket in enumerate(sockets))
    )
    for n, got in enumerate(results):
        assert got == (["paused", "finished"] if n in PAUSED else ["finished"]), names[n]
    listing = await ask_host("list", path=host.control_path)
    rows = {r["name"]: r for r in listing["pods"]}
    assert {rows[name]["state"] for name in names} == {"idle"}
    for n, name in enumerate(names):
        items = _items(tmp_path / f"{name}.jsonl")
        # As the next turn's request would send it.
        nxt = UserMessage(segments=[TextSegment(text="next")], text="next")
        assert validate_wire(to_wire([*items, nxt])) == [], name
        answers = [b.text for i in items for b in getattr(i, "blocks", []) if b.type == "text"]
        # Each pod's own conversation, nothing of another's.
        assert all(a.startswith((name + " ", "reading")) for a in answers), (name, answers)
        reads = [i for i in items if isinstance(i, ToolResult)]
        assert len(reads) == 1 and not reads[0].is_error, name
        if n in PAUSED:
            # The answer cut off by the pause was never committed; the resumed turn asked again.
            assert answers == ["reading", f"{name} carries on"], name
        else:
            assert len(answers) == 2 and answers[1].startswith(f"{name} says word"), name


async def test_a_pod_with_an_mcp_server_unloads_it_and_starts_it_again_on_reload(
    host: Host, tmp_path: Path, short_dir: Path
) -> None:
    zone = f"Etc/GMT-{secrets.randbelow(12) + 1}"
    server = [sys.executable, "-m", "mcp_server_time", "--local-timezone", zone]
    marker = " ".join(server)
    call = {"name": "mcp__time__get_current_time", "input": {"timezone": "UTC"}}
    # A reloaded pod reads its script from the top again: each turn is the same two replies.
    script = tmp_path / "time.json"
    script.write_text(json.dumps({"replies": [{"tool_calls": [call]}, {"text": "noted"}]}))
    workspace = tmp_path / "t"
    workspace.mkdir()
    config = PodConfig(
        workspace=workspace,
        name="t",
        provider="scripted",
        scripted_script=script,
        sandbox={"mode": "off"},  # type: ignore[arg-type]
        session=tmp_path / "t.jsonl",
        mcp={
            "servers": {"time": {"command": server[0], "args": server[1:], "permission": "allow"}}
        },  # type: ignore[arg-type]
    )
    row = await ask_host(
        "load",
        {"config": config.model_dump(mode="json"), "socket": str(short_dir / "t.sock")},
        path=host.control_path,
    )
    socket = Path(row["socket"])
    try:
        for turn in (1, 2):
            client = await PodClient.connect(socket)  # the second connection loads it again
            await client.send("run", {"input": f"what time is it? ({turn})"})
            events = await collect_until(client, "run_end", timeout=60)
            assert events[-1].data["result"] == "finished"
            [result] = [e.data for e in events if e.event == "tool_result"]
            assert not result["is_error"] and "UTC" in json.dumps(result), result
            wait_running(marker, 1)
            await client.close()
            if turn == 1:
                for _ in range(200):
                    if host.slots["t"].clients == 0:
                        break
                    await asyncio.sleep(0.01)
                await ask_host("evict", {"name": "t"}, path=host.control_path)
                assert gone(marker), "the unloaded pod's MCP server still runs"
        items = _items(tmp_path / "t.jsonl")
        assert [i.kind for i in items].count("user_message") == 2
        assert sum(isinstance(i, ToolResult) and not i.is_error for i in items) == 2
    finally:
        kill_all(marker)

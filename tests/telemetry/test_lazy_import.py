"""Without ``[telemetry]``, a pod that runs a whole turn imports nothing of OpenTelemetry
(asserted on ``sys.modules`` in a fresh process); with it, it does, so the check can fail.

The anthropic SDK imports the OpenTelemetry *API* itself (its own call spans, sent to the
global provider, which the pod never sets): the probe imports it first, through the test
harness, and counts what the pod added after; the SDK and the exporters are never loaded."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

_PROBE = r"""
import asyncio, json, sys
from pathlib import Path
from tests.e2e.harness import ScriptedReply, ScriptedToolCall, collect_until, running_pod
before = set(sys.modules)

async def main(workspace, sockets, telemetry):
    read = ScriptedToolCall(name="read_file", input={"path": "README.md"})
    replies = [ScriptedReply(tool_calls=[read]), ScriptedReply(text="done")]
    extra = {"telemetry": telemetry} if telemetry else {}
    async with running_pod(workspace, sockets, replies=replies, **extra) as pod:
        client = await pod.client()
        await client.send("run", {"input": "read it"})
        events = await collect_until(client, "run_end", timeout=30)
        assert events[-1].data == {"result": "finished"}, events[-1].data
        await client.close()

workspace, sockets, telemetry = Path(sys.argv[1]), Path(sys.argv[2]), json.loads(sys.argv[3])
asyncio.run(main(workspace, sockets, telemetry))
ours = ("opentelemetry", "orchestrator.adapters.telemetry")
loaded = [m for m in set(sys.modules) - before if m.split(".")[0] in ours or m.startswith(ours[1])]
sdk = [m for m in sys.modules if m.startswith(("opentelemetry.sdk", "opentelemetry.exporter"))]
print(json.dumps(sorted(loaded + sdk)))
"""


def _loaded(workspace: Path, sockets: Path, telemetry: dict[str, str] | None) -> list[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env |= {"PYTHONPATH": str(Path(__file__).parents[2]), "OTEL_EXPORTER_OTLP_TIMEOUT": "1"}
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, str(workspace), str(sockets), json.dumps(telemetry)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return list(json.loads(done.stdout.strip().splitlines()[-1]))


@pytest.mark.parametrize("configured", [False, True])
def test_opentelemetry_is_imported_only_when_configured(
    workspace: Path, short_dir: Path, configured: bool
) -> None:
    telemetry = {"otlp_endpoint": "http://127.0.0.1:9"} if configured else None
    loaded = _loaded(workspace, short_dir, telemetry)
    if configured:
        assert "opentelemetry.sdk.trace" in loaded
    else:
        assert loaded == []

"""Without ``[telemetry]``, a pod that runs a whole turn imports nothing of OpenTelemetry
(asserted on ``sys.modules`` in a fresh process); with it, it does, so the check can fail.

The pod runs on the scripted provider: the anthropic SDK imports the OpenTelemetry *API*
itself, for its own call spans (sent to the global provider, which the pod never sets)."""

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
from orchestrator.adapters.providers.scripted import (
    ScriptedProvider, ScriptedReply, ScriptedToolCall,
)
from orchestrator.config.model import PodConfig
from orchestrator.serving.client import PodClient
from orchestrator.serving.pod import serve_pod

async def main(workspace, sockets, telemetry):
    read = ScriptedToolCall(name="read_file", input={"path": "README.md"})
    provider = ScriptedProvider(replies=[ScriptedReply(tool_calls=[read]), ScriptedReply(text="ok")])
    extra = {"telemetry": telemetry} if telemetry else {}
    config = PodConfig(workspace=workspace, name="t", provider="scripted", **extra)
    ready, socket = asyncio.Event(), sockets / "pod.sock"
    served = asyncio.create_task(serve_pod(config, socket_path=socket, provider=provider, ready=ready))
    await ready.wait()
    client = await PodClient.connect(socket)
    await client.send("run", {"input": "read it"})
    end = await client.wait_for("run_end", timeout=30)
    assert end.data == {"result": "finished"}, end.data
    await client.send("shutdown")
    await client.close()
    await asyncio.wait_for(served, 30)

workspace, sockets, telemetry = Path(sys.argv[1]), Path(sys.argv[2]), json.loads(sys.argv[3])
asyncio.run(main(workspace, sockets, telemetry))
loaded = [m for m in sys.modules if m == "opentelemetry" or m.startswith("opentelemetry.")]
print(json.dumps(sorted(loaded)))
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

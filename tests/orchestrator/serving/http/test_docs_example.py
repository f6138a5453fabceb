"""docs/http.md's httpx script, run as written against a served host (its workspace path
replaced by a real one): it adds a pod, streams a prompt's answer and ends at ``run_end``."""

from __future__ import annotations

import asyncio
import os
import re
import sys
from pathlib import Path

from orchestrator.serving.http.address import host_http_info_path
from tests.orchestrator.serving.http.api import start_api, workspace

REPO = Path(__file__).resolve().parents[4]


async def test_the_documented_httpx_script_runs(tmp_path: Path, short_dir: Path) -> None:
    doc = (REPO / "docs" / "http.md").read_text()
    block = re.search(r"```python\n(.*?)```", doc, re.DOTALL)
    assert block is not None
    folder = workspace(tmp_path, "project")
    script = tmp_path / "example.py"
    script.write_text(block.group(1).replace("/home/me/project", str(folder)))
    api = await start_api(tmp_path, short_dir, info_path=host_http_info_path())
    try:
        proc = await asyncio.create_subprocess_exec(
            sys.executable,
            str(script),
            env={**os.environ, "PYTHONPATH": str(REPO)},
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        out, err = await asyncio.wait_for(proc.communicate(), 120)
        assert proc.returncode == 0, err.decode()[-2000:]
        # The demo's answer, streamed: its words before the tool call and after its result.
        said = out.decode()
        assert said.startswith("Let me list the files") and "tool loop" in said, said
        rows = (await api.client().get("/v1/pods")).json()["pods"]
        assert [row["name"] for row in rows] == ["project"]
        status = (await api.client().get("/v1/pods/project")).json()
        assert status["turn"] == 1
    finally:
        await api.close()

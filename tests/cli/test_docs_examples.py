"""The commands the README and docs/scripted-provider.md show, run as written in a shell."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

from cli.commands.run import NOT_KEPT
from orchestrator.adapters.providers.scripted import ScriptedReply
from orchestrator.serving.server import socket_is_live
from tests.cli.helpers import pod

REPO = Path(__file__).resolve().parents[2]


def _sh_blocks(doc: Path) -> list[str]:
    return re.findall(r"```sh\n(.*?)```", doc.read_text(encoding="utf-8"), re.DOTALL)


def _shell_env(env: dict[str, str]) -> dict[str, str]:
    """``pod`` and ``python3`` on PATH, as after ``source .venv/bin/activate``."""
    bin_dir = str(Path(sys.executable).parent)
    return {**env, "PATH": f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"}


def test_the_readme_drives_a_pod_over_its_socket(
    env: dict[str, str], workspace: Path, short_dir: Path
) -> None:
    (block,) = [b for b in _sh_blocks(REPO / "README.md") if "socket.socket" in b]
    socket = short_dir / "demo.sock"
    script = block.replace("/tmp/demo.sock", str(socket))
    done = subprocess.run(
        ["bash", "-e", "-c", script],
        cwd=workspace,
        env=_shell_env(env),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    events = [json.loads(line)["event"] for line in lines[:-1]]
    assert events[0] == "status" and events[-1] == "run_end", events
    assert "text_delta" in events and "turn_end" in events
    assert lines[-1] == "stopped"  # `pod shutdown` at the end
    assert not socket.exists()


def test_the_scripted_provider_example_runs_as_documented(
    env: dict[str, str], workspace: Path, short_dir: Path
) -> None:
    doc = REPO / "docs" / "scripted-provider.md"
    text = doc.read_text(encoding="utf-8")
    example = REPO / "docs" / "examples" / "script.json"
    # The first JSON block is the example; later ones show single features of the format.
    shown = re.findall(r"```json\n(.*?)```", text, re.DOTALL)[0]
    assert json.loads(shown) == json.loads(example.read_text(encoding="utf-8"))

    block = next(b for b in _sh_blocks(doc) if "--script" in b)
    serve_line, first, second = block.splitlines()
    assert serve_line.startswith("pod serve --script docs/examples/script.json &")
    socket = short_dir / "pod" / "ws.sock"
    server = subprocess.Popen(
        [sys.executable, "-m", "cli", "serve", "--script", str(example), "--workspace",
         str(workspace), "--socket", str(socket)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        for _ in range(400):
            if socket_is_live(socket) or server.poll() is not None:
                break
            time.sleep(0.05)
        prompt = re.search(r'pod run "(.*?)"', first)
        assert prompt is not None
        done = pod(env, "run", prompt.group(1), "--workspace", str(workspace))
        assert done.returncode == 0, done.stderr
        assert done.stdout == (
            "Let me look for Markdown files.\nThere is one: README.md. It describes a tiny project.\n"
        )
        assert '⚙ glob {"pattern": "*.md"}' in done.stderr
        prompt = re.search(r'pod run "(.*?)"', second)
        assert prompt is not None
        broken = pod(env, "run", prompt.group(1), "--workspace", str(workspace))
        assert broken.returncode == 1
        assert broken.stdout == "This answe\n" and "(`This answe`)" in text
        assert broken.stderr.splitlines() == [
            NOT_KEPT,
            "pod: error: provider_error: the connection dropped",
        ]
    finally:
        pod(env, "shutdown", "--socket", str(socket))
        server.wait(20)


def test_every_reply_field_is_documented() -> None:
    text = (REPO / "docs" / "scripted-provider.md").read_text(encoding="utf-8")
    for name in ScriptedReply.model_fields:
        assert f"| `{name}` |" in text, name


def test_the_readme_and_the_protocol_doc_name_every_method() -> None:
    from orchestrator.protocol.requests import PARAMS_BY_METHOD

    methods = list(PARAMS_BY_METHOD)
    readme = " ".join((REPO / "README.md").read_text(encoding="utf-8").split())
    (listed,) = re.findall(r"Methods: ((?:`\w+`, )+`\w+`)\.", readme)
    assert re.findall(r"`(\w+)`", listed) == methods
    protocol = (REPO / "docs" / "protocol.md").read_text(encoding="utf-8")
    table = protocol.split("## Methods", 1)[1].split("\n\n", 2)[1]
    assert re.findall(r"^\| `(\w+)` \|", table, re.MULTILINE) == methods

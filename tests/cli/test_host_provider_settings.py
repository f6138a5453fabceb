"""A ``pod run`` whose ``ANTHROPIC_BASE_URL`` or key differs from the running host's is told so
and sends nothing, instead of silently talking to the host's endpoint with the host's key
(issue 39, section 2). Against two fake Messages APIs: which one a prompt reached is recorded."""

from __future__ import annotations

import json
from pathlib import Path

from conformance.fake_api import FakeAnthropic
from tests.cli.helpers import pod

KEY = "sk-ant-host-started-with-this-key-0007"
OTHER_KEY = "sk-ant-another-shell-has-this-key-0008"


def _prompts(api: FakeAnthropic) -> list[str]:
    """The last user text of every Messages request the fake API received."""
    said = []
    for request in api.requests:
        if request.path.startswith("/v1/messages") and "count_tokens" not in request.path:
            content = request.body["messages"][-1]["content"]
            blocks = content if isinstance(content, list) else [{"type": "text", "text": content}]
            said += [b["text"] for b in blocks if b.get("type") == "text"]
    return said


def _files_text(*roots: Path) -> bytes:
    """Every regular file under these folders, concatenated (logs, registry, sessions)."""
    out = b""
    for root in roots:
        for path in root.rglob("*"):
            if path.is_file() and not path.is_symlink():
                out += path.read_bytes()
    return out


def test_a_run_with_other_provider_settings_than_the_host_is_refused_not_mixed(
    env: dict[str, str], tmp_path: Path, short_dir: Path
) -> None:
    base = {k: v for k, v in env.items() if k != "POD_NO_HOST"}
    alpha, beta = tmp_path / "alpha", tmp_path / "beta"
    for ws in (alpha, beta):
        ws.mkdir()
        (ws / "README.md").write_text("# ws\n")
    with FakeAnthropic() as first, FakeAnthropic() as second:
        mine = base | {"ANTHROPIC_API_KEY": KEY, "ANTHROPIC_BASE_URL": first.base_url}
        done = pod(mine, "run", "to the first api", "--workspace", str(alpha))
        assert done.returncode == 0, done.stderr
        assert _prompts(first) == ["to the first api"]

        # Another endpoint, same key: a new pod for another workspace is refused by the host.
        elsewhere = mine | {"ANTHROPIC_BASE_URL": second.base_url}
        refused = pod(elsewhere, "run", "meant for the second", "--workspace", str(beta))
        assert refused.returncode == 1, refused.stdout + refused.stderr
        said = refused.stderr.splitlines()[-1]
        assert "the running pod host was started with another ANTHROPIC_BASE_URL" in said
        assert "--no-host" in said and "`pod host stop`" in said
        assert "API_KEY" not in said  # the key is the same: only what differs is named
        # The pod the host already serves for a workspace: joining it is refused too.
        joined = pod(elsewhere, "run", "meant for the second", "--workspace", str(alpha))
        assert joined.returncode == 1, joined.stdout + joined.stderr
        assert "pod alpha runs in the pod host" in joined.stderr
        assert "`pod shutdown alpha`" in joined.stderr
        # Before the fix, both went to the first API, with the host's key.
        assert _prompts(first) == ["to the first api"] and _prompts(second) == []

        # Same endpoint, another key: refused, naming the key, never showing either.
        other_key = mine | {"ANTHROPIC_API_KEY": OTHER_KEY}
        refused = pod(other_key, "run", "billed to whom?", "--workspace", str(beta))
        assert refused.returncode == 1
        assert "another ANTHROPIC_API_KEY than yours" in refused.stderr
        assert KEY not in refused.stderr and OTHER_KEY not in refused.stderr
        assert _prompts(first) == ["to the first api"]

        # What the message offers works: --no-host runs a pod with this shell's settings.
        own = pod(elsewhere, "run", "meant for the second", "--no-host", "--workspace", str(beta))
        assert own.returncode == 0, own.stderr
        assert _prompts(second) == ["meant for the second"]
        # And the host still serves callers with its own settings.
        again = pod(mine, "run", "first again", "--workspace", str(alpha))
        assert again.returncode == 0, again.stderr
        assert _prompts(first) == ["to the first api", "first again"]
        keys = {r.headers.get("x-api-key") for r in first.requests + second.requests}
        assert keys <= {KEY, None}
    # Only digests crossed to the host: neither key is in any log, registry or session.
    written = _files_text(short_dir, tmp_path)
    assert KEY.encode() not in written and OTHER_KEY.encode() not in written
    assert json.loads(pod(base, "ls", "--json").stdout)  # the pods are still there

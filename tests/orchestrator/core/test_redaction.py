"""Known secret values are replaced by ``[redacted]`` in tool output before it is committed."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from orchestrator.config.mcp import McpServerConfig
from orchestrator.core.history import ToolResult
from orchestrator.core.redaction import REDACTED, Redactor, secret_values

KEY = "sk-ant-api03-abcdefghijklmnop"


def test_secret_looking_variables_of_the_pod_are_secrets() -> None:
    environ = {
        "ANTHROPIC_API_KEY": KEY,
        "GITHUB_TOKEN": "ghp_1234567890",
        "DB_PASSWORD": "hunter2-but-longer",
        "SHORT_TOKEN": "abc",  # too short to tell from ordinary text
        "HOME": "/home/someone",
        "EDITOR": "vim",
    }
    assert set(secret_values(environ, {})) == {KEY, "ghp_1234567890", "hunter2-but-longer"}


def test_mcp_header_and_env_values_are_secrets() -> None:
    environ = {"SERVICE_CREDENTIAL": "svc-credential-42", "PLAIN": "visible-value-1"}
    servers = {
        "api": McpServerConfig(
            url="http://127.0.0.1:9/mcp",
            headers={
                "Authorization": "Bearer literal-token-from-the-editor",
                "X-Trace": "${SERVICE_CREDENTIAL}",
                "Accept": "application/json",
            },
        ),
        "local": McpServerConfig(
            command="srv", env={"API_KEY": "env-literal-secret", "MODE": "${PLAIN}-x"}
        ),
    }
    values = set(secret_values(environ, servers))
    assert "literal-token-from-the-editor" in values  # the token of a Bearer header
    assert "svc-credential-42" in values  # every ${ENV} reference in a header
    assert "env-literal-secret" in values  # an env entry whose name looks secret
    assert "visible-value-1" in values  # a ${ENV} reference in a server's env is a secret too
    assert "application/json" not in values


def test_redaction_replaces_every_occurrence_longest_first() -> None:
    redactor = Redactor([KEY, KEY[:12], "ghp_1234567890"])
    text, count = redactor.redact(f"key={KEY}\nagain {KEY} and ghp_1234567890, part {KEY[:12]}")
    assert text == f"key={REDACTED}\nagain {REDACTED} and {REDACTED}, part {REDACTED}"
    assert count == 4
    assert Redactor([]).redact(f"x {KEY}") == (f"x {KEY}", 0)


def test_a_result_is_redacted_and_says_so() -> None:
    redactor = Redactor([KEY])
    result = ToolResult(call_id="t", summary=f"bash: echo {KEY}", content=f"{KEY}\n")
    clean = redactor.result(result)
    assert clean.summary == f"bash: echo {REDACTED}" and clean.content == f"{REDACTED}\n"
    untouched = ToolResult(call_id="t", summary="ok", content="nothing here")
    assert redactor.result(untouched) is untouched


def test_text_that_is_not_valid_unicode_is_made_storable() -> None:
    result = ToolResult(call_id="t", summary="mcp", content="bad \ud800 text")
    assert Redactor([]).result(result).content == "bad \ufffd text"


@given(st.text(), st.lists(st.text(min_size=8, max_size=20), max_size=3))
def test_no_secret_survives(text: str, secrets: list[str]) -> None:
    redactor = Redactor(secrets)
    mixed = text.join(secrets) + text
    out, _ = redactor.redact(mixed)
    for secret in secrets:
        if REDACTED not in secret:
            assert secret not in out.replace(REDACTED, "\0")

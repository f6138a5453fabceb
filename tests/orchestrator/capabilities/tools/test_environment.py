"""The tool process environment: the allow-list, secret-looking names, and /proc protection."""

from __future__ import annotations

import subprocess
import sys

import pytest

from orchestrator.capabilities.tools.environment import tool_environment
from orchestrator.core.redaction import looks_secret

POD_ENV = {
    "PATH": "/usr/bin",
    "HOME": "/home/u",
    "LANG": "C.UTF-8",
    "LC_ALL": "C",
    "ANTHROPIC_API_KEY": "sk",
    "GITHUB_TOKEN": "ghp",
    "AWS_REGION": "eu-west-1",
    "DATABASE_PASSWORD": "pw",
    "PROJECT_MODE": "dev",
    "PROJECT_API_KEY": "k",
    "EDITOR": "vim",
}


def test_defaults_keep_the_basics_and_nothing_else() -> None:
    assert tool_environment(POD_ENV) == {
        "PATH": "/usr/bin",
        "HOME": "/home/u",
        "LANG": "C.UTF-8",
        "LC_ALL": "C",
        "PAGER": "cat",
        "GIT_PAGER": "cat",
    }


def test_prefix_globs_never_pass_secret_looking_names() -> None:
    env = tool_environment(POD_ENV, allow=["PROJECT_*", "AWS_*", "*"])
    assert env["PROJECT_MODE"] == "dev"
    assert env["EDITOR"] == "vim"
    for secret in ("PROJECT_API_KEY", "ANTHROPIC_API_KEY", "GITHUB_TOKEN", "DATABASE_PASSWORD"):
        assert secret not in env
    assert "AWS_REGION" not in env  # AWS_* is all credentials territory


def test_exact_names_pass_even_when_secret_looking() -> None:
    env = tool_environment(POD_ENV, allow=["GITHUB_TOKEN"])
    assert env["GITHUB_TOKEN"] == "ghp"
    assert "ANTHROPIC_API_KEY" not in env


def test_fixed_values_come_last() -> None:
    env = tool_environment(POD_ENV, fixed={"PAGER": "less", "CI": "1", "PATH": "/opt/bin"})
    assert (env["PAGER"], env["CI"], env["PATH"]) == ("less", "1", "/opt/bin")


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("ANTHROPIC_API_KEY", True),
        ("anthropic_base_url", True),
        ("OPENAI_API_KEY", True),
        ("NPM_TOKEN", True),
        ("CLIENT_SECRET", True),
        ("MY_SECRET_VALUE", True),
        ("PGPASSWORD", True),
        ("AWS_ACCESS_KEY_ID", True),
        ("SSH_AUTH_SOCK", True),
        ("GOOGLE_APPLICATION_CREDENTIALS", True),
        ("PATH", False),
        ("KEYBOARD_LAYOUT", False),
        ("TOKENIZERS_PARALLELISM", False),
        ("PROJECT_MODE", False),
    ],
)
def test_looks_secret(name: str, secret: bool) -> None:
    assert looks_secret(name) is secret


@pytest.mark.skipif(sys.platform != "linux", reason="prctl is Linux-only")
def test_forbid_inspection_makes_the_process_non_dumpable() -> None:
    # In a child process: the flag belongs to the whole process, not to this test run.
    probe = (
        "import ctypes\n"
        "from orchestrator.capabilities.tools.environment import forbid_inspection\n"
        "libc = ctypes.CDLL(None)\n"
        "before = libc.prctl(3, 0, 0, 0, 0)\n"  # PR_GET_DUMPABLE
        "print(before, forbid_inspection(), libc.prctl(3, 0, 0, 0, 0))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=30
    )
    assert done.stdout.split() == ["1", "True", "0"]

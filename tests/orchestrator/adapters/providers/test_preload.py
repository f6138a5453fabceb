"""Importing the Anthropic provider on a thread at a pod process's entry."""

from __future__ import annotations

import subprocess
import sys

import pytest

from orchestrator.adapters.providers.preload import wants_provider


@pytest.mark.parametrize(
    ("provider", "key", "expected"),
    [
        ("anthropic", None, True),
        ("scripted", "sk-test", False),
        (None, "sk-test", True),  # no choice made: a key means the Anthropic provider
        (None, None, False),
        (None, "", False),
    ],
)
def test_wants_provider(
    monkeypatch: pytest.MonkeyPatch, provider: str | None, key: str | None, expected: bool
) -> None:
    if key is None:
        monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    else:
        monkeypatch.setenv("ANTHROPIC_API_KEY", key)
    assert wants_provider(provider) is expected


def test_the_provider_is_imported_on_a_thread_and_found_by_the_pod() -> None:
    # In a child process: what is imported belongs to the whole process. The main thread
    # imports the provider while the thread may still be importing it: the import lock
    # makes it wait, and both see one module.
    probe = (
        "import sys, threading\n"
        "from orchestrator.adapters.providers.preload import PROVIDER_MODULE, preload_provider\n"
        "thread = preload_provider()\n"
        "again = preload_provider()\n"
        "print(thread is again, thread.name, thread.daemon)\n"
        "from orchestrator.adapters.providers.anthropic import AnthropicProvider\n"
        "thread.join(120)\n"
        "print(not thread.is_alive(), 'anthropic' in sys.modules,\n"
        "      sys.modules[PROVIDER_MODULE].AnthropicProvider is AnthropicProvider)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=180
    )
    assert done.stdout.split() == ["True", "pod-sdk-import", "True", "True", "True", "True"]


def test_nothing_starts_when_the_provider_is_imported_already() -> None:
    probe = (
        "import orchestrator.adapters.providers.anthropic\n"
        "from orchestrator.adapters.providers.preload import preload_provider\n"
        "print(preload_provider())\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=180
    )
    assert done.stdout.split() == ["None"]

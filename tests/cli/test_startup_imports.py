"""``pod --help`` and ``pod <command> --help`` import nothing heavy (issue 40, §5).

Start-up time is a property of what gets imported, so that is what is asserted, not a time:
one subprocess runs ``pod --help`` and then the help of every command and sub-command in
turn, through the console script's own entry point (``cli.main.main``, which also closes the
process to inspection first), and reports which modules each one added. No module of the
forbidden set may appear, and the first command that brings one in is named.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

FORBIDDEN = (
    "anthropic",  # the SDK: about a second and a half on its own
    "textual",  # the terminal UI
    "ray",  # fleet clusters
    "bashlex",  # the permission rules' shell parser
    "opentelemetry",  # telemetry: only a pod whose user configured it (docs/telemetry.md)
    "orchestrator.adapters.session",
    "orchestrator.capabilities.permissions",
    "orchestrator.capabilities.tools",
    "orchestrator.config.model",  # the config model pulls in every section's model
    "orchestrator.runtime",
    "orchestrator.serving.pod",
    "orchestrator.serving.host",
    # The HTTP API (docs/http.md): only `--http` or `host.http` imports it.
    "orchestrator.serving.http",
    "fastapi",
    "starlette",
    "uvicorn",
    "sse_starlette",
)
"""Packages a help text, or a client of a pod, must not import (a name covers its submodules)."""

HELP_FORBIDDEN = (
    *FORBIDDEN,
    # Typer converts a parameter through a pydantic adapter: a help text converts no value,
    # so nothing of pydantic may load for one (cli/deferred_coercion.py).
    "pydantic",
    "typer._adapters",
)
"""Packages no help text may import: ``FORBIDDEN``, and what a converted value needs."""

_PROBE = r"""
import json, sys
seen = set(sys.modules)  # what cli.main imports on its own counts as the first command's
import typer.main
from cli.main import app, main

def paths(command, prefix):
    yield prefix
    for name, sub in sorted(getattr(command, "commands", {}).items()):
        if not sub.hidden:
            yield from paths(sub, prefix + [name])

commands = list(paths(typer.main.get_command(app), []))
added = {}
for path in commands:
    sys.argv = ["pod", *path, "--help"]
    try:
        main()
    except SystemExit:
        pass
    added[" ".join(path) or "(pod)"] = sorted(set(sys.modules) - seen)
    seen = set(sys.modules)
print(json.dumps(added))
"""


def _heavy(modules: list[str], forbidden: tuple[str, ...] = FORBIDDEN) -> list[str]:
    return [m for m in modules if any(m == f or m.startswith(f + ".") for f in forbidden)]


def test_help_of_every_command_imports_nothing_heavy() -> None:
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root), "COLUMNS": "100"}
    done = subprocess.run(
        [sys.executable, "-c", _PROBE],
        capture_output=True,
        text=True,
        cwd=root,
        env=env,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    added: dict[str, list[str]] = json.loads(done.stdout.splitlines()[-1])
    # The walk reached the commands and their sub-commands, not only the top level.
    assert {"(pod)", "run", "chat", "serve", "host", "host ls", "fleet"} <= set(added)
    offenders = {
        command: heavy for command, mods in added.items() if (heavy := _heavy(mods, HELP_FORBIDDEN))
    }
    assert offenders == {}


def test_the_probe_would_see_a_heavy_import() -> None:
    # The check itself: a module of the set is recognised, with its submodules, and a
    # neighbour whose name only starts the same way is not.
    assert _heavy(["bashlex.parser", "orchestrator.runtime.turn", "anthropic"]) == [
        "bashlex.parser",
        "orchestrator.runtime.turn",
        "anthropic",
    ]
    assert _heavy(["orchestrator.serving.hostile", "rayon", "orchestrator.config.paths"]) == []
    assert _heavy(["pydantic.main", "typer._adapters", "typer.main"], HELP_FORBIDDEN) == [
        "pydantic.main",
        "typer._adapters",
    ]


def test_a_client_of_the_host_imports_neither_the_host_nor_the_runtime(tmp_path: Path) -> None:
    # What `pod run` does before it reaches a pod that runs in the host: ask whether a host
    # runs, and (refused: none listens here) ask it something; then the socket check and the
    # pod client. None of it may import the host itself, the config model or the runtime.
    probe = (
        "import asyncio, json, sys\n"
        "from orchestrator.serving.host import HostError, ask_host, host_running\n"
        "from orchestrator.serving.client import PodClient\n"
        "from orchestrator.serving.server import socket_is_live\n"
        "running = host_running()\n"
        "try:\n"
        "    asyncio.run(ask_host('check', {}))\n"
        "except HostError:\n"
        "    pass\n"
        "print(json.dumps([running, sorted(sys.modules)]))\n"
    )
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root), "XDG_RUNTIME_DIR": str(runtime)}
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    running, modules = json.loads(done.stdout.splitlines()[-1])
    assert running is False
    assert "orchestrator.serving.host.client" in modules  # the probe did ask
    assert set(_heavy(modules)) == {"orchestrator.serving.host", *_host_parts(modules)}


def _host_parts(modules: list[str]) -> list[str]:
    """The host package's light parts a client uses; anything else of it is a failure."""
    light = {"address", "client", "control", "settings"}
    return [
        m
        for m in modules
        if m.startswith("orchestrator.serving.host.") and m.rsplit(".", 1)[1] in light
    ]


def test_the_command_table_names_what_each_module_registers() -> None:
    # `pod run …` builds an app of the `run` module alone, found through COMMANDS: a command
    # a module adds without a line there would never be reached as a first word, and a stale
    # line would build an app without the command it names.
    import importlib

    import typer

    from cli.commands import COMMAND_MODULES, COMMANDS

    registered: dict[str, str] = {}
    for module in COMMAND_MODULES:
        app = typer.Typer()
        importlib.import_module(f"cli.commands.{module}").register(app)
        for command in app.registered_commands:
            assert command.name is not None, f"{module}: a command without an explicit name"
            registered[command.name] = module
        for group in app.registered_groups:
            assert group.name is not None
            registered[group.name] = module
    assert registered == COMMANDS


def test_a_command_named_first_builds_its_module_alone(tmp_path: Path) -> None:
    # `pod run --help` imports no other command's module, and what the first word cannot
    # name alone (an option first, an unknown word, shell completion) gets the whole app.
    probe = (
        "import json, sys\n"
        "sys.argv = ['pod', 'run', '--help']\n"
        "from cli.main import invoked_command, main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "cases = [['run', 'x'], ['host', 'ls'], ['--verbose', 'run'], ['rnu'], []]\n"
        "print(json.dumps([sorted(m for m in sys.modules if m.startswith('cli.commands.')),"
        " [invoked_command(c) for c in cases]]))\n"
    )
    root = Path(__file__).resolve().parents[2]
    env = {**os.environ, "PYTHONPATH": str(root), "COLUMNS": "100"}
    env = {k: v for k, v in env.items() if not k.endswith("_COMPLETE")}
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    modules, named = json.loads(done.stdout.splitlines()[-1])
    # run's own module, and control, whose socket options run shares.
    assert modules == ["cli.commands.control", "cli.commands.run"]
    assert named == ["run", "host", None, None, None]
    completing = subprocess.run(
        [sys.executable, "-c", "from cli.main import invoked_command as i; print(i(['run']))"],
        capture_output=True,
        text=True,
        env={**env, "_POD_COMPLETE": "complete_bash"},
        timeout=120,
    )
    assert completing.stdout.strip() == "None"

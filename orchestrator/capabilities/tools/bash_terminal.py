"""``bash`` in the editor's terminal: while the pod's sandbox is off and the pod's client
serves a terminal (:class:`~orchestrator.capabilities.tools.client_files.ClientTerminal`),
a command runs there, so it shows in the editor's terminal panel.

The pod's rules come along: the command is run as ``env -i /bin/bash -c`` with the
environment the pod would give it, read from a 0600 file the line removes, so no value is in
the command line (the editor's own variables, an API key among them, never reach it), in the
workspace, with the call's timeout. A pause or cancel
kills it in the editor (``terminal/kill``). A command that may have started is never run
again by the pod: when the editor cannot say how it ended, the call fails saying so; only a
command the editor never started falls back to the pod's own run (said in the result).
"""

from __future__ import annotations

import os
import shlex
import tempfile
from collections.abc import Mapping
from pathlib import Path

from orchestrator.adapters.procs.exits import exit_text
from orchestrator.capabilities.tools.base import ToolContext, ToolOutput
from orchestrator.capabilities.tools.client_files import ClientTerminal
from orchestrator.core.tool_output import TOOL_OUTPUT_MAX_BYTES

__all__ = ["FELL_BACK", "editor_argv", "run_in_terminal", "write_env_file"]

FELL_BACK = "[the editor's terminal could not start it ({why}); the pod ran it itself]\n"
"""Put before the output of a command the pod ran after the editor's terminal refused it."""


def editor_argv(command: str, env_file: Path) -> list[str]:
    """The program line the editor runs: the pod's environment (read from ``env_file``, which
    it removes), and nothing of the editor's. The values are not in the line: a command line
    is readable by every user of the machine (``/proc/<pid>/cmdline``), a 0600 file is not."""
    script = f"set -a; . {shlex.quote(str(env_file))}; set +a; rm -f {shlex.quote(str(env_file))}\n"
    return ["/usr/bin/env", "-i", "/bin/bash", "-c", script + command]


def write_env_file(folder: Path, env: Mapping[str, str]) -> Path:
    """The pod's environment for one command, as ``export`` lines in a new 0600 file."""
    fd, name = tempfile.mkstemp(dir=folder, prefix="env-", suffix=".sh")
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        for key, value in sorted(env.items()):
            out.write(f"export {key}={shlex.quote(value)}\n")
    return Path(name)


async def run_in_terminal(
    terminal: ClientTerminal,
    command: str,
    headline: str,
    ctx: ToolContext,
    *,
    timeout_s: float,
    env: Mapping[str, str],
) -> ToolOutput | str:
    """The call's result when the editor ran (or may have run) it; else why it did not start
    (the caller runs it and says so)."""
    ctx.scratch_dir.mkdir(parents=True, exist_ok=True)
    env_file = write_env_file(ctx.scratch_dir, env)
    try:
        run = await terminal.run_command(
            editor_argv(command, env_file),
            ctx.workspace,
            timeout_s,
            TOOL_OUTPUT_MAX_BYTES,
            ctx.call_id,
            # A pause or cancel: what it printed before the kill goes into the interrupted
            # result, as the pod's own run's output does.
            on_interrupt=ctx.partial.append,
        )
    finally:
        env_file.unlink(missing_ok=True)  # the command removes it; one never started does not
    if not run.done and not run.started:
        return run.message or "no reason given"
    if not run.done:
        return ToolOutput(
            summary=f"bash: {headline} — in the editor's terminal; how it ended is unknown",
            content=f"{run.message}. It is not run again: check the editor's terminal.",
            is_error=True,
        )
    output = run.output
    if run.truncated:
        output = "[only the end of the output is kept]\n" + output
    if run.timed_out:
        return ToolOutput(
            summary=f"bash: {headline} — timed out after {timeout_s:g} s (in the editor's terminal)",
            content=f"timed out after {timeout_s:g} s; the command was killed. "
            + (f"Output so far:\n{output}" if output else "No output."),
            is_error=True,
        )
    if run.exit_code is None:
        ended = f"killed by {run.signal}" if run.signal else "ended (no exit code given)"
    else:
        ended = exit_text(run.exit_code)
    return ToolOutput(
        summary=f"bash: {headline} — {ended} (in the editor's terminal)", content=output or None
    )

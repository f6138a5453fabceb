"""What the UI's own views say: ``/help``, ``/status``, ``/model``, ``/jobs``, ``/children``,
``/sessions``, and which child pod ``/attach NAME`` means. Plain text from plain data; the
app draws it.
"""

from __future__ import annotations

import time
from pathlib import Path

from cli.tui.input import SLASH_COMMANDS
from cli.tui.pod_view import PodView, searches_text
from orchestrator.protocol import ChildData, CommandData, JobData

KEYS_HELP = """\
Keys:
  Enter      send; on an empty line while Paused: resume
  Ctrl-J     a new line
  Ctrl-C     pause a running turn; otherwise, twice: leave the UI
  Ctrl-X     cancel the running turn
  Ctrl-D     shut the pod down (twice while a turn runs)
  @          attach a file (Tab completes)
  Up/Down    earlier prompts
  Tab        tool cards: Up/Down choose, Space expands, Esc returns
  Esc Esc    on an empty line: the prompts to rewind to (/rewind)
  PgUp/PgDn  scroll the conversation
Start a message with // to send one that begins with /."""


def help_text() -> str:
    """``/help``: the slash commands, then the keys."""
    commands = "\n".join(f"  /{c.name:<9} {c.summary}" for c in SLASH_COMMANDS)
    return f"Commands (never sent to the model):\n{commands}\n{KEYS_HELP}"


def custom_commands_text(commands: list[CommandData]) -> str:
    """``/help``'s second part: the pod's custom commands (sent to the pod, which expands
    them), and the files a command of the UI or another file shadows."""
    from cli.terminal_text import visible

    own = {c.name for c in SLASH_COMMANDS}
    rows: list[str] = []
    hidden: list[str] = []
    for command in commands:
        name, what = visible(command.name), visible(command.description)
        by = command.shadowed_by or ("builtin" if command.name in own else None)
        if by is not None:
            hidden.append(f"  /{name} ({command.source}: shadowed by {by})")
        else:
            hint = f" {visible(command.argument_hint)}" if command.argument_hint else ""
            rows.append(f"  /{name}{hint}  {what} [{command.source}]")
    if not rows and not hidden:
        return ""
    text = "\n\nCustom commands (the pod expands them; docs/commands.md):\n"
    text += "\n".join(rows) or "  (none)"
    return text + ("\nShadowed:\n" + "\n".join(hidden) if hidden else "")


def status_text(pod: PodView) -> str:
    """``/status``: the pod, its state and turn, provider and model, tokens, workspace."""
    # The machine's state only where it says more than the label (not "Idle (idle)").
    state = f" ({pod.state})" if pod.state and pod.state != pod.status else ""
    searches = f" · {searches_text(pod.web_searches)}" if pod.web_searches else ""
    return (
        f"pod {pod.name} · {pod.state_label}{state} · turn "
        f"{pod.turn}\n{pod.provider}/{pod.model} · tokens in {pod.input_tokens} out "
        f"{pod.output_tokens}{searches}\nworkspace {pod.workspace}"
    )


def model_text(pod: PodView) -> str:
    """``/model``: the model and provider, and how to run another."""
    return (
        f"model {pod.model or '?'} · provider {pod.provider or '?'}\n"
        "The pod keeps its model while it runs: start one with --model NAME, or set "
        'model = "..." in .pod/config.toml.'
    )


def sessions_text(workspace: str) -> str:
    """``/sessions``: the workspace's session files, newest last (``pod sessions ls`` has more)."""
    from orchestrator.adapters.session import sessions_dir

    if not workspace:
        return "The pod did not say which workspace it serves."
    base = sessions_dir(Path(workspace))
    try:
        stats = [(p, p.stat()) for p in base.glob("*.jsonl")] if base.is_dir() else []
    except OSError as exc:
        return f"Cannot list the sessions in {base}: {exc.strerror or exc}"
    if not stats:
        return f"No sessions for {workspace}."
    stats.sort(key=lambda found: found[1].st_mtime_ns)
    files = [p for p, _ in stats]
    rows = [
        f"  {p.stem}  {time.strftime('%Y-%m-%d %H:%M', time.localtime(st.st_mtime))}"
        f"  {st.st_size // 1024} KiB"
        for p, st in stats[-10:]
    ]
    more = f" (the last 10 of {len(files)})" if len(files) > 10 else ""
    return (
        f"Sessions of {workspace}{more}, newest last:\n"
        + "\n".join(rows)
        + "\n`pod sessions show NAME` prints one."
    )


def jobs_listing(jobs: list[JobData], now_ms: int | None = None) -> str:
    """``/jobs``: the pod's background jobs, one line each as ``pod jobs`` prints them."""
    from cli.terminal_text import visible
    from orchestrator.runtime.status import job_lines

    if not jobs:
        return "No background jobs (bash with background: true starts one)."
    lines = job_lines([job.model_dump() for job in jobs], now_ms)
    rows = [f"  {visible(line.removeprefix('job '))}" for line in lines]
    return "\n".join(
        [
            "Background jobs (running ones, and the latest that ended):",
            *rows,
            "`pod jobs --kill ID` ends one and everything it started.",
        ]
    )


def children_text(children: list[ChildData]) -> str:
    """``/children``: one line per child pod, and how to open one."""
    if not children:
        return "No child pods run now (the model starts them with the task tool)."
    lines = ["Child pods (/attach NAME opens one here; leave it to come back):"]
    for child in children:
        doing = f", running {child.tool}" if child.tool else ""
        agent = f" [{child.agent}]" if child.agent else ""
        lines.append(f"  {child.name}{agent}: {child.state}{doing} · {child.tokens:,} tokens")
    return "\n".join(lines)


def pick_child(children: list[ChildData], name: str) -> ChildData | None:
    """The child named ``name``, or whose name ends with ``.name`` or starts the short name."""
    if not name:
        return children[0] if len(children) == 1 else None
    for child in children:
        if child.name == name:
            return child
    matches = [c for c in children if c.name.split(".")[-1].startswith(name)]
    return matches[0] if len(matches) == 1 else None

"""What a child pod did, as its parent's ``task`` result says it (pure).

The facts come from the child's own committed history (its answer, the tools it called, the
files its edits touched) and its status (tokens, cost), so the parent reports what the
child's session holds, not what the parent happened to see stream past.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from orchestrator.capabilities.tools.base import ToolOutput
from orchestrator.core.history import AssistantMessage, Item, TextBlock, ToolResult, UserMessage

EDIT_TOOLS = ("write_file", "edit_file")
ANSWER_MAX_CHARS = 12_000
"""The most of a child's answer the parent's result keeps (the session has it all)."""
DIFF_MAX_CHARS = 8_000


@dataclass(slots=True)
class ChildWork:
    """What a child did since its task began."""

    answer: str = ""
    tools: Counter[str] = field(default_factory=Counter)
    files: list[str] = field(default_factory=list)
    errors: int = 0
    prompted: bool = False
    """Whether the child's session holds the task's prompt at all."""


def work_since_prompt(items: list[Item]) -> ChildWork:
    """The child's work from its first user message on (a task child has one prompt)."""
    work = ChildWork()
    started = False
    for item in items:
        if isinstance(item, UserMessage):
            started = work.prompted = True
            continue
        if not started:
            continue
        if isinstance(item, AssistantMessage):
            text = "".join(b.text for b in item.blocks if isinstance(b, TextBlock)).strip()
            if text:
                work.answer = text
            for call in item.tool_uses:
                work.tools[call.name] += 1
                path = call.input.get("path")
                if call.name in EDIT_TOOLS and isinstance(path, str) and path not in work.files:
                    work.files.append(path)
        elif isinstance(item, ToolResult) and item.is_error:
            work.errors += 1
    return work


@dataclass(frozen=True, slots=True, kw_only=True)
class ChildReport:
    """Everything the parent's result says about one child."""

    name: str
    session: str
    result: str
    """``finished``, ``limit_reached``, ``errored``, ``cancelled``, ``interrupted``, ``died``
    (its process ended mid-task) or ``failed`` (it could not start)."""
    work: ChildWork
    tokens: int = 0
    cost_usd: float | None = None
    detail: str = ""
    """Why it ended that way, when it did not finish (an error, the exit signal)."""
    workspace: str | None = None
    """The child's own worktree, with ``worktree`` isolation."""
    diff: str | None = None
    diff_stat: str | None = None


def _tools_line(work: ChildWork) -> str:
    if not work.tools:
        return "no tools"
    calls = sum(work.tools.values())
    named = ", ".join(f"{name} ×{n}" if n > 1 else name for name, n in work.tools.most_common())
    return f"{calls} tool call{'s' if calls != 1 else ''} ({named})"


def facts_lines(report: ChildReport) -> list[str]:
    """The short account of a child's work: tools, files, tokens, where its session is."""
    work = report.work
    lines = [f"- {_tools_line(work)}"]
    if work.errors:
        lines.append(f"- {work.errors} tool result{'s' if work.errors != 1 else ''} were errors")
    if work.files:
        lines.append(f"- files changed: {', '.join(work.files)}")
    cost = f", ${report.cost_usd:.4f}" if report.cost_usd is not None else ""
    lines.append(f"- {report.tokens:,} tokens{cost}")
    lines.append(f"- session: {report.session}")
    if report.workspace is not None:
        lines.append(f"- worktree: {report.workspace}")
    return lines


def task_output(report: ChildReport) -> ToolOutput:
    """The ``task`` call's result: the child's answer first, then what it did."""
    ok = report.result == "finished"
    headline = f"task {report.name}: {report.result}"
    if report.detail:
        headline += f" — {report.detail}"
    answer = report.work.answer
    if len(answer) > ANSWER_MAX_CHARS:
        answer = answer[:ANSWER_MAX_CHARS] + "\n[… the rest is in the child's session]"
    parts = [answer or "(the child gave no final answer)", "", "What the child did:"]
    parts += facts_lines(report)
    if report.diff_stat:
        parts += ["", "Changes in its worktree (not in this workspace):", report.diff_stat]
    if report.diff:
        diff = report.diff
        if len(diff) > DIFF_MAX_CHARS:
            diff = diff[:DIFF_MAX_CHARS] + "\n[… diff cut; the worktree has it all]"
        parts += ["", diff]
    return ToolOutput(summary=headline, content="\n".join(parts), is_error=not ok)


def interrupted_text(report: ChildReport) -> str:
    """Content for the synthetic result of a ``task`` call closed while its child ran."""
    lines = [f"The child pod {report.name} was stopped before it finished ({report.detail})."]
    if report.work.answer:
        lines += ["Its last words:", report.work.answer[-2000:]]
    lines += ["What it had done:", *facts_lines(report)]
    return "\n".join(lines)

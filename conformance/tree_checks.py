"""The bars every tree case checks: no invalid request, no child run twice, no orphan process.

Each function reads what the kit observed (the fake's requests, the events of the parent's
connections, the pod's session files, the processes seen) and returns problems in words,
never raising; :func:`tree_figures` counts them for the report.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from conformance.proctree import Proc, alive
from conformance.recorder import Seen
from conformance.server import RecordedRequest
from conformance.tree_stimuli import TreeStimuli, user_texts

__all__ = [
    "TreeBars",
    "invalid_request_problems",
    "orphans",
    "session_file_problems",
    "sessions_by_call",
    "task_calls",
    "wire_rerun_problems",
]


@dataclass(slots=True)
class TreeBars:
    """The problems found against each bar, and the figures for the report."""

    invalid: list[str] = field(default_factory=list)
    run_twice: list[str] = field(default_factory=list)
    orphans: list[str] = field(default_factory=list)
    task_calls: int = 0
    child_sessions: int = 0
    processes: int = 0
    """Processes of the tree the kit saw (and checked were gone at the end)."""
    notes: list[str] = field(default_factory=list)

    def problems(self) -> list[str]:
        """Every problem, bar by bar."""
        return [*self.invalid, *self.run_twice, *self.orphans]

    def figures(self) -> dict[str, int]:
        """The counts the report shows for the case."""
        return {
            "task_calls": self.task_calls,
            "child_sessions": self.child_sessions,
            "children_run_twice": len(self.run_twice),
            "orphans": len(self.orphans),
            "invalid_requests": len(self.invalid),
            "processes": self.processes,
        }


def invalid_request_problems(requests: Iterable[RecordedRequest]) -> list[str]:
    """One problem per request the fake refused, from the parent or any child."""
    return [
        f"the fake API refused request {r.request_id} ({r.status}): {r.error}"
        for r in requests
        if r.path.startswith("/v1/messages") and not r.valid
    ]


def task_calls(events: Iterable[Seen]) -> list[str]:
    """The ids of the ``task`` calls the parent announced, in order, once each."""
    ids: dict[str, None] = {}
    for seen in events:
        if seen.event in ("tool_call_start", "tool_call_done") and seen.data.get("name") == "task":
            ids[str(seen.data.get("id"))] = None
    return list(ids)


def sessions_by_call(events: Iterable[Seen]) -> dict[str, set[str]]:
    """Every child session the parent named for each ``task`` call (``child`` events and
    ``status`` ``children``)."""
    found: dict[str, set[str]] = defaultdict(set)
    for seen in events:
        if seen.event == "child":
            views = [seen.data]
        elif seen.event == "status":
            views = [c for c in seen.data.get("children") or [] if isinstance(c, dict)]
        else:
            continue
        for view in views:
            call, session = view.get("call_id"), view.get("session")
            if isinstance(call, str) and isinstance(session, str) and session:
                found[call].add(session)
    return dict(found)


def wire_rerun_problems(
    requests: Sequence[RecordedRequest], stimuli: TreeStimuli, *, held: bool
) -> list[str]:
    """On the wire, a child run twice shows as a request carrying its task more than once
    (given to it again) or as a conversation that starts over (a second child, or a session
    lost): fewer messages than a request of that child before, or, once the tree was
    ``held`` (every child reported the reply to its first request as running or asking, so
    it was committed), a later request that leaves that reply out."""
    problems: list[str] = []
    longest: dict[int, int] = {}
    first: dict[int, int] = {}
    for request in requests:
        body = request.body
        if not isinstance(body, dict) or not request.path.startswith("/v1/messages"):
            continue
        child = stimuli.child_of(body)
        if child is None:
            continue
        marker = stimuli.child_markers[child]
        times = sum(text.count(marker) for text in user_texts(body))
        if times != 1:
            problems.append(
                f"child {child} was given its task {times} times in one conversation "
                f"(request {request.request_id})"
            )
        messages = len(body.get("messages") or [])
        if child not in first:
            first[child] = messages
        elif held and messages <= first[child]:
            problems.append(
                f"child {child} started its task over: request {request.request_id} leaves out "
                "the reply it had already acted on (a second child for the same task call, or "
                "its session lost)"
            )
        elif messages < longest.get(child, 0):
            problems.append(
                f"child {child}'s conversation started over: request {request.request_id} has "
                f"{messages} messages after one with {longest[child]} (a second child for the "
                "same task call, or its session lost)"
            )
        longest[child] = max(longest.get(child, 0), messages)
    return problems


def session_file_problems(state_dir: Path) -> tuple[list[str], list[str], int]:
    """Where the pod keeps sessions in this runtime's format (JSONL under its
    ``XDG_STATE_HOME``): one ``child`` record per ``task`` call, one session per record, and
    one user message in each child session. Returns (problems, notes, child sessions)."""
    from orchestrator.adapters.session import SessionError, load_session
    from orchestrator.core.history import UserMessage

    records: dict[str, list[str]] = defaultdict(list)
    for path in sorted(state_dir.rglob("*.jsonl")):
        try:
            lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        except OSError:
            continue
        for line in lines:
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if isinstance(record, dict) and record.get("type") == "child":
                records[str(record.get("call_id"))].append(str(record.get("session")))
    if not records:
        return [], ["no child records in session files the kit can read: checked on the wire"], 0
    problems: list[str] = []
    sessions: set[str] = set()
    for call, paths in records.items():
        if len(paths) != 1:
            problems.append(f"task call {call} has {len(paths)} child records: {paths}")
        for session in paths:
            sessions.add(session)
            try:
                items = load_session(Path(session)).items
            except (SessionError, OSError) as exc:
                problems.append(f"the child session of task call {call} cannot be read: {exc}")
                continue
            users = sum(1 for item in items if isinstance(item, UserMessage))
            if users != 1:
                problems.append(
                    f"the child session of task call {call} holds {users} user messages, not 1 "
                    f"({session})"
                )
    return problems, [], len(sessions)


def orphans(seen: Iterable[Proc]) -> list[Proc]:
    """The processes of the tree that still run."""
    return [proc for proc in seen if alive(proc)]

"""Results of conformance cases: one :class:`CaseResult` per row, a rich table, a JSON report."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from conformance.thinking import thinking_sent_back
from conformance.web_profile import server_blocks_sent_back

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

    from conformance.cases import Case
    from conformance.server import RecordedRequest
    from conformance.tree_cases import TreeCase

__all__ = [
    "TREE_BARS",
    "CaseResult",
    "Group",
    "Outcome",
    "WireTally",
    "counts",
    "print_report",
    "render_table",
    "run_problems",
    "to_json",
    "tree_line",
    "tree_totals",
    "wire_line",
    "wire_totals",
]

Outcome = Literal["passed", "failed", "skipped"]
Group = Literal["table", "tree"]


@dataclass(frozen=True, slots=True)
class WireTally:
    """What reached a fake API during a row (or a run): Messages requests, how many it
    refused, and how many thinking blocks the accepted ones carried back."""

    requests: int = 0
    invalid: int = 0
    thinking_sent_back: int = 0
    """``thinking`` / ``redacted_thinking`` blocks in assistant messages, over the accepted
    requests (a request carrying a whole history counts each block it holds)."""
    server_blocks_sent_back: int = 0
    """Server tool blocks (``server_tool_use`` and results) in assistant messages, counted
    the same way."""

    @classmethod
    def of(cls, requests: Iterable[RecordedRequest]) -> WireTally:
        """The tally of recorded requests."""
        total = invalid = sent = server = 0
        for request in requests:
            total += 1
            if request.valid:
                sent += thinking_sent_back(request.body)
                server += server_blocks_sent_back(request.body)
            else:
                invalid += 1
        return cls(
            requests=total, invalid=invalid, thinking_sent_back=sent, server_blocks_sent_back=server
        )

    def __add__(self, other: WireTally) -> WireTally:
        return WireTally(
            self.requests + other.requests,
            self.invalid + other.invalid,
            self.thinking_sent_back + other.thinking_sent_back,
            self.server_blocks_sent_back + other.server_blocks_sent_back,
        )

    def to_dict(self) -> dict[str, int]:
        """JSON form."""
        return {
            "requests": self.requests,
            "invalid_requests": self.invalid,
            "thinking_sent_back": self.thinking_sent_back,
            "server_blocks_sent_back": self.server_blocks_sent_back,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class CaseResult:
    """How one row fared against the pod under test."""

    id: str
    """``<state>-<event>``."""
    state: str
    event: str
    expected: str
    """The row's expectation in table words: ``→ pausing``, ``error not_running``, ``no-op``."""
    setup: str
    """How the kit reached the source state."""
    outcome: Outcome
    duration_s: float = 0.0
    reasons: tuple[str, ...] = ()
    """Why the row failed (or was skipped)."""
    notes: tuple[str, ...] = ()
    """Things worth knowing about a passing row (a check that had nothing to check)."""
    detail: tuple[str, ...] = field(default=(), repr=False)
    """The events seen, and the pod's output when it crashed, for failures."""
    wire: WireTally = WireTally()
    """The requests the row's fake API received."""
    group: Group = "table"
    """``table``: a transition-table row; ``tree``: a tree case (:mod:`conformance.tree_cases`)."""
    tree: dict[str, int] | None = None
    """A tree case's bars: ``task_calls``, ``child_sessions``, ``children_run_twice``,
    ``orphans``, ``invalid_requests``, and ``processes`` (of the tree, seen by the kit)."""

    @classmethod
    def _base(cls, case: Case | TreeCase) -> dict[str, Any]:
        return {**case.report_fields(), "group": "tree" if case.id.startswith("tree-") else "table"}

    @classmethod
    def passed(
        cls,
        case: Case | TreeCase,
        duration_s: float,
        *,
        notes: Sequence[str] = (),
        wire: WireTally = WireTally(),
        tree: dict[str, int] | None = None,
    ) -> CaseResult:
        """A row whose every check held."""
        return cls(
            **cls._base(case),
            outcome="passed",
            duration_s=duration_s,
            notes=tuple(notes),
            wire=wire,
            tree=tree,
        )

    @classmethod
    def failed(
        cls,
        case: Case | TreeCase,
        reasons: Sequence[str],
        duration_s: float,
        *,
        notes: Sequence[str] = (),
        detail: Sequence[str] = (),
        wire: WireTally = WireTally(),
        tree: dict[str, int] | None = None,
    ) -> CaseResult:
        """A row with at least one failed check."""
        return cls(
            **cls._base(case),
            outcome="failed",
            duration_s=duration_s,
            reasons=tuple(reasons),
            notes=tuple(notes),
            detail=tuple(detail),
            wire=wire,
            tree=tree,
        )

    @classmethod
    def skipped(cls, case: Case | TreeCase, reason: str) -> CaseResult:
        """A row a client cannot send."""
        return cls(**cls._base(case), outcome="skipped", reasons=(reason,))

    def message(self) -> str:
        """Reasons, notes and detail as one block of text (the pytest failure report)."""
        lines = [
            f"{'tree case' if self.group == 'tree' else 'row'} {self.state} × {self.event} "
            f"(expected: {self.expected}; setup: {self.setup})"
        ]
        lines += [f"  - {reason}" for reason in self.reasons]
        lines += [f"  note: {note}" for note in self.notes]
        if self.detail:
            lines += ["", *self.detail]
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {
            "id": self.id,
            "state": self.state,
            "event": self.event,
            "expected": self.expected,
            "setup": self.setup,
            "outcome": self.outcome,
            "duration_s": round(self.duration_s, 3),
            "reasons": list(self.reasons),
            "notes": list(self.notes),
            "detail": list(self.detail),
            "group": self.group,
            **self.wire.to_dict(),
            **({"tree": dict(self.tree)} if self.tree is not None else {}),
        }


def counts(results: Sequence[CaseResult]) -> dict[str, int]:
    """``{"passed": n, "failed": n, "skipped": n}``."""
    tally = Counter(r.outcome for r in results)
    return {name: tally.get(name, 0) for name in ("passed", "failed", "skipped")}


def wire_totals(results: Sequence[CaseResult]) -> WireTally:
    """The requests of every row, added up."""
    total = WireTally()
    for result in results:
        total += result.wire
    return total


TREE_BARS = (
    "task_calls",
    "child_sessions",
    "children_run_twice",
    "orphans",
    "invalid_requests",
    "processes",
)
"""A tree case's figures, in report order."""


def tree_totals(results: Sequence[CaseResult]) -> dict[str, int] | None:
    """The tree cases' bars added up (None when no tree case ran)."""
    ran = [r.tree for r in results if r.tree is not None]
    if not ran:
        return None
    return {bar: sum(t.get(bar, 0) for t in ran) for bar in TREE_BARS} | {"cases": len(ran)}


def tree_line(results: Sequence[CaseResult]) -> str:
    """One line on the tree cases' bars, or "" when none ran."""
    totals = tree_totals(results)
    if totals is None:
        return ""
    return (
        f"tree: {totals['cases']} cases, {totals['task_calls']} task calls, "
        f"{totals['child_sessions']} child sessions, {totals['children_run_twice']} children "
        f"run twice, {totals['orphans']} orphan processes (of {totals['processes']} seen), "
        f"{totals['invalid_requests']} invalid requests"
    )


def run_problems(results: Sequence[CaseResult], *, thinking: bool, web: bool = False) -> list[str]:
    """What fails a run as a whole, beyond its rows: under the thinking profile, requests
    reached the fake API and not one carried a thinking block back (thinking was quietly off,
    or the pod drops what the model thought); under the server-tools profile, not one carried
    a server tool block back (web search was off, or the pod drops the API's own tools)."""
    total = wire_totals(results)
    problems = []
    if thinking and total.requests and not total.thinking_sent_back:
        problems.append(
            f"thinking profile: {total.requests} requests reached the fake API and none sent a "
            "thinking block back; is thinking on in the pod (--thinking-args)?"
        )
    if web and total.requests and not total.server_blocks_sent_back:
        problems.append(
            f"server-tools profile: {total.requests} requests reached the fake API and none "
            "sent a server tool block back; is web search on in the pod (--web-args)?"
        )
    return problems


def wire_line(results: Sequence[CaseResult], *, thinking: bool, web: bool = False) -> str:
    """The summary of what reached the wire, as the command line and pytest print it."""
    wire = wire_totals(results)
    line = (
        f"{wire.requests} requests, {wire.invalid} refused by the fake API, "
        f"{wire.thinking_sent_back} thinking blocks sent back"
        + (" (thinking profile)" if thinking else "")
    )
    if web:
        line += f", {wire.server_blocks_sent_back} server tool blocks (server-tools profile)"
    return line


def to_json(
    results: Sequence[CaseResult],
    *,
    command: Sequence[str],
    thinking: bool = False,
    web: bool = False,
) -> str:
    """The JSON report: the command, the counts, the requests on the wire and every row."""
    problems = run_problems(results, thinking=thinking, web=web)
    return json.dumps(
        {
            "command": list(command),
            "thinking": thinking,
            "web": web,
            "counts": counts(results),
            "wire": wire_totals(results).to_dict(),
            "tree": tree_totals(results),
            "problems": problems,
            "ok": counts(results)["failed"] == 0 and not problems,
            "rows": [r.to_dict() for r in results],
        },
        indent=2,
        ensure_ascii=False,
    )


_STYLE = {"passed": "green", "failed": "bold red", "skipped": "dim"}


def render_table(results: Sequence[CaseResult], *, show_skipped: bool = True) -> Table:
    """A rich table: one line per row with its outcome, duration and reasons."""
    from rich.table import Table

    table = Table(title="pod conformance", show_lines=False)
    table.add_column("state")
    table.add_column("event")
    table.add_column("expected")
    table.add_column("setup", style="dim")
    table.add_column("result")
    table.add_column("time", justify="right")
    table.add_column("why", overflow="fold")
    for result in results:
        if result.outcome == "skipped" and not show_skipped and result.group == "table":
            continue  # a tree case skipped says why the pod has no tree: always shown
        why = "; ".join(result.reasons) if result.outcome != "passed" else "; ".join(result.notes)
        table.add_row(
            result.state,
            result.event,
            result.expected,
            result.setup,
            f"[{_STYLE[result.outcome]}]{result.outcome}[/]",
            f"{result.duration_s:.2f}s" if result.outcome != "skipped" else "",
            why,
        )
    return table


def print_report(
    console: Console,
    results: Sequence[CaseResult],
    *,
    show_skipped: bool,
    thinking: bool = False,
    web: bool = False,
) -> None:
    """The table, then the failures in full, then the requests on the wire, then the run's
    own problems (:func:`run_problems`) and one summary line."""
    console.print(render_table(results, show_skipped=show_skipped))
    for result in results:
        if result.outcome == "failed":
            console.rule(f"[bold red]{result.id}")
            console.print(result.message(), markup=False, highlight=False)
    console.print(wire_line(results, thinking=thinking, web=web), highlight=False)
    tree = tree_line(results)
    if tree:
        console.print(tree, highlight=False)
    problems = run_problems(results, thinking=thinking, web=web)
    for problem in problems:
        console.print(f"[bold red]{problem}[/]", highlight=False)
    tally = counts(results)
    colour = "red" if tally["failed"] or problems else "green"
    console.print(
        f"[{colour}]{tally['passed']} passed, {tally['failed']} failed, "
        f"{tally['skipped']} skipped[/] in {sum(r.duration_s for r in results):.1f} s"
    )

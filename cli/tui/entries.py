"""The conversation's entries: what the chat UI draws, one dataclass per kind of entry.

Plain data built from typed protocol events and ``get_history`` items (by
:class:`~cli.tui.model.ChatModel`); the Textual widgets only draw it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, TypeAlias

from cli.compaction_text import kept_text
from cli.elicitation import headline
from cli.tui.keys import APPROVAL_KEYS, FORM_KEYS, PLAN_KEYS, URL_KEYS
from cli.tui.titles import NOT_KEPT, TitleParts, cut_end, fit_outcome
from cli.tui.web_entries import ServerToolEntry, SourcesEntry
from orchestrator.adapters.mcp.forms import Form, FormError, form_fields
from orchestrator.core.preread import PREREAD_ORIGIN, preread_call
from orchestrator.core.segments import Segment
from orchestrator.protocol import ChildData, ElicitationRequestData

__all__ = [
    "ALERT_GLYPHS",
    "NOT_KEPT",
    "OUTCOME_GLYPHS",
    "RESOLVED",
    "AlertEntry",
    "ApprovalEntry",
    "AssistantEntry",
    "Change",
    "ElicitationEntry",
    "Entry",
    "InfoEntry",
    "NoteEntry",
    "ServerToolEntry",
    "SourcesEntry",
    "ThinkingEntry",
    "TitleParts",
    "ToolEntry",
    "UserEntry",
    "compaction_note",
    "cut_end",
    "fit_outcome",
    "note_entry",
    "tokens_k",
]


@dataclass
class UserEntry:
    """A committed user message with its segments."""

    segments: list[Segment]


@dataclass
class AssistantEntry:
    """Assistant text; ``streaming`` while deltas arrive, ``interrupted`` if never committed."""

    text: str = ""
    streaming: bool = False
    interrupted: bool = False


@dataclass
class ThinkingEntry:
    """Assistant thinking text."""

    text: str = ""


@dataclass
class ToolEntry:
    """One tool call, what it printed while it ran, and, once it arrived, its result."""

    id: str
    name: str
    arguments: dict[str, Any] | None = None
    args_json: str = ""
    output: str = ""
    """The tail of the live output (``tool_output_delta``) while the tool runs."""
    summary: str | None = None
    content: str | None = None
    is_error: bool = False
    synthetic: bool = False
    child: ChildData | None = None
    """A ``task`` call's child pod, as its last ``child`` event showed it."""

    @property
    def running(self) -> bool:
        """True until the result (or the mark that none will come) arrived."""
        return self.summary is None

    @property
    def title(self) -> str:
        """Name, arguments and summary on one line (the card's title)."""
        return str(self.title_parts)

    @property
    def title_parts(self) -> TitleParts:
        """The title with its arguments apart: a narrow terminal cuts them first, so the
        summary (a job's id, an exit code) stays in view."""
        args = self.arguments if self.arguments is not None else _loose_json(self.args_json)
        parts: list[str] = []
        if self.summary is not None:
            first = self.summary.splitlines()[0] if self.summary else "(empty)"
            # "bash: npm test — exit 1" under "⚙ bash(…)" says "bash" twice.
            parts.append(f"→ {first.removeprefix(f'{self.name}: ')}")
        elif self.child is not None:
            doing = f", {self.child.tool}" if self.child.tool else ""
            parts.append(f"— child {self.child.name}: {self.child.state}{doing} …")
        else:
            parts.append("…")
        if self.is_error:
            parts.append("[error]")
        if self.synthetic:
            parts.append("[synthetic]")
        return TitleParts(f"⚙ {self.name}(", _short_args(args), ") " + " ".join(parts))

    @property
    def body(self) -> str:
        """What the card shows when expanded."""
        lines: list[str] = []
        args = self.arguments if self.arguments is not None else _loose_json(self.args_json)
        if args:
            lines.append(json.dumps(args, ensure_ascii=False, indent=2))
        if self.summary is None:
            lines.append(self.output or "(no result yet)")
            return "\n".join(lines)
        lines.append(self.summary)
        if self.content:
            lines.append(self.content)
        elif self.content is None:
            lines.append("(content pruned or not kept)")
        return "\n".join(lines)

    def live_tail(self, lines: int = 3) -> str:
        """The last lines a running tool printed, shown under its title until the result."""
        if not self.running or not self.output:
            return ""
        return "\n".join(self.output.rstrip("\n").splitlines()[-lines:])


@dataclass
class NoteEntry:
    """A system message committed to history (file body, notification, interrupt marker)."""

    text: str
    origin: str = "note"


def note_entry(text: str, origin: str, seq: int | None) -> NoteEntry | ToolEntry:
    """A system message's entry: a preread that went as ``[File: …]`` (thinking on) is drawn
    as the Read card a synthetic read shows (docs/thinking.md), any other as a note."""
    call = preread_call(text, seq=seq) if origin == PREREAD_ORIGIN else None
    if call is None:
        return NoteEntry(text=text, origin=origin)
    return ToolEntry(
        id=call.call_id,
        name=call.name,
        arguments=call.arguments,
        summary=call.summary,
        content=call.content,
        synthetic=True,
    )


class _Compacted(Protocol):
    """What a compaction says about itself, as a history item or as the live event."""

    @property
    def first_seq(self) -> int: ...
    @property
    def last_seq(self) -> int: ...
    @property
    def tokens_before(self) -> int: ...
    @property
    def tokens_after(self) -> int: ...
    @property
    def trigger(self) -> str: ...
    @property
    def summary(self) -> str: ...
    @property
    def kept_rounds(self) -> int: ...
    @property
    def kept_request(self) -> bool: ...


def compaction_note(done: _Compacted, *, todos: int) -> NoteEntry:
    """A compaction as a card: what it covered and saved, what it kept verbatim, then the
    summary the model reads (``todos``: the open todo items it carried)."""
    head = (
        f"Compacted items {done.first_seq}-{done.last_seq} ({done.trigger}): "
        f"about {tokens_k(done.tokens_before)} → {tokens_k(done.tokens_after)} tokens of context"
    )
    kept = kept_text(done.kept_rounds, done.kept_request, todos)
    lines = [head, kept, done.summary] if kept else [head, done.summary]
    return NoteEntry(text="\n".join(lines), origin="compaction")


@dataclass
class AlertEntry:
    """A warning or error from the pod that did not stop it."""

    level: str
    source: str
    message: str


@dataclass
class InfoEntry:
    """A line from the UI itself (greeting, connection changes, the answer to a command)."""

    text: str


@dataclass
class ApprovalEntry:
    """A tool call waiting for the user's approval, and then how it was answered."""

    call_id: str
    tool: str
    summary: str
    reason: str
    diff: str | None = None
    decision: str = "waiting"
    """``waiting``, ``approved``, ``denied`` or ``withdrawn``."""
    pod: str | None = None
    """The child pod that asks (relayed by this pod), if not this pod itself."""
    plan: str | None = None
    """For a plan (``kind: "plan"``): the model's plan, in markdown, shown rendered."""

    @property
    def title(self) -> str:
        """The card's one line."""
        return str(self.title_parts)

    @property
    def title_parts(self) -> TitleParts:
        """The title, its summary cut first when narrow: the keys or the answer stay."""
        where = f" (child {self.pod})" if self.pod else ""
        summary = self.summary.splitlines()[0] if self.summary else ""
        if self.plan is not None:
            if self.decision == "waiting":
                return TitleParts("⚠ plan ready ", "", f"{where}— {PLAN_KEYS}")
            glyph = OUTCOME_GLYPHS.get(self.decision, "·")
            return TitleParts(f"{glyph} plan", "", f"{where}: {self.decision}")
        if self.decision == "waiting":
            return TitleParts("⚠ allow ", summary, f"{where}?  {APPROVAL_KEYS}")
        glyph = OUTCOME_GLYPHS.get(self.decision, "·")
        return TitleParts(f"{glyph} ", summary, f"{where}: {self.decision}")

    @property
    def body(self) -> str:
        """The plan, else the diff of an edit, else the arguments' summary, and why it asked."""
        if self.plan is not None:
            return self.plan
        return f"{self.diff or self.summary}\n({self.reason})"


OUTCOME_GLYPHS = {
    "approved": "✓",
    "accept": "✓",
    "denied": "✗",
    "decline": "✗",
    "cancel": "⊘",
    "withdrawn": "⊘",
}
"""The mark of an answered request, by how it ended: only what went ahead gets ``✓``."""

ALERT_GLYPHS = {"info": "ℹ", "warn": "⚠", "error": "✖"}
"""The mark of an alert, by its level: ``⚠`` only for what may need a look."""


RESOLVED = {
    "accept": "accepted",
    "decline": "declined",
    "cancel": "cancelled",
    "withdrawn": "withdrawn",
}
"""How a request for input ended, as its card says it."""


@dataclass
class ElicitationEntry:
    """An MCP server's request for input (a form, or a URL to open), and then how it ended."""

    request: ElicitationRequestData
    form: Form | None = None
    """The form its schema describes (a form request this UI can show)."""
    problem: str = ""
    """Why the form cannot be shown (the pod checks schemas first; a newer one may allow
    more): only decline and cancel are offered then."""
    action: str = "waiting"
    """``waiting``, then ``accept``, ``decline``, ``cancel`` or ``withdrawn``."""
    errors: dict[str, str] = field(default_factory=dict)
    """What does not fit, by field, as the last submit found it."""
    refused: str = ""
    """The pod's error for the last answer sent (the request keeps waiting)."""

    @classmethod
    def of(cls, request: ElicitationRequestData) -> ElicitationEntry:
        """The entry for a request, its form read from the schema."""
        if request.mode != "form":
            return cls(request)
        try:
            return cls(request, form=form_fields(request.schema_ or {}))
        except FormError as exc:
            return cls(request, problem=str(exc))

    @property
    def id(self) -> str:
        """The request's id, as ``answer_elicitation`` names it."""
        return self.request.id

    @property
    def waiting(self) -> bool:
        """True until the request is answered or withdrawn."""
        return self.action == "waiting"

    @property
    def title(self) -> str:
        """Who asks and what; once over, one line that says how it ended."""
        return str(self.title_parts)

    @property
    def title_parts(self) -> str | TitleParts:
        """While it waits, the whole question (it wraps); once over, one line whose
        question is cut first when narrow, so how it ended stays in view."""
        data = self.request.model_dump()
        if self.waiting:
            return f"? {headline(data)}"
        glyph = OUTCOME_GLYPHS.get(self.action, "·")
        asked = headline(data, "asked").splitlines()[0]
        return TitleParts(f"{glyph} ", asked, f" — {RESOLVED.get(self.action, self.action)}")

    @property
    def keys(self) -> str:
        """The keys that answer it from an empty editor."""
        return URL_KEYS if self.request.mode == "url" else FORM_KEYS


Entry: TypeAlias = (
    UserEntry
    | AssistantEntry
    | ThinkingEntry
    | ToolEntry
    | ServerToolEntry
    | SourcesEntry
    | NoteEntry
    | AlertEntry
    | InfoEntry
    | ApprovalEntry
    | ElicitationEntry
)


@dataclass(frozen=True)
class Change:
    """What an event did to the conversation: ``added``, ``updated`` or ``appended`` text."""

    kind: Literal["added", "updated", "appended"]
    index: int
    text: str = ""


def _loose_json(text: str) -> dict[str, Any] | None:
    try:
        value = json.loads(text) if text else None
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _short_args(args: dict[str, Any] | None, limit: int = 48) -> str:
    if not args:
        return ""
    parts = []
    for key, value in args.items():
        shown = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        parts.append(f"{key}={shown}")
    text = ", ".join(parts).replace("\n", " ")
    return text if len(text) <= limit else text[: limit - 1] + "…"


def tokens_k(n: int) -> str:
    """A token count as the UI shows it: ``12.3k`` from ten thousand on."""
    return f"{n / 1000:.1f}k" if n >= 10_000 else str(n)

"""UI-free state of the input editor: chips, ``@`` queries, recalled prompts, slash commands.

The editor holds plain text in which each chip is a token such as ``⟦@src/app.py⟧``;
:class:`InputChips` maps that text back to protocol segments on submit. Whether a submit is
blank is the protocol's own rule (:func:`run_params` validates a ``RunParams``), so the UI
never sends what the pod would refuse, nor refuses what it would take.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from pydantic import ValidationError

from orchestrator.core.segments import (
    FileRefSegment,
    KnowledgeRefSegment,
    PasteSegment,
    Segment,
    TextSegment,
    ref_label,
)
from orchestrator.protocol import RunParams

CHIP_OPEN = "⟦"
CHIP_CLOSE = "⟧"
PASTE_CHIP_MIN_CHARS = 200
"""A single-line paste longer than this becomes a chip instead of inline text."""

_TOKEN_AT_END = re.compile(rf"{CHIP_OPEN}[^{CHIP_OPEN}{CHIP_CLOSE}\n]*{CHIP_CLOSE}$")
_TOKEN_AT_START = re.compile(rf"^{CHIP_OPEN}[^{CHIP_OPEN}{CHIP_CLOSE}\n]*{CHIP_CLOSE}")
_COMPLETION_QUERY = re.compile(rf"(?:^|\s)@([^\s{CHIP_OPEN}{CHIP_CLOSE}]*)$")


def should_chip_paste(text: str) -> bool:
    """A paste of more than one line or of more than 200 characters becomes a chip."""
    return len(text) > PASTE_CHIP_MIN_CHARS or len(text.rstrip("\n").splitlines()) > 1


def paste_label(paste_id: int | str, text: str) -> str:
    """How a paste is shown to people: ``Clipboard #N | X chars, Y lines``."""
    lines = max(1, len(text.splitlines()))
    return f"Clipboard #{paste_id} | {len(text)} chars, {lines} lines"


def segment_label(segment: Segment) -> str | None:
    """The chip text of a non-text segment (a paste's summary, a ref as the model reads it)."""
    if isinstance(segment, PasteSegment):
        return f"[{paste_label(segment.id, segment.text)}]"
    return ref_label(segment)


def segment_text(segment: Segment) -> str:
    """A segment as one string: its text, or its chip label."""
    label = segment_label(segment)
    if label is not None:
        return label
    return segment.text if isinstance(segment, TextSegment) else ""


def completion_query(line_before_cursor: str) -> str | None:
    """The ``@`` prefix being typed at the cursor, or None when no completion applies."""
    match = _COMPLETION_QUERY.search(line_before_cursor)
    return match.group(1) if match else None


_SLASH_QUERY = re.compile(r"\s*(/[A-Za-z0-9][\w.:-]*|/)")


def slash_query(line_before_cursor: str) -> str | None:
    """``/rev`` while a command's name is typed at the start of the first line (the slash
    kept, to tell it from an ``@`` query), or None."""
    match = _SLASH_QUERY.fullmatch(line_before_cursor)
    return match.group(1) if match else None


def slash_candidates(prefix: str, pod_commands: list[str]) -> list[str]:
    """The names that complete ``/prefix``: the UI's own first, then the pod's custom
    commands (a file named like a UI command is shadowed by it, so it is left out)."""
    own = [command.name for command in SLASH_COMMANDS]
    names = [*own, *(name for name in pod_commands if name not in own)]
    return [name for name in dict.fromkeys(names) if name.startswith(prefix)]


def run_params(segments: list[Segment]) -> RunParams | None:
    """The ``run`` to send for these segments, or None when the pod would refuse it as blank."""
    try:
        return RunParams(segments=segments)
    except ValidationError:
        return None


@dataclass
class InputChips:
    """The chips of the input editor: placeholder tokens in the text mapped to segments."""

    chips: dict[str, Segment] = field(default_factory=dict)
    next_paste: int = 1

    def paste(self, text: str) -> str:
        """Register a paste and return its token."""
        paste_id = self.next_paste
        self.next_paste += 1
        return self._register(PasteSegment(id=paste_id, text=text))

    def file_ref(self, path: str) -> str:
        """Register a file reference and return its token."""
        return self._register(FileRefSegment(path=path))

    def knowledge_ref(self, slug: str) -> str:
        """Register a knowledge reference and return its token."""
        return self._register(KnowledgeRefSegment(slug=slug))

    def _register(self, segment: Segment) -> str:
        label = segment_label(segment) or ""
        if isinstance(segment, PasteSegment):
            label = label[1:-1]  # the chip's own brackets replace the label's
        token = f"{CHIP_OPEN}{label}{CHIP_CLOSE}"
        self.chips[token] = segment
        return token

    def token_before(self, line_before_cursor: str) -> str | None:
        """The chip token that ends exactly at the cursor, if any."""
        match = _TOKEN_AT_END.search(line_before_cursor)
        if match and match.group(0) in self.chips:
            return match.group(0)
        return None

    def token_after(self, line_after_cursor: str) -> str | None:
        """The chip token that starts exactly at the cursor, if any."""
        match = _TOKEN_AT_START.match(line_after_cursor)
        if match and match.group(0) in self.chips:
            return match.group(0)
        return None

    def segments(self, text: str) -> list[Segment]:
        """The protocol segments of the editor text; unknown tokens stay literal text."""
        out: list[Segment] = []
        pending: list[str] = []
        pos = 0
        tokens = sorted(self.chips, key=len, reverse=True)
        while pos < len(text):
            token = next((t for t in tokens if text.startswith(t, pos)), None)
            if token is None:
                pending.append(text[pos])
                pos += 1
                continue
            if pending:
                out.append(TextSegment(text="".join(pending)))
                pending = []
            out.append(self.chips[token])
            pos += len(token)
        if pending:
            out.append(TextSegment(text="".join(pending)))
        return out

    def editor_text(self, segments: list[Segment]) -> str:
        """The editor text for ``segments`` (a recalled prompt), registering their chips."""
        parts: list[str] = []
        for segment in segments:
            if isinstance(segment, TextSegment):
                parts.append(segment.text)
            elif isinstance(segment, PasteSegment | FileRefSegment | KnowledgeRefSegment):
                parts.append(self._register(segment))
            else:
                parts.append(segment_text(segment))
        return "".join(parts)

    def clear(self) -> None:
        """Forget the chips after a submit; paste numbers keep counting up."""
        self.chips.clear()

    def saw(self, segments: list[Segment]) -> None:
        """Number new pastes after those already in the conversation, so chips stay unique."""
        for seg in segments:
            if isinstance(seg, PasteSegment) and isinstance(seg.id, int):
                self.next_paste = max(self.next_paste, seg.id + 1)


# -- recalling earlier prompts --------------------------------------------------------------


class PromptHistory:
    """Earlier prompts for Up/Down, oldest first; the text being typed is kept as a draft."""

    def __init__(self, limit: int = 500) -> None:
        self.limit = limit
        self.prompts: list[list[Segment]] = []
        self._at: int | None = None
        self._draft: list[Segment] = []

    def add(self, segments: list[Segment]) -> None:
        """Remember a sent prompt (a repeat of the latest one is kept once)."""
        self._at = None
        if segments and (not self.prompts or self.prompts[-1] != segments):
            self.prompts.append(list(segments))
            del self.prompts[: -self.limit]

    def older(self, current: list[Segment]) -> list[Segment] | None:
        """The prompt before the one shown, or None at the oldest; ``current`` is the draft."""
        if not self.prompts or self._at == 0:
            return None
        if self._at is None:
            self._draft = list(current)
            self._at = len(self.prompts)
        self._at -= 1
        return self.prompts[self._at]

    def newer(self) -> list[Segment] | None:
        """The prompt after the one shown, the draft after the newest, or None when not recalling."""
        if self._at is None:
            return None
        self._at += 1
        if self._at >= len(self.prompts):
            self._at = None
            return self._draft
        return self.prompts[self._at]

    @property
    def recalling(self) -> bool:
        """True while a recalled prompt (not the draft) is shown."""
        return self._at is not None

    def stop(self) -> None:
        """The recalled text was edited: it becomes the draft."""
        self._at = None


# -- slash commands ---------------------------------------------------------------------------

_SLASH = re.compile(r"/([A-Za-z][\w-]*)(?:\s+(.*))?", re.S)


@dataclass(frozen=True)
class SlashCommand:
    """A command typed as ``/name``; it runs in the UI and is never sent to the model.

    Exactly one of ``key``, ``method`` and ``view`` says what it does: act as a key of the
    UI, send a protocol method, or show one of the UI's own views.
    """

    name: str
    summary: str
    key: str | None = None
    method: str | None = None
    view: str | None = None
    argument: str | None = None
    """With ``method``: the parameter that receives the text after the name, when given."""


SLASH_COMMANDS: tuple[SlashCommand, ...] = (
    SlashCommand("help", "keys and commands", view="help"),
    SlashCommand("status", "the pod's state, model, turn and tokens", view="status"),
    SlashCommand("cancel", "cancel the running turn (as Ctrl-X)", key="ctrl+x"),
    SlashCommand("sessions", "this workspace's sessions", view="sessions"),
    SlashCommand("model", "the model and provider the pod uses", view="model"),
    SlashCommand(
        "compact",
        "summarise older turns; /compact FOCUS says what matters",
        method="compact",
        argument="focus",
    ),
    SlashCommand(
        "rewind",
        "back to before a prompt: /rewind lists them, /rewind N [code|conversation] previews",
        view="rewind",
    ),
    SlashCommand("fork", "a new session from this conversation; /fork NAME titles it", view="fork"),
    SlashCommand("jobs", "the pod's background jobs, as `pod jobs` lists them", view="jobs"),
    SlashCommand("children", "the child pods of task calls: state, tool, tokens", view="children"),
    SlashCommand("todos", "show or hide the todo list panel (the model's plan)", view="todos"),
    SlashCommand("skills", "the skills the pod reads, where each comes from", view="skills"),
    SlashCommand(
        "budget",
        "the budgets and the spend; /budget turn|session AMOUNT|none changes one",
        view="budget",
    ),
    SlashCommand(
        "attach", "/attach NAME: this UI on a child pod (leave it to come back)", view="attach"
    ),
)
"""The UI's commands, in the order ``/help`` lists them; a new one is one entry here."""


REWIND_MODES = ("both", "code", "conversation")


def rewind_argument(text: str) -> tuple[int, str] | None:
    """``N`` or ``N MODE`` of ``/rewind``: the prompt's seq and what to restore (None: bad)."""
    parts = text.split()
    if not parts or not parts[0].isdigit() or len(parts) > 2:
        return None
    mode = parts[1] if len(parts) == 2 else "both"
    return (int(parts[0]), mode) if mode in REWIND_MODES else None


@dataclass(frozen=True)
class SlashLine:
    """A submitted line that names a command: ``command`` is None when the name is unknown."""

    name: str
    argument: str
    command: SlashCommand | None


def parse_slash(text: str) -> SlashLine | None:
    """The command a submitted line invokes, or None when the line is a message.

    ``/name`` at the start makes a command line; ``/etc/hosts is odd`` does not (the word
    holds another slash), and ``//name`` is the escape for a message that starts with
    ``/name`` (see :func:`unescape_slash`).
    """
    stripped = text.strip()
    match = _SLASH.fullmatch(stripped)
    if match is None:
        return None
    name = match.group(1)
    known = next((c for c in SLASH_COMMANDS if c.name == name), None)
    return SlashLine(name, (match.group(2) or "").strip(), known)


def unescape_slash(text: str) -> str:
    """``//name …`` is sent as ``/name …``: the escape for a message starting with a slash."""
    stripped = text.lstrip()
    return stripped[1:] if stripped.startswith("//") else text

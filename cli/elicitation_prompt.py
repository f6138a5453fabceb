"""``pod run``'s answer to an MCP server's request for input: ask on the terminal, or decline
when there is none.

On a terminal the request is printed on stderr (who asks, and what), and one line decides what
to do: fill the form in, decline or cancel; for a URL, whether the page was opened. A form is
then asked field by field: each field's title, description, what it takes and its default
(Enter keeps it); a value the field refuses is asked again, with the pod's words for why. A run
started from a script or a pipe has nobody to ask, so it declines at once. Requests are asked
one at a time, like approvals (:class:`~cli.terminal_prompt.TerminalQueue`); one withdrawn by
a pause (Ctrl-C) or answered by another client ends its question.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cli.elicitation import default_text, headline, takes, typed
from cli.terminal_prompt import Answer, TerminalQueue
from cli.terminal_text import visible
from orchestrator.adapters.mcp.forms import FormError, FormField, Value, form_fields

FORM_CHOICES = "[f]ill in, [d]ecline, [c]ancel"
URL_CHOICES = "[o]pened it, [d]ecline, [c]ancel"


def parse_choice(line: str, mode: str) -> str | None:
    """What the first answer means: ``fill`` (a form's fields are asked next), ``accept`` (a
    URL's page was opened), ``decline`` or ``cancel``; None when the line means nothing here
    (ask again)."""
    word = line.strip().lower()
    if word in ("d", "decline"):
        return "decline"
    if word in ("c", "cancel"):
        return "cancel"
    if mode == "form" and word in ("f", "fill", "fill in"):
        return "fill"
    if mode == "url" and word in ("o", "opened", "y", "yes"):
        return "accept"
    return None


def describe(data: dict[str, Any]) -> str:
    """The lines a person reads first: who asks and what, the call it came during, the URL."""
    lines = [f"? {headline(data)}"]
    if data.get("tool"):
        lines.append(f"  (during {data['tool']})")
    if data.get("mode") == "url" and data.get("url"):
        lines.append(f"  open: {data['url']}")
    return visible("\n".join(lines))


def field_header(f: FormField) -> str:
    """The lines shown once before a field is asked: its description, its choices numbered."""
    lines = []
    if f.description:
        lines.append(f"  {f.title}: {f.description}\n")
    if f.options:
        numbered = " · ".join(f"{n} {label}" for n, (_, label) in enumerate(f.options, 1))
        lines.append(f"    {numbered}\n")
    return visible("".join(lines))


def field_prompt(f: FormField) -> str:
    """The prompt for one field (asked again after a value it refuses): what it takes, and
    what Enter alone does."""
    default = default_text(f)
    enter = f"Enter: {default}" if default else "required" if f.required else "Enter: leave out"
    return visible(f"  {f.title} ({takes(f)}, {enter}): ")


@dataclass
class TerminalElicitor(TerminalQueue):
    """Answers the requests for input of one ``pod run``."""

    def unasked(self, data: dict[str, Any]) -> Answer:
        """Decline: nobody is there to answer."""
        if not self.interactive:
            self.err.write(f"{describe(data)}\n  ✗ declined: pod run is not interactive\n")
            self.err.flush()
        return _answer(data, "decline")

    def elicitation_resolved(self, data: dict[str, Any]) -> None:
        """An ``elicitation_resolved`` arrived: forget the request (withdrawn by a pause, or
        answered elsewhere)."""
        action = str(data["action"])
        self.resolved(
            str(data["id"]),
            "withdrawn" if action == "withdrawn" else f"answered elsewhere: {action}",
        )

    async def ask(self, data: dict[str, Any]) -> Answer:
        """What to do with the request, then (to fill a form in) each of its fields."""
        self.err.write(describe(data) + "\n")
        mode = str(data.get("mode") or "form")
        try:
            form = form_fields(data.get("schema") or {}) if mode == "form" else None
        except FormError as exc:  # the pod checks schemas first; a newer one may allow more
            self.err.write(visible(f"  ✗ declined: this form cannot be shown here ({exc})\n"))
            return _answer(data, "decline")
        choices = FORM_CHOICES if mode == "form" else URL_CHOICES
        while True:
            line = await self.read_line(f"  {choices}: ")
            if line is None:  # end of input: nobody will answer
                return self.unasked(data)
            choice = parse_choice(line, mode)
            if choice is not None:
                break
        if choice != "fill" or form is None:
            return _answer(data, choice)
        content: dict[str, Value] = {}
        for f in form.fields:
            self.err.write(field_header(f))
            while True:
                line = await self.read_line(field_prompt(f))
                if line is None:
                    return self.unasked(data)
                try:
                    value = typed(f, line)
                except FormError as exc:
                    self.err.write(visible(f"    ✗ {exc}\n"))
                    continue
                if value is not None:
                    content[f.name] = value
                break
        return _answer(data, "accept", content)


def _answer(data: dict[str, Any], action: str, content: dict[str, Value] | None = None) -> Answer:
    params: dict[str, Any] = {"id": data["id"], "action": action}
    if content is not None:
        params["content"] = content
    return Answer("answer_elicitation", params)

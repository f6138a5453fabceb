"""``pod run``'s answer to an approval request: ask on the terminal, or deny when none.

A run started from a script or a pipe has nobody to ask, and waiting would hang it until its
timeout, so it denies at once with a message that tells the model (and the person reading the
transcript later) why, and how to allow such calls. On a terminal the request is printed on
stderr (the command, or the diff of an edit) and one line of input answers it. Requests are
asked one at a time; one that another client answers first is dropped from the queue, or its
question is withdrawn (:class:`~cli.terminal_prompt.TerminalQueue`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from cli.terminal_prompt import Answer, TerminalQueue
from cli.terminal_text import visible

NOT_INTERACTIVE = (
    "pod run is not interactive; allow such calls with --permission-mode (accept-edits, "
    "yolo) or an allow rule in [permissions]"
)
"""The denial message for a run with no terminal to ask on (the model reads it)."""

NOT_INTERACTIVE_HELD = "pod run is not interactive; what the command planted stays undone"
"""The same, for a request to keep what a sandboxed command planted (``held``): no mode or
rule keeps a plant, so none is suggested."""

NOT_INTERACTIVE_PLAN = (
    "pod run is not interactive, so nobody can approve the plan; the pod stays in plan mode "
    "(a person can switch it with `pod mode default`)"
)
"""The same, for a plan (``kind: "plan"``)."""

CHOICES = "[y]es once, [a]lways this session, [n]o"

PLAN_CHOICES = "[y]es, y MODE (e.g. y accept-edits), [n]o WHAT TO CHANGE"

PLAN_MODES = ("default", "accept-edits", "yolo", "read-only")
"""The modes an approved plan may name (``plan`` itself is not one)."""


def parse_answer(call_id: str, line: str, *, plan: bool = False) -> Answer | None:
    """The answer a typed line gives; None when the line means nothing (ask again).

    ``n`` may carry the reason after it (``n use the other file``), which the model reads.
    For a plan, ``y`` may name the mode to work in (``y accept-edits``).
    """
    text = line.strip()
    word, _, rest = text.partition(" ")
    word = word.lower()
    if plan and word in ("y", "yes", "a", "always"):
        mode = rest.strip().lower()
        if not mode:
            return Answer("approve", {"id": call_id})
        return Answer("approve", {"id": call_id, "mode": mode}) if mode in PLAN_MODES else None
    if word in ("y", "yes"):
        return Answer("approve", {"id": call_id, "scope": "once"})
    if word in ("a", "always"):
        return Answer("approve", {"id": call_id, "scope": "session"})
    if word in ("n", "no"):
        params: dict[str, Any] = {"id": call_id}
        if rest.strip():
            params["message"] = rest.strip()
        return Answer("deny", params)
    return None


def describe(request: dict[str, Any]) -> str:
    """The lines a person needs to decide: tool, what it would do, why it asks, the diff;
    control characters shown escaped, never obeyed."""
    command = (request.get("arguments") or {}).get("command")
    plan = (request.get("arguments") or {}).get("plan")
    if request.get("kind") == "plan" and isinstance(plan, str):
        # The whole plan, as the model wrote it (markdown, escaped): it is what is approved.
        lines = [f"? {request['tool']}: {request['summary']}", ""]
        lines += ["    " + row for row in plan.strip("\n").split("\n")]
        return visible("\n".join([*lines, ""]))
    # A request with ``held`` set comes after the call ran: the question is whether to keep
    # what it planted, which the summary names (the diff below shows it).
    if isinstance(command, str) and not request.get("held"):
        # The whole command as it would run, not the pod's one-line summary: that is cut at
        # 200 characters and folds every kind of whitespace (a carriage return too) into a
        # space, so what runs after the cut or the fold would not be seen.
        body = command.strip("\n").split("\n")
        if len(body) == 1:
            lines = [f"? {request['tool']}: run: {body[0]}"]
        else:
            lines = [f"? {request['tool']}: run:", *("    " + row for row in body)]
    else:
        lines = [f"? {request['tool']}: {request['summary']}"]
    if request.get("reason"):
        lines.append(f"  ({request['reason']})")
    if request.get("diff"):
        lines.extend("  " + row for row in str(request["diff"]).split("\n"))
    # Always escaped: a carriage return or cursor move in the command could otherwise
    # overwrite it with a harmless one on the person's screen.
    return visible("\n".join(lines))


@dataclass
class TerminalApprover(TerminalQueue):
    """Answers the approval requests of one ``pod run``."""

    def unasked(self, data: dict[str, Any]) -> Answer:
        """Deny: nobody is there to approve (the model is told how to allow such calls)."""
        if not self.interactive:
            # What was asked, not the refusal: the call's result (printed next) says that,
            # and why, once.
            self.err.write(f"{describe(data)}\n")
            self.err.flush()
        message = (
            NOT_INTERACTIVE_PLAN
            if data.get("kind") == "plan"
            else NOT_INTERACTIVE_HELD
            if data.get("held")
            else NOT_INTERACTIVE
        )
        return Answer("deny", {"id": data["id"], "message": message, "asked": False})

    def approval_resolved(self, data: dict[str, Any]) -> None:
        """An ``approval_resolved`` arrived: forget the request (maybe answered elsewhere)."""
        self.resolved(str(data["id"]), f"answered elsewhere: {data['decision']}")

    async def ask(self, data: dict[str, Any]) -> Answer:
        """Print the request and read lines until one answers it."""
        self.err.write(describe(data) + "\n")
        plan = data.get("kind") == "plan"
        question = f"  Approve the plan? {PLAN_CHOICES}: " if plan else f"  Allow? {CHOICES}: "
        while True:
            line = await self.read_line(question)
            if line is None:  # end of input: nobody will answer
                return self.unasked(data)
            answer = parse_answer(str(data["id"]), line, plan=plan)
            if answer is not None:
                return answer

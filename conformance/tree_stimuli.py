"""What the fake Messages API answers in a tree case, to the parent and to its children.

Parent and children talk to the same fake. A request is a child's when its first user
message carries a child marker (``[[kit:tree-child:<case>.<i>]]``, in the task's prompt,
which is all a child is told); otherwise it is the parent's. The parent's first request (the
kit's input carries ``[[kit:tree:<case>]]``) is answered with ``children`` ``task`` calls
when its tools include ``task``; each child's first request with the hold's tool call (the
kit's slow tool, or its approval tool), and every later request of a child with its answer
(``kit-child-answer-<case>.<i>``), which the parent's ``task`` result must carry. Everything
else gets the fake's echo.
"""

from __future__ import annotations

import itertools
import threading
from typing import Any

from conformance.fake_api import Reply, Step, ToolCall
from conformance.process import last_user_text_block

__all__ = ["TreeStimuli", "first_user_text", "user_texts"]

_CASES = itertools.count(1)


def first_user_text(body: dict[str, Any]) -> str:
    """The text of a request's first message when it is the user's (a child's task)."""
    messages = body.get("messages") or []
    if not messages or not isinstance(messages[0], dict) or messages[0].get("role") != "user":
        return ""
    return _text(messages[0].get("content"))


def user_texts(body: dict[str, Any]) -> list[str]:
    """The text of every user message of a request (tool results left out)."""
    return [
        _text(m.get("content"))
        for m in body.get("messages") or []
        if isinstance(m, dict) and m.get("role") == "user"
    ]


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(
        str(b.get("text", ""))
        for b in content or []
        if isinstance(b, dict) and b.get("type") == "text"
    )


class TreeStimuli:
    """The responder of one tree case's fake API."""

    def __init__(
        self,
        *,
        children: int,
        child_tool: dict[str, Any],
    ) -> None:
        case = next(_CASES)
        self.parent_marker = f"[[kit:tree:{case}]]"
        self.child_markers = [f"[[kit:tree-child:{case}.{i}]]" for i in range(children)]
        self.answers = [f"kit-child-answer-{case}.{i}" for i in range(children)]
        self.child_tool = child_tool
        self.task_offered: bool | None = None
        """Whether the parent's first request offered a ``task`` tool (None before it)."""
        self.parent_tools: list[str] = []
        self._lock = threading.Lock()
        self._delegated = False
        self._held: set[int] = set()

    def prompt(self, index: int) -> str:
        """The task the parent's model gives child ``index``."""
        return (
            f"{self.child_markers[index]} Conformance child task {index}: do what the model "
            "says, then answer."
        )

    def child_of(self, body: dict[str, Any]) -> int | None:
        """Which child sent a request (None: the parent, or a pod the kit does not know)."""
        first = first_user_text(body)
        for index, marker in enumerate(self.child_markers):
            if marker in first:
                return index
        return None

    def respond(self, body: dict[str, Any]) -> Step | None:
        """The step for one request of the tree."""
        child = self.child_of(body)
        if child is not None:
            with self._lock:
                first = child not in self._held
                self._held.add(child)
            if first:
                tool = self.child_tool
                call = ToolCall(name=tool["name"], input=dict(tool.get("input", {})))
                return Reply(text=f"Child {child} starts.", tool_calls=[call])
            # Every later request (a resumed child, or one started again) gets the answer, so
            # a pod that runs a child twice still finishes and the bars can say so.
            return Reply(text=f"Done: {self.answers[child]}.")
        if self.parent_marker not in last_user_text_block(body):
            return None
        tools = [str(t.get("name")) for t in body.get("tools") or [] if isinstance(t, dict)]
        with self._lock:
            if self._delegated:
                return None
            self._delegated = True
            self.parent_tools = tools
            self.task_offered = "task" in tools
        if not self.task_offered:
            return None
        calls = [
            ToolCall(name="task", input={"prompt": self.prompt(i), "name": f"kit-child-{i}"})
            for i in range(len(self.child_markers))
        ]
        return Reply(text="Delegating to child pods.", tool_calls=calls)

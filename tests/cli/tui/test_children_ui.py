"""The UI shows a parent's child pods and opens one: a real tree (children are processes,
answered by the fake Messages API over HTTP)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from cli.tui.entries import AlertEntry, ApprovalEntry, InfoEntry, ToolEntry
from cli.tui.model import ChatModel
from cli.tui.slash_commands import ATTACH_PREFIX
from cli.tui.views import children_text, pick_child
from conformance.fake_api import FakeAnthropic
from orchestrator.protocol import ChildData
from orchestrator.serving.client import PodEvent
from tests.cli.tui.conftest import attach
from tests.e2e.harness import fake_provider, running_pod
from tests.e2e.test_subpods_e2e import PARENT, TWO_TASKS, Tree, _config


@pytest.fixture
def tree_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeAnthropic]:
    """The fake Messages API, where the children (processes) find it through the environment."""
    server = FakeAnthropic().start()
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
    try:
        yield server
    finally:
        server.stop()


def _child(name: str, state: str = "requesting", tool: str | None = None) -> ChildData:
    return ChildData(
        call_id=f"call-{name}",
        name=name,
        state=state,
        tool=tool,
        tokens=1234,
        session=f"/s/{name}.jsonl",
        socket=f"/run/{name}.sock",
    )


def test_a_child_event_marks_its_task_card_and_the_status_line() -> None:
    model = ChatModel()
    model.apply(PodEvent("tool_call_start", {"id": "call-app.a-1", "name": "task"}))
    [change] = model.apply(
        PodEvent("child", _child("app.a-1", "executing_tools", "bash").model_dump())
    )
    card = model.entries[change.index]
    assert isinstance(card, ToolEntry)
    assert "child app.a-1: executing_tools, bash" in card.title
    assert "1 child pod (/children)" in model.pod.text()
    model.apply(PodEvent("child", _child("app.a-1", "exited").model_dump()))
    assert model.pod.children == {}


def test_a_relayed_approval_names_the_child() -> None:
    model = ChatModel()
    request = {
        "id": "toolu_9",
        "tool": "bash",
        "kind": "execute",
        "arguments": {"command": "make"},
        "summary": "run: make",
        "reason": "default mode asks before execute tools",
        "pod": "app.a-1",
    }
    [change] = model.apply(PodEvent("approval_request", request))
    entry = model.entries[change.index]
    assert isinstance(entry, ApprovalEntry) and "(child app.a-1)" in entry.title


def test_children_are_listed_and_picked_by_name() -> None:
    children = [_child("app.tests-1"), _child("app.review-2", tool="grep")]
    text = children_text(children)
    assert "app.tests-1: requesting" in text and "running grep" in text
    assert pick_child(children, "review") == children[1]
    assert pick_child(children, "app.tests-1") == children[0]
    assert pick_child(children, "") is None  # two: the name must be given
    assert pick_child(children[:1], "") == children[0]
    assert "No child pods" in children_text([])


async def test_children_and_attach_in_the_ui(tmp_path: Path, tree_env: FakeAnthropic) -> None:
    # An answer that streams for a minute: the test cancels it once it has looked.
    tree = Tree(tasks=[TWO_TASKS[0]], slow=True, child_tool="glob", slow_chars=6000)
    tree_env.responder = tree.respond
    workspace = tmp_path / "ws"
    workspace.mkdir()
    async with (
        running_pod(
            workspace,
            tmp_path,
            provider=fake_provider(tree_env),
            **_config(workspace, permissions={"mode": "accept-edits"}),
        ) as pod,
        attach(pod) as session,
    ):
        await session.probe.send("run", {"input": f"{PARENT} delegate"})
        await session.until(
            lambda: any(
                isinstance(e, ToolEntry) and e.child is not None and e.child.state == "requesting"
                for e in session.app.model.entries
            ),
            "the task card shows its child",
            timeout=30.0,  # a child pod is a process of its own: slow to start on a busy machine
        )
        await session.pilot.press(*"/children", "enter")
        await session.until(
            lambda: any(
                isinstance(e, InfoEntry) and "t.alpha-1" in e.text
                for e in session.app.model.entries
            ),
            "/children lists the child",
        )
        [child] = session.app.model.pod.children.values()
        await session.pilot.press(*"/attach alpha", "enter")
        await session.until_exited()
        assert session.app.return_value == f"{ATTACH_PREFIX}{child.socket}"
        await session.probe.send("cancel")


async def test_a_child_that_finished_is_news_not_a_warning(
    tmp_path: Path, tree_env: FakeAnthropic
) -> None:
    """The parent's alert about a child that did its work is info, drawn ℹ (it was ⚠)."""
    tree = Tree(tasks=[TWO_TASKS[0]], child_tool="glob")
    tree_env.responder = tree.respond
    workspace = tmp_path / "ws"
    workspace.mkdir()
    async with (
        running_pod(
            workspace,
            tmp_path,
            provider=fake_provider(tree_env),
            **_config(workspace, permissions={"mode": "accept-edits"}),
        ) as pod,
        attach(pod) as session,
    ):
        await session.probe.send("run", {"input": f"{PARENT} delegate"})
        await session.until(
            lambda: "ℹ subpods: child t.alpha-1: finished" in session.screen,
            "the child's outcome drawn as news",
            timeout=60.0,  # a child pod is a process of its own: slow to start on a busy machine
        )
        alerts = [e for e in session.app.model.entries if isinstance(e, AlertEntry)]
        assert [(a.level, a.message) for a in alerts] == [("info", "child t.alpha-1: finished")]
        assert "⚠" not in session.screen

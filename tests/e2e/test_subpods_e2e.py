"""Sub-pods end to end: a parent pod in-process, its children real ``pod serve`` processes,
every model request answered by the fake Messages API over HTTP (the real SDK)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from conformance.fake_api import FakeAnthropic, Reply, ToolCall
from orchestrator.adapters.session import load_session
from orchestrator.config.model import PodConfig
from orchestrator.config.subpods import AgentConfig, SubpodsConfig
from orchestrator.serving.client import PodClient
from tests.e2e.harness import collect_until, fake_provider, running_pod

PARENT = "PARENT:"
"""Every parent prompt starts so; a child's prompt does not (the fake tells them apart)."""


def _first_user_text(body: dict[str, Any]) -> str:
    content = body["messages"][0]["content"]
    if isinstance(content, str):
        return content
    return "".join(b.get("text", "") for b in content if b.get("type") == "text")


def _tool_results(body: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for message in body["messages"]:
        if message["role"] == "user" and isinstance(message["content"], list):
            out += [b for b in message["content"] if b.get("type") == "tool_result"]
    return out


def _result_text(block: dict[str, Any]) -> str:
    content = block.get("content")
    if isinstance(content, str):
        return content
    return "".join(b.get("text", "") for b in content or [] if b.get("type") == "text")


def _last_user_text(body: dict[str, Any]) -> str:
    content = body["messages"][-1]["content"]
    if isinstance(content, str):
        return content
    return "".join(b.get("text", "") for b in content if b.get("type") == "text")


@dataclass
class Tree:
    """A scripted tree: the parent delegates ``tasks``; each child edits a file and answers.

    A parent prompt that says ``stop`` gets a plain answer; any other delegates the next
    list of ``more`` tasks (then ``tasks`` again).
    """

    tasks: list[dict[str, Any]]
    more: list[list[dict[str, Any]]] = field(default_factory=list)
    slow: bool = False
    """Children stream their answers slowly (seconds), so they can be paused mid-stream."""
    slow_chars: int = 400
    """How long a slow answer is (2 characters every 20 ms)."""
    child_tool: str = "write_file"
    parent_answers: list[str] = field(default_factory=list)
    child_requests: int = 0

    def respond(self, body: dict[str, Any]) -> Reply:
        first = _first_user_text(body)
        results = _tool_results(body)
        if first.startswith(PARENT):
            last = body["messages"][-1]["content"]
            answered = [b for b in last if isinstance(b, dict) and b.get("type") == "tool_result"]
            prompt = _last_user_text(body)
            if (answered and "delegate" not in prompt) or "stop" in prompt:
                self.parent_answers = [_result_text(r) for r in answered]
                return Reply(text="All children are done.")
            tasks = self.more.pop(0) if self.more else self.tasks
            return Reply(
                text="Delegating.",
                tool_calls=[ToolCall(name="task", input=task) for task in tasks],
            )
        self.child_requests += 1
        tag = first.split(":")[0]
        if not results:
            if self.child_tool == "write_file":
                call = ToolCall(
                    name="write_file", input={"path": f"{tag}.txt", "content": f"by {tag}\n"}
                )
            else:
                call = ToolCall(name="glob", input={"pattern": "*"})
            return Reply(text=f"{tag} starts.", tool_calls=[call])
        answer = f"{tag} answer: the file is written."
        if self.slow:
            return Reply(text=answer + " " + "." * self.slow_chars, chunk_size=2, delay_s=0.02)
        return Reply(text=answer)


@pytest.fixture
def tree_env(monkeypatch: pytest.MonkeyPatch, fake: FakeAnthropic) -> Iterator[FakeAnthropic]:
    """Children are processes: they find the fake through the environment, as the SDK does."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.base_url)
    yield fake


def _config(workspace: Path, **extra: Any) -> dict[str, Any]:
    """``running_pod`` options for a parent on the fake API (children inherit all of it)."""
    config = PodConfig(
        workspace=workspace,
        name="t",
        provider="anthropic",
        model="fake-model",
        checkpoints=False,
        **extra,
    )
    return {"loaded": config}


async def _run(client: PodClient, text: str) -> None:
    await client.send("run", {"input": text})


TWO_TASKS = [
    {"prompt": "alpha: write alpha.txt", "name": "alpha"},
    {"prompt": "beta: write beta.txt", "name": "beta"},
]


async def test_two_task_calls_run_two_children_concurrently(
    tmp_path: Path, tree_env: FakeAnthropic
) -> None:
    # Slow answers (seconds each): run one after the other, one child would be done before
    # the other began.
    tree = Tree(tasks=TWO_TASKS, slow=True)
    tree_env.responder = tree.respond
    workspace = tmp_path / "ws"
    workspace.mkdir()
    async with running_pod(
        workspace,
        tmp_path,
        provider=fake_provider(tree_env),
        **_config(workspace, permissions={"mode": "accept-edits"}),
    ) as pod:
        client = await pod.client()
        await _run(client, f"{PARENT} delegate two tasks")
        events = await collect_until(client, "run_end", timeout=60)
        assert events[-1].data["result"] == "finished"
        children = [e.data for e in events if e.event == "child"]
        names = {c["name"] for c in children}
        assert names == {"t.alpha-1", "t.beta-2"}
        # Both were running at once: each was seen busy before either exited.
        states = [(c["name"], c["state"]) for c in children]
        first_exit = next(i for i, (_, s) in enumerate(states) if s == "exited")
        busy_before = {n for n, s in states[:first_exit] if s == "requesting"}
        assert busy_before == names
        # Both answers reached the parent's model, with what each child did.
        answers = "\n".join(tree.parent_answers)
        assert "alpha answer" in answers and "beta answer" in answers
        assert "write_file" in answers and "alpha.txt" in answers
        # Shared isolation: the children's files are in the parent's workspace.
        assert (workspace / "alpha.txt").read_text() == "by alpha\n"
        assert (workspace / "beta.txt").read_text() == "by beta\n"
        # One child session each, linked from the parent's session before each started.
        loaded = load_session(pod_session(pod))
        assert len(loaded.children) == 2
        for record in loaded.children.values():
            child = load_session(Path(record.session))
            assert child.header.pod == record.name
            assert any(item.kind == "assistant" for item in child.items)
        status = await client.status()
        assert status.children == []  # finished children are stopped
        await client.close()


def pod_session(pod: Any) -> Path:
    """The parent's session file (its only one in the state folder)."""
    from orchestrator.adapters.session import latest_session

    path = latest_session(pod.config.workspace)
    assert path is not None
    return path


async def test_worktree_isolation_reports_a_diff_and_leaves_the_workspace_alone(
    tmp_path: Path, tree_env: FakeAnthropic
) -> None:
    import subprocess

    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "README.md").write_text("hello\n")
    for args in (["init", "-q"], ["add", "."], ["commit", "-qm", "init"]):
        subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@t", *args],
            cwd=workspace,
            check=True,
        )
    tree = Tree(tasks=[{"prompt": "gamma: write gamma.txt", "name": "gamma",
                        "isolation": "worktree"}])  # fmt: skip
    tree_env.responder = tree.respond
    async with running_pod(
        workspace,
        tmp_path,
        provider=fake_provider(tree_env),
        **_config(workspace, permissions={"mode": "accept-edits"}),
    ) as pod:
        client = await pod.client()
        await _run(client, f"{PARENT} delegate in a worktree")
        events = await collect_until(client, "run_end", timeout=60)
        assert events[-1].data["result"] == "finished"
        [answer] = tree.parent_answers
        assert not (workspace / "gamma.txt").exists()  # the parent's files are untouched
        assert "gamma.txt" in answer and "+by gamma" in answer  # the diff is reported
        [record] = load_session(pod_session(pod)).children.values()
        assert (Path(record.workspace) / "gamma.txt").read_text() == "by gamma\n"
        await client.close()


async def test_a_childs_approval_is_answered_from_the_parents_client(
    tmp_path: Path, tree_env: FakeAnthropic
) -> None:
    tree = Tree(tasks=[TWO_TASKS[0]])
    tree_env.responder = tree.respond
    workspace = tmp_path / "ws"
    workspace.mkdir()
    async with running_pod(
        workspace, tmp_path, provider=fake_provider(tree_env), **_config(workspace)
    ) as pod:
        client = await pod.client()
        await _run(client, f"{PARENT} delegate one task")
        request = await client.wait_for("approval_request", timeout=60)
        assert request.data["pod"] == "t.alpha-1" and request.data["tool"] == "write_file"
        status = await client.status()
        assert status.state == "awaiting_approval"
        assert [a.pod for a in status.approvals] == ["t.alpha-1"]
        await client.send("approve", {"id": request.data["id"]})
        events = await collect_until(client, "run_end", timeout=60)
        assert events[-1].data["result"] == "finished"
        assert (workspace / "alpha.txt").exists()
        assert "alpha answer" in tree.parent_answers[0]
        await client.close()


async def _until(check: Any, timeout_s: float = 60.0) -> None:
    """Wait for a condition the test cannot be told about (the fake's request count)."""
    deadline = asyncio.get_running_loop().time() + timeout_s
    while not check():
        assert asyncio.get_running_loop().time() < deadline, "condition never held"
        await asyncio.sleep(0.05)


async def _child_status(socket: str) -> str:
    child = await PodClient.connect(socket)
    try:
        return (await child.status()).status
    finally:
        await child.close()


async def test_pause_pauses_every_child_resume_finishes_all_and_a_new_message_closes_them(
    tmp_path: Path, tree_env: FakeAnthropic
) -> None:
    second = [
        {"prompt": "gamma: write gamma.txt", "name": "gamma"},
        {"prompt": "delta: write delta.txt", "name": "delta"},
    ]
    tree = Tree(tasks=TWO_TASKS, more=[TWO_TASKS, second], slow=True, child_tool="glob")
    tree_env.responder = tree.respond
    workspace = tmp_path / "ws"
    workspace.mkdir()
    async with running_pod(
        workspace,
        tmp_path,
        provider=fake_provider(tree_env),
        **_config(workspace, permissions={"mode": "accept-edits"}),
    ) as pod:
        client = await pod.client()
        await _run(client, f"{PARENT} delegate two tasks")
        await _until(lambda: tree.child_requests >= 4)  # both stream their slow answers
        await client.send("pause")
        await client.wait_for("run_end", result="paused", timeout=30)
        status = await client.status()
        assert status.status == "paused"
        assert len(status.children) == 2
        for child in status.children:
            assert await _child_status(child.socket) == "paused"
        # Resume: the same two children resume, and all three finish.
        tree.slow = False
        await client.send("resume")
        await client.wait_for("run_end", result="finished", timeout=60)
        answers = "\n".join(tree.parent_answers)
        assert "alpha answer" in answers and "beta answer" in answers
        sessions = load_session(pod_session(pod)).children
        assert len(sessions) == 2  # resumed, not started again

        # Pause again mid-children, then a new message: they are closed truthfully.
        tree.slow = True
        before = tree.child_requests
        await _run(client, f"{PARENT} delegate again")
        await _until(lambda: tree.child_requests >= before + 4)
        await client.send("pause")
        await client.wait_for("run_end", result="paused", timeout=30)
        sockets = [c.socket for c in (await client.status()).children]
        assert len(sockets) == 2
        await _run(client, f"{PARENT} stop, do something else")
        await client.wait_for("run_end", result="finished", timeout=60)
        loaded = load_session(pod_session(pod))
        closed = [
            item
            for item in loaded.items
            if item.kind == "tool_result" and item.synthetic and "child pod" in (item.content or "")
        ]
        assert len(closed) == 2
        for item in closed:
            assert "stopped before it finished" in (item.content or "")
            assert "glob" in (item.content or "")  # what it had done
        records = [r for r in loaded.children.values() if r.name.startswith(("t.gamma", "t.delta"))]
        assert len(records) == 2
        from orchestrator.serving.server import socket_is_live

        # The children are cancelled and stopped as their calls close: wait for them to exit.
        await _until(lambda: not any(socket_is_live(Path(s)) for s in sockets), 30)
        for record in records:
            child = load_session(Path(record.session))
            assert child.turn_results, "the child's turn was closed (cancelled)"
        await client.close()


async def test_kill_9_of_a_child_gives_a_truthful_result_and_a_resumable_session(
    tmp_path: Path, tree_env: FakeAnthropic
) -> None:
    from orchestrator.config.paths import pod_info_path

    tree = Tree(tasks=[TWO_TASKS[0]], slow=True, child_tool="glob")
    tree_env.responder = tree.respond
    workspace = tmp_path / "ws"
    workspace.mkdir()
    async with running_pod(
        workspace,
        tmp_path,
        provider=fake_provider(tree_env),
        **_config(workspace, permissions={"mode": "accept-edits"}),
    ) as pod:
        client = await pod.client()
        await _run(client, f"{PARENT} delegate one task")
        await _until(lambda: tree.child_requests >= 2)
        [child] = (await client.status()).children
        info = json.loads(pod_info_path(Path(child.socket)).read_text())
        assert info["parent"] == "t"
        # The workspace's pod is the parent, never its child in the same folder; `pod ls`
        # lists the child right under it.
        from cli.pods.discovery import find_pod_for, list_pods
        from cli.pods.table import tree_order

        found = find_pod_for(workspace)
        assert found is not None and found.socket == pod.socket
        ordered = [p.name for p in tree_order([p for p in list_pods() if p.alive])]
        assert ordered[ordered.index("t") + 1] == child.name
        os.kill(info["pid"], signal.SIGKILL)
        await client.wait_for("run_end", result="finished", timeout=60)
        [result] = tree.parent_answers
        assert "died" in result and "SIGKILL" in result and "resumable" in result
        [record] = load_session(pod_session(pod)).children.values()
        assert load_session(Path(record.session)).cut_off  # resumable: reloads paused
        await client.close()


def _serve_parent(workspace: Path, socket: Path, session: Path, fake: FakeAnthropic) -> Any:
    env = {**os.environ, "ANTHROPIC_API_KEY": "test-key", "ANTHROPIC_BASE_URL": fake.base_url}
    args = [
        sys.executable, "-m", "cli", "serve", "--workspace", str(workspace),
        "--socket", str(socket), "--session", str(session), "--name", "t",
        "--provider", "anthropic", "--model", "fake-model", "--permission-mode", "accept-edits",
    ]  # fmt: skip
    proc = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    return proc


async def _live(socket: Path, proc: Any) -> None:
    from orchestrator.serving.server import socket_is_live

    await _until(lambda: socket_is_live(socket) or proc.poll() is not None, 30)
    assert proc.poll() is None, proc.stderr.read().decode()


async def test_kill_9_of_the_parent_then_resume_continues_the_same_child(
    tmp_path: Path, tree_env: FakeAnthropic
) -> None:
    from orchestrator.config.paths import pod_info_path
    from orchestrator.serving.server import socket_is_live

    tree = Tree(tasks=[TWO_TASKS[0]], slow=True, child_tool="glob")
    tree_env.responder = tree.respond
    workspace = tmp_path / "ws"
    workspace.mkdir()
    socket = tmp_path / "p.sock"
    session = tmp_path / "parent.jsonl"
    proc = _serve_parent(workspace, socket, session, tree_env)
    try:
        await _live(socket, proc)
        client = await PodClient.connect(socket)
        await _run(client, f"{PARENT} delegate one task")
        await _until(lambda: tree.child_requests >= 2)  # the child streams its answer
        [child] = (await client.status()).children
        child_pid = json.loads(pod_info_path(Path(child.socket)).read_text())["pid"]
        await client.close()
        proc.kill()  # SIGKILL
        proc.wait()
        # The child died with its parent: killed at once, so its turn is cut off, not closed.
        await _until(lambda: not Path(f"/proc/{child_pid}").exists(), 30)
        assert not socket_is_live(Path(child.socket))
        proc = _serve_parent(workspace, socket, session, tree_env)
        await _live(socket, proc)
        client = await PodClient.connect(socket)
        status = await client.status()
        assert status.status == "paused"
        tree.slow = False
        await client.send("resume")
        await client.wait_for("run_end", result="finished", timeout=60)
        [answer] = tree.parent_answers
        assert "alpha answer" in answer
        loaded = load_session(session)
        assert len(loaded.children) == 1
        [record] = loaded.children.values()
        sessions = list(Path(record.session).parent.glob("*.jsonl"))
        assert sessions == [Path(record.session)]  # one child session, not two
        child_items = load_session(Path(record.session)).items
        assert sum(1 for item in child_items if item.kind == "user_message") == 1
        await client.send("shutdown")
        await client.close()
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()


def _child_pids(status_children: list[Any]) -> list[int]:
    from orchestrator.config.paths import pod_info_path

    return [json.loads(pod_info_path(Path(c.socket)).read_text())["pid"] for c in status_children]


async def test_cancel_and_shutdown_cascade_and_leave_no_process_behind(
    tmp_path: Path, tree_env: FakeAnthropic
) -> None:
    tree = Tree(tasks=TWO_TASKS, more=[TWO_TASKS, TWO_TASKS], slow=True, child_tool="glob")
    tree_env.responder = tree.respond
    workspace = tmp_path / "ws"
    workspace.mkdir()
    async with running_pod(
        workspace,
        tmp_path,
        provider=fake_provider(tree_env),
        **_config(workspace, permissions={"mode": "accept-edits"}),
    ) as pod:
        client = await pod.client()
        # Cancel while both children stream: both are cancelled, their calls closed.
        await _run(client, f"{PARENT} delegate")
        await _until(lambda: tree.child_requests >= 4)
        pids = _child_pids((await client.status()).children)
        await client.send("cancel")
        await client.wait_for("run_end", result="cancelled", timeout=30)
        await _until(lambda: not any(Path(f"/proc/{pid}").exists() for pid in pids), 30)
        for record in load_session(pod_session(pod)).children.values():
            assert list(load_session(Path(record.session)).turn_results.values()) == ["cancelled"]
        # Shutdown while two more stream: the pod stops, and so does every child.
        before = tree.child_requests
        await _run(client, f"{PARENT} delegate again")
        await _until(lambda: tree.child_requests >= before + 4)
        pids = _child_pids((await client.status()).children)
        await client.send("shutdown")
        await asyncio.wait_for(pod.task, 60)
        await _until(lambda: not any(Path(f"/proc/{pid}").exists() for pid in pids), 30)
        await client.close()


async def test_pause_withdraws_a_childs_approval_and_resume_asks_again(
    tmp_path: Path, tree_env: FakeAnthropic
) -> None:
    tree = Tree(tasks=[TWO_TASKS[0]])
    tree_env.responder = tree.respond
    workspace = tmp_path / "ws"
    workspace.mkdir()
    async with running_pod(
        workspace, tmp_path, provider=fake_provider(tree_env), **_config(workspace)
    ):
        client = await PodClient.connect(tmp_path / "pod.sock")
        await _run(client, f"{PARENT} delegate one task")
        first = await client.wait_for("approval_request", timeout=60)
        await client.send("pause")
        resolved = await client.wait_for("approval_resolved", id=first.data["id"], timeout=30)
        assert resolved.data["decision"] == "withdrawn"
        await client.wait_for("run_end", result="paused", timeout=30)
        [child] = (await client.status()).children
        assert await _child_status(child.socket) == "paused"
        assert (await client.status()).approvals == []
        await client.send("resume")
        again = await client.wait_for("approval_request", timeout=60)
        assert again.data["id"] == first.data["id"] and again.data["pod"] == "t.alpha-1"
        await client.send("deny", {"id": again.data["id"], "message": "not that file"})
        await client.wait_for("run_end", result="finished", timeout=60)
        assert not (workspace / "alpha.txt").exists()
        await client.close()


async def test_max_children_queues_the_rest(tmp_path: Path, tree_env: FakeAnthropic) -> None:
    tree = Tree(tasks=TWO_TASKS, child_tool="glob")
    tree_env.responder = tree.respond
    workspace = tmp_path / "ws"
    workspace.mkdir()
    config = _config(
        workspace,
        permissions={"mode": "accept-edits"},
        subpods=SubpodsConfig(max_children=1),
    )
    async with running_pod(workspace, tmp_path, provider=fake_provider(tree_env), **config):
        client = await PodClient.connect(tmp_path / "pod.sock")
        await _run(client, f"{PARENT} delegate two")
        events = await collect_until(client, "run_end", timeout=60)
        assert events[-1].data["result"] == "finished"
        states = [(e.data["name"], e.data["state"]) for e in events if e.event == "child"]
        # One at a time: the second starts only after the first exited.
        first_exit = next(i for i, (_, s) in enumerate(states) if s == "exited")
        started = {n for n, s in states[:first_exit] if s == "starting"}
        assert len(started) == 1
        assert len(tree.parent_answers) == 2
        await client.close()


async def test_a_childs_token_budget_stops_it_and_the_parent_is_told(
    tmp_path: Path, tree_env: FakeAnthropic
) -> None:
    tree = Tree(tasks=[TWO_TASKS[0]], child_tool="glob")
    tree_env.responder = tree.respond
    workspace = tmp_path / "ws"
    workspace.mkdir()
    config = _config(
        workspace,
        permissions={"mode": "accept-edits"},
        subpods=SubpodsConfig(child_max_tokens=1),
    )
    async with running_pod(workspace, tmp_path, provider=fake_provider(tree_env), **config):
        client = await PodClient.connect(tmp_path / "pod.sock")
        await _run(client, f"{PARENT} delegate")
        await client.wait_for("run_end", result="finished", timeout=60)
        [answer] = tree.parent_answers
        assert "limit_reached" in answer and "token budget" in answer
        await client.close()


async def test_an_agent_gives_its_child_a_role_and_a_narrower_toolset_and_depth_ends_the_tree(
    tmp_path: Path, tree_env: FakeAnthropic
) -> None:
    tree = Tree(tasks=[{"prompt": "alpha: look", "name": "look", "agent": "scout"}],
                child_tool="glob")  # fmt: skip
    tree_env.responder = tree.respond
    workspace = tmp_path / "ws"
    workspace.mkdir()
    config = _config(
        workspace,
        permissions={"mode": "accept-edits"},
        subpods=SubpodsConfig(max_depth=1),
        agents={
            "scout": AgentConfig(
                description="looks around", system_prompt="You scout.", tools=["glob", "read_file"]
            )
        },
    )
    async with running_pod(workspace, tmp_path, provider=fake_provider(tree_env), **config):
        client = await PodClient.connect(tmp_path / "pod.sock")
        await _run(client, f"{PARENT} delegate")
        await client.wait_for("run_end", result="finished", timeout=60)
        parent_first = next(
            r for r in tree_env.requests if PARENT in json.dumps(r.body["messages"][0])
        )
        task_tool = next(t for t in parent_first.body["tools"] if t["name"] == "task")
        assert "scout: looks around" in json.dumps(task_tool)
        child_first = next(
            r for r in tree_env.requests if "alpha: look" in json.dumps(r.body["messages"][0])
        )
        assert {t["name"] for t in child_first.body["tools"]} == {"glob", "read_file"}
        system = json.dumps(child_first.body["system"])
        assert "You scout." in system and "## Sub-pod" in system
        await client.close()


async def test_the_offline_demo_delegates_to_two_offline_child_pods(
    demo_at_once: None, tmp_path: Path
) -> None:
    """No key, no fake API: the scripted demo as parent, and its children run the demo too."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "README.md").write_text("# demo\n")
    async with running_pod(workspace, tmp_path, permissions={"mode": "accept-edits"}) as pod:
        client = await pod.client()
        await _run(client, "delegate some work")
        events = await collect_until(client, "run_end", timeout=90)
        assert events[-1].data["result"] == "finished"
        results = [e.data for e in events if e.event == "tool_result"]
        assert sorted(r["summary"] for r in results) == [
            "task t.files-1: finished",
            "task t.hello-2: finished",
        ]
        files = next(r for r in results if "files" in r["summary"])
        assert "glob" in files["content"]  # the child listed the files with its own tool
        pod.assert_all_requests_valid()
        await client.close()


async def test_a_pause_while_the_child_starts_leaves_nothing_running_and_resume_finishes(
    tmp_path: Path, tree_env: FakeAnthropic
) -> None:
    tree = Tree(tasks=[TWO_TASKS[0]], child_tool="glob")
    tree_env.responder = tree.respond
    workspace = tmp_path / "ws"
    workspace.mkdir()
    async with running_pod(
        workspace,
        tmp_path,
        provider=fake_provider(tree_env),
        **_config(workspace, permissions={"mode": "accept-edits"}),
    ) as pod:
        client = await pod.client()
        await _run(client, f"{PARENT} delegate")
        await client.wait_for("child", state="starting", timeout=30)
        await client.send("pause")
        await client.wait_for("run_end", result="paused", timeout=30)
        for child in (await client.status()).children:
            # Whatever stage it reached, a child that still runs is paused, not working.
            assert await _child_status(child.socket) in ("paused", "idle")
        await client.send("resume")
        await client.wait_for("run_end", result="finished", timeout=60)
        [answer] = tree.parent_answers
        assert "alpha answer" in answer
        records = load_session(pod_session(pod)).children
        assert len(records) == 1
        [record] = records.values()
        child_items = load_session(Path(record.session)).items
        assert sum(1 for item in child_items if item.kind == "user_message") == 1
        await client.close()


async def test_a_childs_request_for_input_is_answered_from_the_parents_client(
    tmp_path: Path, tree_env: FakeAnthropic
) -> None:
    from tests.mcp.asking_server import config as asking

    def respond(body: dict[str, Any]) -> Reply:
        results = _tool_results(body)
        if _first_user_text(body).startswith(PARENT):
            if results:
                return Reply(text="The child is done: " + _result_text(results[-1])[:400])
            task = {"prompt": "alpha: log in", "name": "alpha"}
            return Reply(text="Delegating.", tool_calls=[ToolCall(name="task", input=task)])
        if not results:
            return Reply(text="Asking.", tool_calls=[ToolCall(name="mcp__a__ask_token", input={})])
        return Reply(text="child got: " + _result_text(results[-1]))

    tree_env.responder = respond
    workspace = tmp_path / "ws"
    workspace.mkdir()
    async with running_pod(
        workspace,
        tmp_path,
        provider=fake_provider(tree_env),
        **_config(workspace, mcp={"servers": {"a": asking()}}),
    ) as pod:
        client = await pod.client()
        await _run(client, f"{PARENT} delegate a login")
        request = await client.wait_for("elicitation_request", timeout=60)
        assert (request.data["pod"], request.data["server"]) == ("t.alpha-1", "a")
        status = await client.status()
        assert status.state == "awaiting_input"
        assert [e.pod for e in status.elicitations] == ["t.alpha-1"]
        answer = {"token": "from-parent", "remember": True}
        await client.send(
            "answer_elicitation", {"id": request.data["id"], "action": "accept", "content": answer}
        )
        events = await collect_until(client, "run_end", timeout=90)
        await client.close()
    assert events[-1].data["result"] == "finished"
    [result] = [e.data for e in events if e.event == "tool_result"]
    assert "accept {'token': 'from-parent', 'remember': True}" in result["content"]
    assert [e.data["action"] for e in events if e.event == "elicitation_resolved"] == ["accept"]

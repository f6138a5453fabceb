"""The tree cases and their bars, without a pod: cases, the fake's answers, the checks."""

from __future__ import annotations

import json
import subprocess
import time
from typing import Any

from conformance.cases import build_cases
from conformance.fake_api import Reply
from conformance.proctree import alive, descendants, proc_of
from conformance.recorder import Seen
from conformance.report import CaseResult, to_json, tree_line, tree_totals
from conformance.server import RecordedRequest
from conformance.tree_cases import TREE_ACTIONS, TREE_HOLDS, build_tree_cases
from conformance.tree_checks import (
    TreeBars,
    invalid_request_problems,
    sessions_by_call,
    task_calls,
    wire_rerun_problems,
)
from conformance.tree_stimuli import TreeStimuli

SLOW = {"name": "bash", "input": {"command": "sleep 30"}}


def test_every_hold_meets_every_action_with_distinct_ids() -> None:
    cases = build_tree_cases()
    assert [c.id for c in cases] == [f"tree-{h}-{a}" for h in TREE_HOLDS for a in TREE_ACTIONS]
    assert not {c.id for c in cases} & {c.id for c in build_cases()}
    crash = next(c for c in cases if c.action == "crash")
    assert crash.restarts and crash.resumes
    fields = crash.report_fields()
    assert fields["state"] == crash.hold and fields["event"] == "crash"


def _request(n: int, body: dict[str, Any], *, valid: bool = True) -> RecordedRequest:
    return RecordedRequest(
        request_id=f"req_{n}",
        method="POST",
        path="/v1/messages",
        headers={},
        body=body,
        valid=valid,
        error=None if valid else "messages.1: bad",
        status=200 if valid else 400,
    )


def _user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}]}


def test_the_fake_delegates_only_when_task_is_offered_and_each_child_acts_once() -> None:
    tree = TreeStimuli(children=2, child_tool=SLOW)
    parent = {"messages": [_user(f"go {tree.parent_marker}")], "tools": [{"name": "task"}]}
    step = tree.respond(parent)
    assert isinstance(step, Reply) and [c.name for c in step.tool_calls] == ["task", "task"]
    assert tree.task_offered is True
    assert tree.respond(parent) is None  # the marker is honoured once
    child = {"messages": [_user(tree.prompt(1))]}
    first = tree.respond(child)
    assert isinstance(first, Reply) and first.tool_calls[0].name == "bash"
    again = tree.respond(child)
    assert isinstance(again, Reply) and tree.answers[1] in again.text
    plain = TreeStimuli(children=1, child_tool=SLOW)
    assert plain.respond({"messages": [_user(plain.parent_marker)], "tools": []}) is None
    assert plain.task_offered is False


def test_a_child_that_starts_over_or_gets_its_task_twice_is_flagged() -> None:
    tree = TreeStimuli(children=1, child_tool=SLOW)
    prompt = _user(tree.prompt(0))
    reply = {"role": "assistant", "content": [{"type": "text", "text": "x"}]}
    first = _request(1, {"messages": [prompt]})
    resumed = _request(2, {"messages": [prompt, reply, _user("results")]})
    assert wire_rerun_problems([first, resumed], tree, held=True) == []
    # The interrupted first request sent again is fine before the hold ...
    assert wire_rerun_problems([first, first], tree, held=False) == []
    # ... but once the child acted on its first reply, starting over is a second child.
    problems = wire_rerun_problems([first, first], tree, held=True)
    assert len(problems) == 1 and "started its task over" in problems[0]
    shrunk = wire_rerun_problems([first, resumed, first], tree, held=False)
    assert len(shrunk) == 1 and "started over" in shrunk[0]
    twice = _request(3, {"messages": [prompt, reply, prompt]})
    assert "given its task 2 times" in wire_rerun_problems([twice], tree, held=False)[0]


def test_invalid_requests_and_the_sessions_named_per_call_are_counted() -> None:
    assert invalid_request_problems([_request(1, {}), _request(2, {}, valid=False)]) == [
        "the fake API refused request req_2 (400): messages.1: bad"
    ]
    events = [
        Seen("tool_call_start", {"id": "c1", "name": "task"}, 0.0),
        Seen("tool_call_done", {"id": "c1", "name": "task"}, 0.0),
        Seen("tool_call_start", {"id": "c2", "name": "read_file"}, 0.0),
        Seen("child", {"call_id": "c1", "session": "/s/a.jsonl"}, 0.0),
        Seen("status", {"children": [{"call_id": "c1", "session": "/s/b.jsonl"}]}, 0.0),
    ]
    assert task_calls(events) == ["c1"]
    assert sessions_by_call(events) == {"c1": {"/s/a.jsonl", "/s/b.jsonl"}}


def test_the_process_walk_sees_grandchildren_and_knows_when_they_are_gone() -> None:
    shell = subprocess.Popen(["sh", "-c", "sleep 30 & sleep 30 & wait"])
    try:
        deadline = time.monotonic() + 10
        while len(found := descendants(shell.pid)) < 2:
            assert time.monotonic() < deadline, found
            time.sleep(0.02)
        assert all("sleep" in p.cmdline for p in found)
        me = proc_of(shell.pid)
        assert me is not None and alive(me)
    finally:
        shell.kill()
        shell.wait()
        for proc in found:
            subprocess.run(["kill", "-9", str(proc.pid)], check=False)
    deadline = time.monotonic() + 10
    while any(alive(p) for p in found):
        assert time.monotonic() < deadline
        time.sleep(0.02)
    assert not alive(me)


def test_the_report_carries_the_tree_bars() -> None:
    case = build_tree_cases()[0]
    bars = TreeBars(task_calls=2, child_sessions=2, processes=6)
    bars.orphans.append("after shutdown, pid 1 (x) still runs")
    result = CaseResult.failed(case, bars.problems(), 1.0, tree=bars.figures())
    assert result.group == "tree"
    data = json.loads(to_json([result], command=["pod"]))
    (row,) = data["rows"]
    assert row["group"] == "tree" and row["tree"]["orphans"] == 1
    assert data["tree"] == {**bars.figures(), "cases": 1}
    assert "1 orphan processes (of 6 seen)" in tree_line([result])
    assert tree_totals([CaseResult.skipped(case, "no task tool")]) is None
    assert result.message().startswith("tree case child_running × pause")
    table = CaseResult.passed(build_cases()[0], 1.0)
    assert table.group == "table" and "tree" not in table.to_dict()

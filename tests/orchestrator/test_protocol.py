"""The JSON-lines protocol: request vectors, errors, every event, the schema."""

from __future__ import annotations

import json
from typing import Any

import pytest

from orchestrator.core.segments import (
    FileRefSegment,
    KnowledgeRefSegment,
    PasteSegment,
    TextSegment,
    UnknownSegment,
    WorkflowInvokeSegment,
)
from orchestrator.protocol import (
    EVENT_DATA,
    MAX_LINE_BYTES,
    PARAMS_BY_METHOD,
    AnswerElicitationParams,
    ApproveParams,
    ClientIoResultParams,
    CompactParams,
    CompleteFilesParams,
    DenyParams,
    ForkParams,
    KillJobParams,
    NoParams,
    NotifyParams,
    OfferClientIoParams,
    PodEventParams,
    ProtocolError,
    Request,
    RewindParams,
    RunParams,
    SetBudgetParams,
    SetModelParams,
    SetModeParams,
    SubscribeParams,
    decode_event,
    encode_event,
    parse_request,
    protocol_schema,
)

VECTORS: list[tuple[str, Request, Any]] = [
    (
        '{"method":"run","params":{"input":"hi"},"id":1}',
        Request(method="run", params={"input": "hi"}, id=1),
        RunParams(input="hi"),  # the shorthand, remembered as plain input
    ),
    (
        '{"method":"notify","params":{"message":"build done"}}',
        Request(method="notify", params={"message": "build done"}),
        NotifyParams(message="build done"),
    ),
    (
        '{"method":"pod_event","params":{"kind":"errored","pod":"c1","message":"x"},"id":"a"}',
        Request(
            method="pod_event", params={"kind": "errored", "pod": "c1", "message": "x"}, id="a"
        ),
        PodEventParams(kind="errored", pod="c1", message="x"),
    ),
    ('{"method":"resume"}', Request(method="resume"), NoParams()),
    ('{"method":"pause"}', Request(method="pause"), NoParams()),
    ('{"method":"cancel","params":{}}', Request(method="cancel"), NoParams()),
    ('{"method":"shutdown"}', Request(method="shutdown"), NoParams()),
    ('{"method":"get_history","id":7}', Request(method="get_history", id=7), NoParams()),
    ('{"method":"get_status"}', Request(method="get_status"), NoParams()),
    (
        '{"method":"complete_files","params":{"prefix":"src/","limit":5}}',
        Request(method="complete_files", params={"prefix": "src/", "limit": 5}),
        CompleteFilesParams(prefix="src/", limit=5),
    ),
    (
        '{"method":"compact","params":{"focus":"the failing test"}}',
        Request(method="compact", params={"focus": "the failing test"}),
        CompactParams(focus="the failing test"),
    ),
    (
        '{"method":"approve","params":{"id":"toolu_1","scope":"session"}}',
        Request(method="approve", params={"id": "toolu_1", "scope": "session"}),
        ApproveParams(id="toolu_1", scope="session"),
    ),
    (
        '{"method":"deny","params":{"id":"toolu_1","message":"not on main"}}',
        Request(method="deny", params={"id": "toolu_1", "message": "not on main"}),
        DenyParams(id="toolu_1", message="not on main"),
    ),
    (
        '{"method":"answer_elicitation","params":{"id":"input_1","action":"accept",'
        '"content":{"token":"s3cret","n":3,"ok":true,"tags":["a"]}}}',
        Request(
            method="answer_elicitation",
            params={
                "id": "input_1",
                "action": "accept",
                "content": {"token": "s3cret", "n": 3, "ok": True, "tags": ["a"]},
            },
        ),
        AnswerElicitationParams(
            id="input_1",
            action="accept",
            content={"token": "s3cret", "n": 3, "ok": True, "tags": ["a"]},
        ),
    ),
    (
        '{"method":"rewind","params":{"to":12,"restore":"code","dry_run":true},"id":"r"}',
        Request(method="rewind", params={"to": 12, "restore": "code", "dry_run": True}, id="r"),
        RewindParams(to=12, restore="code", dry_run=True),
    ),
    (
        '{"method":"fork","params":{"at":12,"name":"plan B"}}',
        Request(method="fork", params={"at": 12, "name": "plan B"}),
        ForkParams(at=12, name="plan B"),
    ),
    (
        '{"method":"kill_job","params":{"id":"j1"},"id":"k"}',
        Request(method="kill_job", params={"id": "j1"}, id="k"),
        KillJobParams(id="j1"),
    ),
    (
        '{"method":"set_mode","params":{"mode":"plan"},"id":"m"}',
        Request(method="set_mode", params={"mode": "plan"}, id="m"),
        SetModeParams(mode="plan"),
    ),
    (
        '{"method":"list_models","id":"l"}',
        Request(method="list_models", id="l"),
        NoParams(),
    ),
    (
        '{"method":"set_model","params":{"model":"claude-opus-5","thinking":"adaptive","effort":"high"},"id":"s"}',
        Request(
            method="set_model",
            params={"model": "claude-opus-5", "thinking": "adaptive", "effort": "high"},
            id="s",
        ),
        SetModelParams(model="claude-opus-5", thinking="adaptive", effort="high"),
    ),
    (
        '{"method":"offer_client_io","params":{"files":true},"id":"o"}',
        Request(method="offer_client_io", params={"files": True}, id="o"),
        OfferClientIoParams(files=True),
    ),
    (
        '{"method":"client_io_result","params":{"id":"io_1","ok":true,"content":"x"}}',
        Request(method="client_io_result", params={"id": "io_1", "ok": True, "content": "x"}),
        ClientIoResultParams(id="io_1", ok=True, content="x"),
    ),
    (
        '{"method":"list_commands","id":4}',
        Request(method="list_commands", params={}, id=4),
        NoParams(),
    ),
    (
        '{"method":"get_stats","id":"st"}',
        Request(method="get_stats", params={}, id="st"),
        NoParams(),
    ),
    (
        '{"method":"set_budget","params":{"turn_budget_usd":0.5,"budget_usd":null},"id":"b"}',
        Request(method="set_budget", params={"turn_budget_usd": 0.5, "budget_usd": None}, id="b"),
        SetBudgetParams(turn_budget_usd=0.5, budget_usd=None),
    ),
    (
        '{"method":"approve","params":{"id":"toolu_9","mode":"accept-edits"}}',
        Request(method="approve", params={"id": "toolu_9", "mode": "accept-edits"}),
        ApproveParams(id="toolu_9", mode="accept-edits"),
    ),
    (
        '{"method":"subscribe","params":{"after":"k3Xq9Tz1Ab-42"}}',
        Request(method="subscribe", params={"after": "k3Xq9Tz1Ab-42"}),
        SubscribeParams(after="k3Xq9Tz1Ab-42"),
    ),
]


@pytest.mark.parametrize(
    ("line", "request_", "params"), VECTORS, ids=[json.loads(v[0])["method"] for v in VECTORS]
)
def test_every_method_parses(line: str, request_: Request, params: Any) -> None:
    assert parse_request(line) == (request_, params)
    assert parse_request(line.encode()) == (request_, params)
    # The envelope round-trips through its own JSON form.
    dumped = request_.model_dump_json(exclude_defaults=True)
    assert parse_request(dumped) == (request_, params)


def test_vectors_cover_every_method() -> None:
    assert {json.loads(line)["method"] for line, _, _ in VECTORS} == set(PARAMS_BY_METHOD)


def test_pause_is_a_method_without_params() -> None:
    assert parse_request('{"method":"pause"}') == (Request(method="pause"), NoParams())


def test_run_with_every_segment_kind_and_an_unknown_one() -> None:
    segments = [
        {"kind": "text", "text": "look at "},
        {"kind": "paste", "id": 3, "text": "pasted"},
        {"kind": "file_ref", "path": "src/a.py"},
        {"kind": "knowledge_ref", "slug": "style"},
        {"kind": "workflow_invoke", "slug": "review"},
        {"kind": "voice_note", "url": "x", "seconds": 3},
    ]
    _, params = parse_request(json.dumps({"method": "run", "params": {"segments": segments}}))
    assert isinstance(params, RunParams)
    assert params.segments == [
        TextSegment(text="look at "),
        PasteSegment(id=3, text="pasted"),
        FileRefSegment(path="src/a.py"),
        KnowledgeRefSegment(slug="style"),
        WorkflowInvokeSegment(slug="review"),
        UnknownSegment(kind="voice_note", url="x", seconds=3),  # type: ignore[call-arg]
    ]
    assert type(params.segments[-1]) is UnknownSegment
    assert [s.model_dump() for s in params.segments] == segments


def test_input_shorthand_is_one_text_segment() -> None:
    _, params = parse_request('{"method":"run","params":{"input":"hello"}}')
    assert isinstance(params, RunParams)
    assert (params.segments, params.input) == ([TextSegment(text="hello")], None)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("[1, 2]", "a request must be a JSON object"),
        ('"run"', "a request must be a JSON object"),
        (
            "{not json",
            "line is not JSON: Expecting property name enclosed in double quotes at column 2",
        ),
        (
            '{"method":"fly"}',
            "unknown method 'fly'; known: run, notify, pod_event, resume, pause, cancel, shutdown, get_history, get_status, complete_files, compact, approve, deny, answer_elicitation, rewind, fork, kill_job, set_mode, list_models, set_model, offer_client_io, client_io_result, list_commands, subscribe, set_budget, get_stats",
        ),
        (
            '{"params":{}}',
            "unknown method None; known: run, notify, pod_event, resume, pause, cancel, shutdown, get_history, get_status, complete_files, compact, approve, deny, answer_elicitation, rewind, fork, kill_job, set_mode, list_models, set_model, offer_client_io, client_io_result, list_commands, subscribe, set_budget, get_stats",
        ),
        (
            '{"method":"run","params":{}}',
            "invalid run request: params: Value error, run needs 'segments' or 'input'",
        ),
        (
            '{"method":"set_model","params":{}}',
            "invalid set_model request: params: Value error, name a model, a thinking setting or an effort to change",
        ),
        (
            '{"method":"set_model","params":{"model":"../../v1/files"}}',
            "invalid set_model request: model: Value error, '../../v1/files' is not a model id (letters, digits, '.', '_', ':', '@' and '-')",
        ),
        (
            '{"method":"run","params":{"input":"  "}}',
            "invalid run request: params: Value error, run input is blank",
        ),
        (
            '{"method":"run","params":{"input":"a","segments":[{"kind":"text","text":"b"}]}}',
            "invalid run request: params: Value error, give either 'input' or 'segments', not both",
        ),
        (
            '{"method":"run","params":{"input":"a","segments":[]}}',
            "invalid run request: params: Value error, give either 'input' or 'segments', not both",
        ),
        (
            '{"method":"run","params":{"input":null,"segments":[{"kind":"text","text":"b"}]}}',
            "invalid run request: params: Value error, give either 'input' or 'segments', not both",
        ),
        (
            '{"method":"run","params":{"input":5}}',
            "invalid run request: input: Input should be a valid string",
        ),
        (
            '{"method":"run","params":{"segments":[{"kind":"file_ref"}]}}',
            "invalid run request: segments.0.known.file_ref.path: Field required",
        ),
        (
            '{"method":"notify","params":{"message":""}}',
            "invalid notify request: message: String should have at least 1 character",
        ),
        (
            '{"method":"notify","params":{"message":" "}}',
            "invalid notify request: message: String should match pattern '\\S'",
        ),
        (
            '{"method":"pause","params":{"x":1}}',
            "invalid pause request: x: Extra inputs are not permitted",
        ),
        (
            '{"method":"pause","params":[]}',
            "invalid pause request: params: Input should be a valid dictionary",
        ),
        (
            '{"method":"pause","extra":1}',
            "invalid pause request: extra: Extra inputs are not permitted",
        ),
        (
            '{"method":"complete_files","params":{"limit":0}}',
            "invalid complete_files request: limit: Input should be greater than or equal to 1",
        ),
        (
            '{"method":"pod_event","params":{"kind":"paused"}}',
            "invalid pod_event request: kind: Input should be 'turn_ended', 'errored' or 'shut_down'",
        ),
    ],
)
def test_bad_lines_raise_invalid_request(line: str, message: str) -> None:
    with pytest.raises(ProtocolError) as info:
        parse_request(line)
    assert (info.value.code, str(info.value)) == ("invalid_request", message)


def test_error_keeps_a_usable_id() -> None:
    with pytest.raises(ProtocolError) as info:
        parse_request('{"method":"fly","id":9}')
    assert info.value.id == 9
    with pytest.raises(ProtocolError) as info:
        parse_request('{"method":"fly","id":[1]}')
    assert info.value.id is None


def test_invalid_utf8_is_refused() -> None:
    with pytest.raises(ProtocolError) as info:
        parse_request(b'{"method":"run","params":{"input":"\xff"}}')
    assert (info.value.code, str(info.value)) == (
        "invalid_request",
        "line is not valid UTF-8 (byte 35)",
    )


def test_max_line_is_eight_mebibytes() -> None:
    assert MAX_LINE_BYTES == 8 * 1024 * 1024


# -- events ------------------------------------------------------------------------------

EVENT_SAMPLES: dict[str, dict[str, Any]] = {
    "status": {
        "status": "paused",
        "state": "paused",
        "phase": None,
        "name": "p",
        "model": "m",
        "provider": "anthropic",
        "workspace": "/w",
        "session": "/s/20261127-000000-abcd.jsonl",
        "turn": 3,
        "usage": {"input_tokens": 1},
        "turn_usage": {"output_tokens": 2},
        "context": {"used": 1200, "window": 200000, "percent": 1, "compact_at": 80},
        "thinking": "adaptive, effort high",
        "sandbox": "on · network off",
        "web": {
            "search": "on",
            "fetch": "server",
            "why": {
                "search": "claude-sonnet-4-5 supports web search",
                "fetch": "claude-sonnet-4-5 runs the API's web fetch",
            },
        },
        "cost_usd": 0.0036,
        "budget": {
            "budget_usd": 5.0,
            "turn_budget_usd": None,
            "spent_usd": 0.0036,
            "turn_spent_usd": 0.0012,
        },
        "pause_reason": None,
        "approvals": [
            {
                "id": "toolu_9",
                "tool": "bash",
                "kind": "execute",
                "arguments": {"command": "make"},
                "summary": "run: make",
                "reason": "default mode asks before execute tools",
                "diff": None,
                "pod": "app.tests-1",
                "held": None,
            }
        ],
        "elicitations": [
            {
                "id": "input_7a",
                "server": "auth",
                "message": "Open this page to sign in",
                "mode": "url",
                "schema": None,
                "url": "https://auth.example/device",
                "tool": "mcp__auth__login",
                "pod": None,
            }
        ],
        "mcp": [
            {
                "name": "git",
                "status": "running",
                "tools": ["mcp__git__git_log", "mcp__git__git_push"],
                "offered": ["mcp__git__git_log"],
                "not_offered": {
                    "mcp__git__git_push": "it runs only as a task (execution.taskSupport = "
                    "required), which the pod does not support yet"
                },
                "restarts": 1,
                "survivors": ["4242 node helper.js"],
            }
        ],
        "children": [
            {
                "call_id": "toolu_3",
                "name": "app.tests-1",
                "state": "awaiting_approval",
                "tool": "bash",
                "tokens": 5100,
                "agent": "tester",
                "session": "/s/a.children/app.tests-1.jsonl",
                "socket": "/run/app.tests-1.sock",
                "tail": "→ bash",
            }
        ],
        "jobs": [
            {
                "id": "j1",
                "command": "npm run dev",
                "state": "running",
                "exit_code": None,
                "started_ms": 1700000000000,
                "ended_ms": None,
                "output_bytes": 4100,
            },
            {
                "id": "j2",
                "command": "make",
                "state": "exited",
                "exit_code": 0,
                "started_ms": 1700000000000,
                "ended_ms": 1700000004000,
                "output_bytes": 12,
            },
        ],
        "hooks": [
            {
                "event": "PreToolUse",
                "matcher": "bash",
                "command": "~/.config/pod/hooks/no-rm.sh",
                "timeout_s": 30.0,
                "on_failure": "block",
                "sandboxed": True,
            }
        ],
        "config_warnings": ["/w/.pod/config.toml sets allow_bash, which only you can choose"],
        "permission_mode": "plan",
        "thinking_setting": "auto",
        "effort": "",
        "pending": {"model": "claude-opus-5"},
        "todos": [
            {"content": "Run the tests", "status": "in_progress", "active_form": "Running them"},
            {"content": "Fix the bug", "status": "pending", "active_form": None},
        ],
        "id": 4,
    },
    "todos": {"todos": [{"content": "Run the tests", "status": "completed", "active_form": None}]},
    "client_io_request": {
        "id": "io_1",
        "op": "write_text_file",
        "path": "/src/app/a.py",
        "content": "x = 1\n",
        "call_id": "toolu_1",
        "argv": [],
        "cwd": "",
        "timeout_s": None,
        "output_byte_limit": None,
    },
    "models": {
        "models": [{"id": "claude-opus-5", "name": "Claude Opus 5"}],
        "current": "claude-opus-5",
        "thinking_setting": "auto",
        "effort": "high",
        "reason": "",
        "id": 7,
    },
    "resync": {"reason": "too_old", "epoch": "k3Xq9Tz1Ab"},
    "user_message": {"segments": [{"kind": "text", "text": "hi"}, {"kind": "new", "a": 1}]},
    "turn_start": {"turn": 2, "resumed": True},
    "text_delta": {"text": "he"},
    "text_done": {"text": "hello"},
    "thinking_delta": {"text": "hm"},
    "tool_call_start": {"id": "t1", "name": "Read"},
    "tool_call_args_delta": {"id": "t1", "json": '{"pa'},
    "tool_output_delta": {"id": "t1", "text": "compiling...\n"},
    "tool_call_done": {"id": "t1", "name": "Read", "arguments": {"path": "a"}},
    "tool_result": {
        "id": "t1",
        "summary": "[Interrupted by user]",
        "content": None,
        "is_error": False,
        "synthetic": True,
    },
    "system_note": {"text": "[The previous turn was interrupted]", "origin": "interrupt"},
    "usage": {
        "input_tokens": 10,
        "output_tokens": 2,
        "cache_creation_input_tokens": 1200,
        "cache_read_input_tokens": 30000,
        "web_search_requests": 2,
        "web_fetch_requests": 0,
        "one_hour_cache_writes": 200,
    },
    "server_tool_call": {
        "id": "srvtoolu_01",
        "name": "web_search",
        "input": {"query": "python asyncio"},
    },
    "server_tool_result": {
        "id": "srvtoolu_01",
        "name": "web_search",
        "sources": [{"url": "https://docs.python.org/3/", "title": "Python docs"}],
        "error_code": None,
    },
    "citation": {
        "url": "https://docs.python.org/3/",
        "title": "Python docs",
        "cited_text": "asyncio is a library",
    },
    "turn_end": {"turn": 2, "result": "cancelled"},
    "approval_request": {
        "id": "toolu_2",
        "tool": "edit_file",
        "kind": "edit",
        "arguments": {"path": "a.py", "old_string": "1", "new_string": "2"},
        "summary": "edit_file a.py",
        "reason": "default mode asks before edit tools",
        "diff": "--- a/a.py\n+++ b/a.py\n@@ -1 +1 @@\n-1\n+2\n",
        "pod": None,
        "held": None,
    },
    "approval_resolved": {"id": "toolu_2", "decision": "approved"},
    "elicitation_request": {
        "id": "input_5f1c",
        "server": "github",
        "message": "Which account should the issue be filed under?",
        "mode": "form",
        "schema": {
            "type": "object",
            "properties": {"account": {"type": "string", "enum": ["work", "home"]}},
            "required": ["account"],
        },
        "url": None,
        "tool": "mcp__github__create_issue",
        "pod": None,
    },
    "elicitation_resolved": {"id": "input_5f1c", "action": "accept"},
    "compaction": {
        "seq": 40,
        "first_seq": 1,
        "last_seq": 31,
        "summary": "The user asked for a refactor of app.py.",
        "tokens_before": 160000,
        "tokens_after": 21000,
        "files": ["src/app.py"],
        "trigger": "auto",
        "kept_rounds": 2,
        "kept_request": True,
        "todos": 3,
    },
    "rewind_preview": {
        "to": 12,
        "restore": "both",
        "prompt": "refactor app.py",
        "dropped": 9,
        "files": {
            "restored": ["src/app.py"],
            "deleted": ["src/new.py"],
            "left": {"big.bin": "too_large"},
            "insertions": 3,
            "deletions": 40,
        },
        "id": "r1",
    },
    "rewound": {
        "to": 12,
        "restore": "conversation",
        "prompt": "refactor app.py",
        "dropped": 9,
        "files": None,
    },
    "forked": {
        "session": "20261126-101500",
        "path": "/s/20261126-101500.jsonl",
        "workspace": "/w",
        "at": 12,
        "items": 11,
        "id": "f1",
    },
    "run_end": {"result": "paused", "pause_reason": "budget"},
    "error": {"code": "not_running", "message": "cannot pause while idle", "id": None},
    "alert": {"level": "warn", "source": "file_ref", "message": "m", "timestamp_ms": 1},
    "history": {
        "items": [{"kind": "system_message"}],
        "greeting": "hi",
        "alerts": [{"level": "warn", "source": "pod", "message": "m", "timestamp_ms": 1}],
        "id": "h",
    },
    "file_completions": {"prefix": "s", "candidates": ["src/"], "id": 1},
    "stats": {
        "turns": [
            {
                "turn": 1,
                "requests": 2,
                "input_tokens": 120,
                "cache_read_input_tokens": 4000,
                "cache_creation_input_tokens": 900,
                "output_tokens": 310,
                "cost_usd": 0.0123,
            }
        ],
        "turns_omitted": 0,
        "state_seconds": {"idle": 12.5, "requesting": 3.25},
        "status_of": {"idle": "idle", "requesting": "running"},
        "counting_since": 1780000000.0,
        "id": 7,
    },
    "commands": {
        "commands": [
            {
                "name": "review",
                "description": "Review a file",
                "argument_hint": "[file]",
                "source": "workspace",
                "path": ".pod/commands/review.md",
                "model": "opus",
                "shadowed_by": None,
            },
            {
                "name": "help",
                "description": "",
                "argument_hint": "",
                "source": "user",
                "path": "/home/u/.config/pod/commands/help.md",
                "model": None,
                "shadowed_by": "builtin",
            },
        ],
        "id": 3,
    },
    "shutdown": {},
    "child": {
        "call_id": "toolu_1",
        "name": "app.tests-1",
        "state": "executing_tools",
        "tool": "bash",
        "tokens": 1200,
        "agent": None,
        "session": "/s/a.children/app.tests-1.jsonl",
        "socket": "/run/app.tests-1.sock",
        "tail": "running pytest",
    },
}


def test_samples_cover_every_event() -> None:
    assert set(EVENT_SAMPLES) == set(EVENT_DATA)


@pytest.mark.parametrize("event", sorted(EVENT_DATA))
def test_every_event_encodes_and_decodes(event: str) -> None:
    data = EVENT_DATA[event].model_validate(EVENT_SAMPLES[event])
    line = encode_event(event, data)
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert json.loads(line) == {"event": event, "data": EVENT_SAMPLES[event]}
    decoded = decode_event(line)
    assert (decoded.event, decoded.data) == (event, EVENT_SAMPLES[event])


def test_encode_drops_a_null_id_except_on_error() -> None:
    status = EVENT_DATA["status"].model_validate({"status": "idle", "state": "idle"})
    assert "id" not in json.loads(encode_event("status", status))["data"]
    error = EVENT_DATA["error"].model_validate({"code": "internal", "message": "m"})
    assert json.loads(encode_event("error", error))["data"]["id"] is None


def test_encode_accepts_plain_dicts_and_keeps_unicode() -> None:
    assert encode_event("text_delta", {"text": "日本"}) == (
        '{"event": "text_delta", "data": {"text": "日本"}}\n'.encode()
    )
    assert encode_event("shutdown") == b'{"event": "shutdown", "data": {}}\n'


def test_decode_refuses_bad_events() -> None:
    with pytest.raises(ValueError):
        decode_event('{"event":"nope","data":{}}')
    with pytest.raises(ValueError):
        decode_event('{"event":"usage","data":{"input_tokens":"x","output_tokens":1}}')


def test_protocol_schema_covers_everything_and_is_json() -> None:
    schema = protocol_schema()
    assert json.loads(json.dumps(schema)) == schema
    assert set(schema) == {"title", "request", "methods", "events", "segment"}
    assert set(schema["methods"]) == set(PARAMS_BY_METHOD)
    assert set(schema["events"]) == set(EVENT_DATA)
    assert set(schema["request"]["properties"]["method"]["enum"]) == set(PARAMS_BY_METHOD)
    assert "json" in schema["events"]["tool_call_args_delta"]["properties"]


def test_method_names_are_the_machines_events_and_the_direct_methods() -> None:
    from typing import get_args

    from orchestrator.protocol.requests import DIRECT_METHODS, METHOD_NAMES, MethodName
    from states import METHOD_EVENTS

    assert (*METHOD_EVENTS, *DIRECT_METHODS) == METHOD_NAMES
    assert not set(METHOD_EVENTS) & set(DIRECT_METHODS)
    assert get_args(MethodName) == METHOD_NAMES
    assert set(PARAMS_BY_METHOD) == set(METHOD_NAMES)
    assert len(PARAMS_BY_METHOD) == len(METHOD_NAMES)

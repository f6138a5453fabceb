"""Interceptors steer a turn; hooks only watch (and may veto a submit)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from orchestrator.capabilities.hooks.chain import InterceptorChain
from orchestrator.core.history import Item, SystemMessage, ToolUseBlock, UserMessage
from orchestrator.core.interceptors import (
    BaseInterceptor,
    Cancel,
    Continue,
    ContinueWith,
    ContinueWithMessages,
    Deny,
    Finish,
    HookAction,
    Pause,
    PromptAction,
    ToolAction,
    TurnEndAction,
)
from tests.e2e.harness import ScriptedReply, ScriptedToolCall, collect_until, running_pod

MESSAGE = UserMessage(text="hi")


class Adds(BaseInterceptor):
    def __init__(self, text: str) -> None:
        self.text = text

    def on_prompt_submit(self, message: UserMessage) -> PromptAction:
        return ContinueWith([SystemMessage(text=self.text)])


class Vetoes(BaseInterceptor):
    def on_prompt_submit(self, message: UserMessage) -> PromptAction:
        return Cancel("not today")


def test_additions_from_every_interceptor_are_kept_in_order() -> None:
    chain = InterceptorChain(interceptors=[Adds("a"), BaseInterceptor(), Adds("b")])
    action = chain.prompt_submit(MESSAGE)
    assert isinstance(action, ContinueWith)
    assert [i.text for i in action.items] == ["a", "b"]  # type: ignore[union-attr]


def test_a_cancel_wins_and_a_hook_can_veto_but_not_add() -> None:
    assert InterceptorChain(interceptors=[Adds("a"), Vetoes()]).prompt_submit(MESSAGE) == Cancel(
        "not today"
    )
    seen: list[str] = []

    def hook(message: UserMessage) -> HookAction:
        seen.append(message.text)
        return Cancel("hook says no") if message.text == "stop" else Continue()

    chain = InterceptorChain(interceptors=[Adds("a")], hooks=[hook])
    assert isinstance(chain.prompt_submit(MESSAGE), ContinueWith)
    assert chain.prompt_submit(UserMessage(text="stop")) == Cancel("hook says no")
    assert seen == ["hi", "stop"]


def test_tool_and_turn_end_first_non_default_answer_wins() -> None:
    class DenyBash(BaseInterceptor):
        def before_tool(self, call: ToolUseBlock) -> ToolAction:
            return Deny("no shell") if call.name == "bash" else Continue()

    class More(BaseInterceptor):
        def on_turn_end(self, items: Sequence[Item]) -> TurnEndAction:
            return ContinueWithMessages([SystemMessage(text="one more")])

    chain = InterceptorChain(interceptors=[DenyBash(), More(), BaseInterceptor()])
    assert chain.tool(ToolUseBlock(id="1", name="bash")) == Deny("no shell")
    assert chain.tool(ToolUseBlock(id="2", name="glob")) == Continue()
    assert isinstance(chain.turn_end([]), ContinueWithMessages)
    assert InterceptorChain().turn_end([]) == Finish()
    assert (
        InterceptorChain(interceptors=[BaseInterceptor()]).tool(ToolUseBlock(id="3", name="x"))
        == Continue()
    )
    assert Pause().reason == ""


async def test_a_cancelled_submit_leaves_no_trace(workspace: Path, short_dir: Path) -> None:
    chain = InterceptorChain(interceptors=[Vetoes()])
    for style in ("system_message", "synthetic_read"):
        async with running_pod(
            workspace, short_dir, interceptors=chain, file_ref_style=style
        ) as pod:
            c = await pod.client()
            await c.send(
                "run",
                {
                    "segments": [
                        {"kind": "text", "text": "see "},
                        {"kind": "file_ref", "path": "README.md"},
                    ]
                },
            )
            events = await collect_until(c, "run_end")
            assert events[-1].data == {"result": "cancelled"}
            alerts = [e.data["message"] for e in events if e.event == "alert"]
            assert alerts == ["submit cancelled: not today"]
            assert (await c.request("get_history")).data["items"] == []
            assert pod.provider.requests == []
            await c.close()
        assert len(chain.interceptors) == 1  # the pod did not alter the caller's chain


async def test_denied_tool_gets_an_error_result(workspace: Path, short_dir: Path) -> None:
    class DenyAll(BaseInterceptor):
        def before_tool(self, call: ToolUseBlock) -> ToolAction:
            return Deny("not allowed here")

    replies = [
        ScriptedReply(
            tool_calls=[
                ScriptedToolCall(name="read_file", input={"path": "README.md"}, id="toolu_d")
            ]
        ),
        ScriptedReply(text="ok"),
    ]
    chain = InterceptorChain(interceptors=[DenyAll()])
    async with running_pod(workspace, short_dir, replies=replies, interceptors=chain) as pod:
        c = await pod.client()
        await c.send("run", {"input": "read"})
        events = await collect_until(c, "run_end")
        result = next(e.data for e in events if e.event == "tool_result")
        assert (result["summary"], result["is_error"]) == ("denied: not allowed here", True)
        pod.assert_all_requests_valid()
        await c.close()


def test_every_interception_point_is_one_of_the_hook_events() -> None:
    from orchestrator.capabilities.hooks import HookEvent
    from orchestrator.core.interceptors import INTERCEPTOR_EVENTS, BaseInterceptor, Interceptor

    methods = {name for name in vars(Interceptor) if not name.startswith("_")}
    assert (
        methods
        == set(INTERCEPTOR_EVENTS)
        == {name for name in vars(BaseInterceptor) if not name.startswith("_")}
    )
    assert set(INTERCEPTOR_EVENTS.values()) <= set(HookEvent)

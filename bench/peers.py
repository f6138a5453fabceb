"""The same scripted 50-round tool loop in LangGraph, pydantic-ai and this pod, in one run.

Every framework runs in this process with a fake model and a trivial tool, no network:

* ours: :class:`bench.round_overhead.OverheadPod` — a real controller with the scripted
  provider, its validators, the lifecycle machine and the fsync'd session file (also with the
  session on tmpfs, to show what the disk costs).
* LangGraph: ``StateGraph(MessagesState)`` with an agent node calling a custom
  ``BaseChatModel`` (tool calls, then text) and a prebuilt ``ToolNode``; without and with an
  ``InMemorySaver`` checkpointer. Interrupt: ``interrupt()`` inside the tools node, resumed
  with ``Command(resume=True)``.
* pydantic-ai: ``Agent(FunctionModel(...))`` with a plain tool; interrupt: a tool with
  ``requires_approval=True`` (the run ends with ``DeferredToolRequests``), resumed with
  ``DeferredToolResults``.

A loop is R model requests (R-1 tool rounds and a final text round) on top of a history of 0
or 1,000 messages; per-round time is the loop's wall time / R. Runs are interleaved across
frameworks so machine noise hits all of them alike. Pause → control back is measured from
the moment the framework reaches the interrupt (ours: ``pause`` handled while a tool waits)
to control returning to the caller (ours: ``run_end`` broadcast); resume → next model call
from the resume call to the fake model being invoked. A peer that cannot be imported or run
is reported with the reason instead of failing the suite.

    python -m bench.peers [--quick]
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import shutil
import tempfile
import time
import traceback
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from bench._common import (
    Result,
    TableRow,
    bench_config,
    latency_stats,
    main_for,
    median,
    ratio,
    row,
    scratch_workspace,
)
from bench.round_overhead import OverheadPod

NAME = "peers"
ROUNDS = 50
HISTORIES = (0, 1_000)
REPEATS = 5
PAUSE_SAMPLES = 30
QUICK_ROUNDS = 5
QUICK_REPEATS = 1
QUICK_PAUSE_SAMPLES = 3
TARGET_RATIO = 0.5

# bench/README.md, Reference figures: sanity checks in the report (per round ms at history 0 / 1,000).
FACTS_MS = {
    "langgraph": (1.1, 2.0),
    "langgraph_checkpointer": (1.7, 7.3),
    "pydantic_ai": (1.8, 14.0),
}

_RESULT_BODY = "\n".join(
    f"{n:4d}  line {n} of a file the model read, with some code" for n in range(24)
)
_ANSWER = "Here is what I found: the default is not applied in the second branch; fixed."

LoopFn = Callable[[int, int], Awaitable[float]]
"""(history messages, rounds) -> seconds for one loop."""


# -- ours ------------------------------------------------------------------------------------------


class Ours:
    """Our pod in process: per-round loops and pause/resume through the controller."""

    def __init__(self, root: Path, rounds: int, session_dir: Path | None = None) -> None:
        self.root = root
        self.rounds = rounds
        self.session_dir = session_dir
        self.pods: dict[int, OverheadPod] = {}

    async def loop(self, history: int, rounds: int) -> float:
        """One turn of ``rounds`` requests on a history of ``history`` items."""
        pod = self.pods.get(history)
        if pod is None:
            pod = self.pods[history] = OverheadPod(
                self.root, history, rounds, session_dir=self.session_dir
            )
            await pod.turn()  # warm-up
        return await pod.turn()

    def close(self) -> None:
        """Close every pod's session file."""
        for pod in self.pods.values():
            pod.close()


class _WaitTool:
    """A tool that waits until it is interrupted (like a call waiting for approval)."""

    name = "wait"
    side_effects = False
    description = "Waits until interrupted."
    input_schema: dict[str, Any] = {"type": "object", "properties": {}}  # noqa: RUF012

    async def run(self, args: dict[str, Any], ctx: Any) -> Any:
        await asyncio.sleep(3600)
        return "never"


async def ours_pause_resume(root: Path, samples: int) -> dict[str, Any]:
    """Pause (handled while a tool waits) → ``run_end``; resume → next model call."""
    from orchestrator.adapters.providers.scripted import (
        ScriptedProvider,
        ScriptedReply,
        ScriptedToolCall,
    )
    from orchestrator.protocol import parse_request
    from orchestrator.serving.pod import build_pod

    marks: dict[str, float] = {}
    run_end = asyncio.Event()
    tool_started = asyncio.Event()
    call = ScriptedReply(tool_calls=[ScriptedToolCall(name="wait")])

    def responder(request: Any) -> Any:
        marks["model_called"] = time.perf_counter()
        return call

    def sink(line: bytes) -> None:
        if line.startswith(b'{"event": "run_end"'):
            marks["run_end"] = time.perf_counter()
            run_end.set()
        elif line.startswith(b'{"event": "tool_call_done"'):
            tool_started.set()

    provider = ScriptedProvider(responder=responder)
    config = bench_config(root, session=root / "peers-pause.jsonl")
    pod = build_pod(config, broadcast=sink, provider=provider)
    controller = pod.controller
    controller.tools.registry.register(_WaitTool())
    _, params = parse_request(json.dumps({"method": "run", "params": {"input": "go"}}))
    pauses: list[float] = []
    resumes: list[float] = []
    pod.methods.handle("run", params, None, _drop)
    for i in range(samples + 1):
        if i:
            start = time.perf_counter()
            pod.methods.handle("resume", None, None, _drop)
            await tool_started.wait()
            resumes.append(marks["model_called"] - start)
        else:
            await tool_started.wait()
        tool_started.clear()
        await asyncio.sleep(0.002)  # the tool is now awaiting
        run_end.clear()
        start = time.perf_counter()
        pod.methods.handle("pause", None, None, _drop)
        await run_end.wait()
        if i < samples:  # the last pause only stops the run after the last resume sample
            pauses.append(marks["run_end"] - start)
        if controller.state_id != "paused":
            raise RuntimeError(f"pause left the pod {controller.state_id}")
    pod.methods.handle("shutdown", None, None, _drop)
    await controller.wait_idle()
    controller.transcript.session.close()
    return {"pause_to_control": latency_stats(pauses), "resume_to_model": latency_stats(resumes)}


def _drop(line: bytes) -> None:
    """Direct replies of in-process methods."""


# -- LangGraph -------------------------------------------------------------------------------------


class LangGraphPeer:
    """A tool-calling agent graph with a fake chat model."""

    def __init__(self) -> None:
        from langchain_core.language_models.chat_models import BaseChatModel
        from langchain_core.messages import AIMessage
        from langchain_core.outputs import ChatGeneration, ChatResult
        from langchain_core.tools import tool
        from langgraph.graph import START, MessagesState, StateGraph
        from langgraph.prebuilt import ToolNode, tools_condition

        peer = self
        self.rounds = ROUNDS
        self.calls = 0
        self.always_tool = False
        self.marks: dict[str, float] = {}
        self._ids = itertools.count()

        class FakeToolModel(BaseChatModel):
            """Tool calls for ``rounds - 1`` requests, then text."""

            @property
            def _llm_type(self) -> str:
                return "bench-fake"

            def _generate(
                self, messages: Any, stop: Any = None, run_manager: Any = None, **kwargs: Any
            ) -> Any:
                peer.marks["model_called"] = time.perf_counter()
                peer.calls += 1
                if peer.always_tool or peer.calls < peer.rounds:
                    msg = AIMessage(
                        content="",
                        tool_calls=[{"name": "noop", "args": {}, "id": f"call_{next(peer._ids)}"}],
                    )
                else:
                    msg = AIMessage(content="done")
                return ChatResult(generations=[ChatGeneration(message=msg)])

        @tool
        def noop() -> str:
            """Does nothing and says ok."""
            return "ok"

        model = FakeToolModel()
        tools_node = ToolNode([noop])

        def agent(state: MessagesState) -> dict[str, Any]:
            return {"messages": [model.invoke(state["messages"])]}

        def approving_tools(state: MessagesState) -> Any:
            from langgraph.types import interrupt

            peer.marks["interrupt"] = time.perf_counter()
            interrupt("approve the tool call?")
            return tools_node.invoke(state)

        def graph(tools: Any) -> Any:
            g = StateGraph(MessagesState)
            g.add_node("agent", agent)
            g.add_node("tools", tools)
            g.add_edge(START, "agent")
            g.add_conditional_edges("agent", tools_condition)
            g.add_edge("tools", "agent")
            return g

        self._graph = graph(tools_node)
        self._approval_graph = graph(approving_tools)
        self.plain = self._graph.compile()
        self._histories: dict[int, list[Any]] = {}

    def history(self, n: int) -> list[Any]:
        """``n`` messages in the same turn shape as ours."""
        from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

        if n not in self._histories:
            out: list[Any] = []
            turn = 0
            while len(out) < n:
                turn += 1
                a, b = f"h{turn}a", f"h{turn}b"
                out += [
                    HumanMessage(f"Turn {turn}: please fix module_{turn}.py"),
                    AIMessage(
                        content="Let me read it.",
                        tool_calls=[{"name": "read_file", "args": {"path": "x"}, "id": a}],
                    ),
                    ToolMessage(content=f"# module_{turn}\n{_RESULT_BODY}", tool_call_id=a),
                    AIMessage(
                        content="", tool_calls=[{"name": "grep", "args": {"p": "x"}, "id": b}]
                    ),
                    ToolMessage(content="src/a.py:1\nsrc/b.py:2", tool_call_id=b),
                    AIMessage(content=_ANSWER),
                ]
            out = out[:n]
            if out and getattr(out[-1], "tool_calls", None):
                out[-1] = AIMessage(content=_ANSWER)
            self._histories[n] = out
        return self._histories[n]

    def _run(self, app: Any, history: int, rounds: int) -> float:
        from langchain_core.messages import HumanMessage

        messages = [*self.history(history), HumanMessage("go")]
        self.rounds, self.calls, self.always_tool = rounds, 0, False
        config = {"recursion_limit": 10 * rounds + 10, "configurable": {"thread_id": "t"}}
        start = time.perf_counter()
        result = app.invoke({"messages": messages}, config)
        elapsed = time.perf_counter() - start
        if self.calls != rounds or result["messages"][-1].content != "done":
            raise RuntimeError(f"LangGraph loop made {self.calls} model calls, not {rounds}")
        return elapsed

    async def loop(self, history: int, rounds: int) -> float:
        """Without a checkpointer."""
        return self._run(self.plain, history, rounds)

    async def loop_checkpointed(self, history: int, rounds: int) -> float:
        """With a fresh ``InMemorySaver`` per run."""
        from langgraph.checkpoint.memory import InMemorySaver

        return self._run(self._graph.compile(checkpointer=InMemorySaver()), history, rounds)

    def pause_resume(self, samples: int) -> dict[str, Any]:
        """``interrupt()`` in the tools node → invoke returns; ``Command(resume)`` → model."""
        from langchain_core.messages import HumanMessage
        from langgraph.checkpoint.memory import InMemorySaver
        from langgraph.types import Command

        app = self._approval_graph.compile(checkpointer=InMemorySaver())
        config = {"recursion_limit": 100_000, "configurable": {"thread_id": "pause"}}
        self.always_tool, self.calls = True, 0
        pauses: list[float] = []
        resumes: list[float] = []
        try:
            result = app.invoke({"messages": [HumanMessage("go")]}, config)
            for _ in range(samples):
                back = time.perf_counter()
                if "__interrupt__" not in result:
                    raise RuntimeError("LangGraph did not interrupt")
                pauses.append(back - self.marks["interrupt"])
                start = time.perf_counter()
                result = app.invoke(Command(resume=True), config)
                resumes.append(self.marks["model_called"] - start)
        finally:
            self.always_tool = False
        return {
            "pause_to_control": latency_stats(pauses),
            "resume_to_model": latency_stats(resumes),
        }


# -- pydantic-ai -------------------------------------------------------------------------------------


class PydanticAIPeer:
    """An agent on a ``FunctionModel`` with a plain tool."""

    def __init__(self) -> None:
        from pydantic_ai import Agent, DeferredToolRequests
        from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
        from pydantic_ai.models.function import FunctionModel
        from pydantic_ai.usage import UsageLimits

        peer = self
        self.rounds = ROUNDS
        self.calls = 0
        self.marks: dict[str, float] = {}
        self._ids = itertools.count()
        self.limits = UsageLimits(request_limit=None)

        def respond(messages: Any, info: Any) -> Any:
            peer.marks["model_called"] = time.perf_counter()
            peer.calls += 1
            if peer.calls < peer.rounds:
                part = ToolCallPart(tool_name="noop", args={}, tool_call_id=f"c{next(peer._ids)}")
                return ModelResponse(parts=[part])
            return ModelResponse(parts=[TextPart("done")])

        def ask(messages: Any, info: Any) -> Any:
            peer.marks["model_called"] = time.perf_counter()
            part = ToolCallPart(tool_name="approve_me", args={}, tool_call_id=f"a{next(peer._ids)}")
            peer.marks["model_return"] = time.perf_counter()
            return ModelResponse(parts=[part])

        self.agent: Any = Agent(FunctionModel(respond))

        @self.agent.tool_plain
        def noop() -> str:
            """Does nothing and says ok."""
            return "ok"

        self.approval_agent: Any = Agent(
            FunctionModel(ask), output_type=[str, DeferredToolRequests]
        )

        @self.approval_agent.tool_plain(requires_approval=True)
        def approve_me() -> str:
            """Needs a person's approval."""
            return "ok"

        self._histories: dict[int, list[Any]] = {}

    def history(self, n: int) -> list[Any]:
        """``n`` messages in the same turn shape as ours."""
        from pydantic_ai.messages import (
            ModelRequest,
            ModelResponse,
            TextPart,
            ToolCallPart,
            ToolReturnPart,
            UserPromptPart,
        )

        if n not in self._histories:
            out: list[Any] = []
            turn = 0
            while len(out) < n:
                turn += 1
                a, b = f"h{turn}a", f"h{turn}b"
                out += [
                    ModelRequest(
                        parts=[UserPromptPart(f"Turn {turn}: please fix module_{turn}.py")]
                    ),
                    ModelResponse(
                        parts=[
                            TextPart("Let me read it."),
                            ToolCallPart(tool_name="read_file", args={"path": "x"}, tool_call_id=a),
                        ]
                    ),
                    ModelRequest(
                        parts=[
                            ToolReturnPart(
                                tool_name="read_file",
                                content=f"# module_{turn}\n{_RESULT_BODY}",
                                tool_call_id=a,
                            )
                        ]
                    ),
                    ModelResponse(
                        parts=[ToolCallPart(tool_name="grep", args={"p": "x"}, tool_call_id=b)]
                    ),
                    ModelRequest(
                        parts=[
                            ToolReturnPart(
                                tool_name="grep", content="src/a.py:1\nsrc/b.py:2", tool_call_id=b
                            )
                        ]
                    ),
                    ModelResponse(parts=[TextPart(_ANSWER)]),
                ]
            out = out[:n]
            if (out and isinstance(out[-1], ModelResponse) and len(out[-1].parts) > 1) or (
                out and isinstance(out[-1], ModelResponse) and out[-1].tool_calls
            ):
                out[-1] = ModelResponse(parts=[TextPart(_ANSWER)])
            self._histories[n] = out
        return self._histories[n]

    async def loop(self, history: int, rounds: int) -> float:
        """One agent run of ``rounds`` model requests."""
        messages = self.history(history)
        self.rounds, self.calls = rounds, 0
        start = time.perf_counter()
        result = await self.agent.run("go", message_history=messages, usage_limits=self.limits)
        elapsed = time.perf_counter() - start
        if self.calls != rounds or result.output != "done":
            raise RuntimeError(f"pydantic-ai loop made {self.calls} model calls, not {rounds}")
        return float(elapsed)

    async def pause_resume(self, samples: int) -> dict[str, Any]:
        """Deferred (approval) tool → run returns; ``DeferredToolResults`` → next model call."""
        from pydantic_ai import DeferredToolRequests, DeferredToolResults

        pauses: list[float] = []
        resumes: list[float] = []
        result = await self.approval_agent.run("go", usage_limits=self.limits)
        for _ in range(samples):
            back = time.perf_counter()
            output = result.output
            if not isinstance(output, DeferredToolRequests):
                raise RuntimeError(f"pydantic-ai did not defer: {output!r}")
            pauses.append(back - self.marks["model_return"])
            approvals: dict[str, Any] = {call.tool_call_id: True for call in output.approvals}
            start = time.perf_counter()
            result = await self.approval_agent.run(
                message_history=result.all_messages(),
                deferred_tool_results=DeferredToolResults(approvals=approvals),
                usage_limits=self.limits,
            )
            resumes.append(self.marks["model_called"] - start)
        return {
            "pause_to_control": latency_stats(pauses),
            "resume_to_model": latency_stats(resumes),
        }


# -- the run ------------------------------------------------------------------------------------------


def _version(dist: str) -> str | None:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return None


def _unavailable(exc: BaseException) -> dict[str, Any]:
    return {
        "available": False,
        "reason": f"{type(exc).__name__}: {exc}",
        "trace": traceback.format_exc(limit=3),
    }


async def _measure(root: Path, shm: Path | None, rounds: int, repeats: int, samples: int) -> Any:
    loops: dict[str, LoopFn] = {}
    status: dict[str, dict[str, Any]] = {}
    ours = Ours(root, rounds)
    loops["ours"] = ours.loop
    status["ours"] = {"available": True}
    ours_tmpfs: Ours | None = None
    if shm is not None:
        ours_tmpfs = Ours(root, rounds, session_dir=shm)
        loops["ours_tmpfs_session"] = ours_tmpfs.loop
        status["ours_tmpfs_session"] = {"available": True}
    langgraph: LangGraphPeer | None = None
    try:
        langgraph = LangGraphPeer()
        loops["langgraph"] = langgraph.loop
        loops["langgraph_checkpointer"] = langgraph.loop_checkpointed
        status["langgraph"] = status["langgraph_checkpointer"] = {
            "available": True,
            "version": _version("langgraph"),
        }
    except Exception as exc:
        status["langgraph"] = status["langgraph_checkpointer"] = _unavailable(exc)
    pydantic_ai: PydanticAIPeer | None = None
    try:
        pydantic_ai = PydanticAIPeer()
        loops["pydantic_ai"] = pydantic_ai.loop
        status["pydantic_ai"] = {"available": True, "version": _version("pydantic-ai-slim")}
    except Exception as exc:
        status["pydantic_ai"] = _unavailable(exc)

    samples_ms: dict[str, dict[int, list[float]]] = {k: {h: [] for h in HISTORIES} for k in loops}
    # Warm-up, then interleaved repeats.
    for name, fn in list(loops.items()):
        for h in HISTORIES:
            try:
                await fn(h, rounds)
            except Exception as exc:
                status[name] = _unavailable(exc)
                loops.pop(name)
                break
    for _ in range(repeats):
        for name, fn in loops.items():
            for h in HISTORIES:
                samples_ms[name][h].append(await fn(h, rounds) / rounds * 1000)
    ours.close()
    if ours_tmpfs is not None:
        ours_tmpfs.close()

    per_round: dict[str, Any] = {}
    for name in status:
        if name not in loops:
            per_round[name] = {**status[name]}
            continue
        per_round[name] = {
            **status[name],
            **{f"history_{h}_ms_per_round": median(samples_ms[name][h]) for h in HISTORIES},
            "samples_ms": {str(h): samples_ms[name][h] for h in HISTORIES},
        }
        if name in FACTS_MS:
            per_round[name]["facts_ms_per_round"] = dict(
                zip(map(str, HISTORIES), FACTS_MS[name], strict=True)
            )

    pauses: dict[str, Any] = {"ours": await ours_pause_resume(root, samples)}
    if langgraph is not None:
        try:
            pauses["langgraph_checkpointer"] = langgraph.pause_resume(samples)
        except Exception as exc:
            pauses["langgraph_checkpointer"] = _unavailable(exc)
    if pydantic_ai is not None:
        try:
            pauses["pydantic_ai"] = await pydantic_ai.pause_resume(samples)
        except Exception as exc:
            pauses["pydantic_ai"] = _unavailable(exc)
    return per_round, pauses


def _ratios(per_round: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    peers = [
        n
        for n in ("langgraph", "langgraph_checkpointer", "pydantic_ai")
        if per_round.get(n, {}).get("available")
    ]
    for h in HISTORIES:
        key = f"history_{h}_ms_per_round"
        mine = per_round["ours"].get(key)
        by_peer = {p: ratio(mine, per_round[p].get(key)) for p in peers}
        fastest = min(peers, key=lambda p: per_round[p][key]) if peers else None
        tmpfs = per_round.get("ours_tmpfs_session", {}).get(key)
        out[str(h)] = {
            "ours_ms": mine,
            "ours_over_peer": by_peer,
            "fastest_peer": fastest,
            "ours_over_fastest": by_peer.get(fastest) if fastest else None,
            "ours_tmpfs_over_fastest": (
                ratio(tmpfs, per_round[fastest].get(key)) if fastest else None
            ),
        }
    return out


def run(quick: bool = False) -> Result:
    """The benchmark; ``quick`` runs a 5-round loop once and 3 pause samples."""
    rounds = QUICK_ROUNDS if quick else ROUNDS
    repeats = QUICK_REPEATS if quick else REPEATS
    samples = QUICK_PAUSE_SAMPLES if quick else PAUSE_SAMPLES
    shm_root = Path("/dev/shm")
    shm = Path(tempfile.mkdtemp(prefix="pb", dir=shm_root)) if shm_root.is_dir() else None
    try:
        with scratch_workspace() as root:
            per_round, pauses = asyncio.run(_measure(root, shm, rounds, repeats, samples))
    finally:
        if shm is not None:
            shutil.rmtree(shm, ignore_errors=True)
    ratios = _ratios(per_round)
    table: list[TableRow] = []
    for name, fig in per_round.items():
        if not fig.get("available"):
            table.append(row(f"{name}: unavailable", None, "", note=fig.get("reason")))
            continue
        for h in HISTORIES:
            facts = FACTS_MS.get(name)
            note = f"reference {facts[HISTORIES.index(h)]} ms" if facts else None
            table.append(
                row(f"{name} @ {h:,} msgs", fig[f"history_{h}_ms_per_round"], "ms/round", note=note)
            )
    for h in HISTORIES:
        r = ratios[str(h)]
        for peer, value in r["ours_over_peer"].items():
            table.append(row(f"ours/{peer} @ {h:,}", value, "x"))
        if r["fastest_peer"]:
            value = r["ours_over_fastest"]
            table.append(
                row(
                    f"ours/fastest peer ({r['fastest_peer']}) @ {h:,}",
                    value,
                    "x",
                    target=f"≤ {TARGET_RATIO:g}",
                    met=value is not None and value <= TARGET_RATIO,
                )
            )
            if r["ours_tmpfs_over_fastest"] is not None:
                table.append(
                    row(
                        f"ours (session on tmpfs)/{r['fastest_peer']} @ {h:,}",
                        r["ours_tmpfs_over_fastest"],
                        "x",
                        note="without the disk's fsync cost",
                    )
                )
    for name, fig in pauses.items():
        if "pause_to_control" not in fig:
            table.append(row(f"{name} pause: unavailable", None, "", note=fig.get("reason")))
            continue
        table.append(
            row(f"{name}: pause → control back", fig["pause_to_control"]["median_ms"], "ms")
        )
        table.append(
            row(f"{name}: resume → next model call", fig["resume_to_model"]["median_ms"], "ms")
        )
    return {
        "benchmark": NAME,
        "quick": quick,
        "params": {
            "rounds": rounds,
            "histories": list(HISTORIES),
            "repeats": repeats,
            "pause_samples": samples,
        },
        "results": {"per_round": per_round, "ratios": ratios, "pause_resume": pauses},
        "table": table,
    }


def main() -> None:
    """Print the result as JSON."""
    main_for(run, __doc__ or NAME)


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        main()

"""Compaction: replacing the older part of the model's view with a summary.

:func:`~orchestrator.core.compaction_plan.plan_compaction` (pure) decides what to summarise and what to keep verbatim: the cut is
always at the start of a user or assistant message, so a ``tool_use`` is never separated from
its ``tool_result``, and a paused turn's unanswered calls stay in the kept part. The summary
comes from a model request (:func:`summary_request`) over the current view plus
:data:`COMPACTION_PROMPT`; its prefix is the one the last request sent, so it reads from the
prompt cache. Files the summarised part read or referenced are read again, fresh, and attached
to the summary (:func:`files_to_reattach`). :class:`Compactor` runs all of it and commits one
:class:`~orchestrator.core.history.Compaction` item, which is written whole or not at all: an
interrupted compaction leaves the history exactly as it was.
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Literal

from orchestrator.adapters.providers.base import (
    PromptTooLongError,
    Provider,
    ProviderError,
    ProviderRequest,
    ResponseComplete,
)
from orchestrator.adapters.scoped_fs import ScopedFS
from orchestrator.config.model import PodConfig
from orchestrator.core.compaction_plan import (
    FIRST_REQUEST_CHARS,
    LATEST_REQUEST_CHARS,
    CompactionPlan,
    carried_requests,
    item_tokens,
    plan_compaction,
)
from orchestrator.core.history import (
    AssistantMessage,
    AttachedFile,
    Compaction,
    Item,
    TextBlock,
    UserMessage,
)
from orchestrator.core.repair import pending_tool_calls
from orchestrator.core.segments import FileRefSegment
from orchestrator.core.server_loop import open_server_calls
from orchestrator.core.shrink import MIN_BLOCK_TOKENS, shrink_messages
from orchestrator.core.thinking import ThinkingPlan
from orchestrator.core.todos import Todo, todos_note
from orchestrator.core.tokens import (
    BLOCK_OVERHEAD,
    BYTES_PER_TOKEN,
    estimate_request,
    estimate_text,
)
from orchestrator.core.usage import TokenUsage
from orchestrator.core.wire import to_wire
from orchestrator.errors import PodRuntimeError
from orchestrator.runtime.context import Context
from orchestrator.runtime.file_refs import FileRefError, resolve_file_ref
from orchestrator.runtime.offload import off_loop

__all__ = [
    "COMPACTION_PROMPT",
    "FIRST_REQUEST_CHARS",
    "LATEST_REQUEST_CHARS",
    "CompactionError",
    "CompactionNotSmaller",
    "CompactionPlan",
    "CompactionRequest",
    "Compactor",
    "carried_requests",
    "files_to_reattach",
    "item_tokens",
    "plan_compaction",
    "reduced_messages",
    "summary_request_messages",
]

COMPACTION_PROMPT = """\
[Compaction request] This conversation is about to be replaced by your summary to save \
context; after it, only the summary, the files listed below it and the most recent messages \
remain. Write the summary you would need to continue the work without the earlier messages:

1. The user's goals and explicit requests (quote short ones exactly).
2. Decisions made, and why.
3. Files read, created or changed, and what changed in each.
4. Open tasks: what remains to do, and what was promised.
5. The current turn: what you were doing when this summary was requested, and the next step.

Be specific: names, paths, commands, error messages, numbers. Do not call tools; answer with \
the summary only."""
"""The instruction of the summary request (documented in docs/context.md)."""

FILE_TOOLS = frozenset({"read_file", "write_file", "edit_file"})
"""Tool calls whose ``path`` marks a file the summarised part worked on."""


class CompactionError(PodRuntimeError):
    """A compaction could not be made; the history is unchanged."""


class CompactionNotSmaller(CompactionError):
    """The summary and what is kept would be no smaller than the history they replace: the
    compaction is not committed (a pod goes on with its history as it was, and says so)."""


def files_to_reattach(
    plan: CompactionPlan, *, limit: int, earlier: list[str] | None = None
) -> list[str]:
    """Files to read again and attach to the summary, most important first, at most ``limit``:
    the ones the user ``@``-referenced in the summarised part (newest first), then those an
    earlier compaction attached (its summary is being summarised again), then those the
    model's tools read or changed (newest first). What the kept part shows is left out."""
    refs, touched = _paths(plan.summarised)
    seen_kept = set().union(*_paths(plan.kept))
    out: list[str] = []
    for path in [*reversed(refs), *(earlier or []), *reversed(touched)]:
        if len(out) >= limit:
            break
        if path not in seen_kept and path not in out:
            out.append(path)
    return out


def _paths(items: list[Item]) -> tuple[list[str], list[str]]:
    """Paths of ``@file`` refs, and paths of file tool calls, in history order."""
    refs: list[str] = []
    touched: list[str] = []
    for item in items:
        if isinstance(item, UserMessage):
            refs += [s.path for s in item.segments if isinstance(s, FileRefSegment)]
        elif isinstance(item, AssistantMessage):
            for call in item.tool_uses:
                path = call.input.get("path")
                if call.name in FILE_TOOLS and isinstance(path, str):
                    touched.append(path)
    return refs, touched


def summary_request_messages(
    view_messages: list[dict[str, Any]], *, focus: str | None
) -> list[dict[str, Any]]:
    """The view's messages with the compaction instruction appended (nothing is mutated)."""
    instruction = COMPACTION_PROMPT
    if focus:
        instruction += f"\n\nFocus especially on: {focus.strip()}"
    block = {"type": "text", "text": instruction}
    messages = list(view_messages)
    if messages and messages[-1]["role"] == "user":
        last = dict(messages[-1])
        content = last["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else list(content)
        last["content"] = [*blocks, block]
        messages[-1] = last
    else:
        messages.append({"role": "user", "content": [block]})
    return messages


def reduced_messages(items: list[Item], *, budget: int) -> list[dict[str, Any]]:
    """The summarised part as a request that fits ``budget`` tokens: tool contents pruned,
    oversized blocks cut to head and tail, then the oldest messages dropped (for a view
    already too long to send). Linear in the number of items."""
    # No message costs less than a block's framing, so no more items than this can fit: the
    # rest is never wired (a loaded history can be hundreds of thousands of items).
    tail = items[-(budget // BLOCK_OVERHEAD + 1) :]
    messages = to_wire(tail, prune_before_turn=max((i.turn for i in tail), default=0) + 1)
    return shrink_messages(messages, budget=budget)


SHRINK_ATTEMPTS = 4
"""Summary requests tried, each half the size of the one before, when the API says too long."""


@dataclass(frozen=True, slots=True)
class CompactionRequest:
    """Everything a compaction needs from the turn that asks for it."""

    trigger: Literal["auto", "manual", "recovery"]
    focus: str | None = None


class Compactor:
    """Makes and commits compactions for one pod."""

    def __init__(
        self,
        *,
        config: PodConfig,
        context: Context,
        provider: Provider,
        fs: ScopedFS,
        commit: Callable[[Item], Item],
    ) -> None:
        self.config = config
        self.context = context
        self.provider = provider
        self.fs = fs
        self.commit = commit
        self.open_todos: Callable[[], Sequence[Todo]] | None = None
        """The todo list (``TodoBoard.current``): its open items are kept verbatim in the
        summary."""

    def keep_tokens(self) -> int:
        """How much recent history a compaction keeps verbatim."""
        return self.config.compact_keep_tokens or max(1, self.context.window // 10)

    async def compact(
        self,
        request: CompactionRequest,
        *,
        system: str,
        tools: list[dict[str, Any]],
        model: str,
        max_tokens: int,
        thinking: ThinkingPlan | None = None,
    ) -> Compaction | None:
        """Summarise, re-read files and commit one compaction; None when nothing to compact.

        Raises :class:`CompactionError` when the summary cannot be made; cancellation
        (pause, cancel, shutdown) propagates, and either way nothing is committed.
        """
        view = self.context.view()
        body = self.context.body()
        view_messages = await self.context.prepared_messages()
        before = self.context.estimate(system, tools, view_messages)
        keep = self.keep_tokens()
        if request.trigger == "manual":
            # Asked for by a person: compact for real, even a history far below the window.
            keep = min(keep, before // 4)
        plan = plan_compaction(
            body,
            keep_tokens=keep,
            keep_rounds=self.config.compact_keep_rounds,
            # Rounds bigger than this would leave a compaction that cannot help.
            rounds_ceiling=self.context.window // 2,
        )
        if plan is None:
            return None
        fixed = estimate_request(system, tools, [])  # the system prompt and the tools
        room = self.context.window - estimate_text(COMPACTION_PROMPT) - self.config.max_tokens // 8
        # The whole view too long to send, or ending in calls still unanswered (client calls,
        # or a server call a paused loop or a mixed message left open: a request may not go
        # on after it): ask about the summarised part alone (after an earlier summary, if
        # any), shrunk to fit.
        reduce = (
            request.trigger == "recovery"
            or bool(pending_tool_calls(body))
            or bool(open_server_calls(body).calls)
            or before > room
        )
        summarised = [*view[: len(view) - len(body)], *plan.summarised]
        budget = max(1024, int(self.context.window * 0.8) - fixed)
        for attempt in range(SHRINK_ATTEMPTS):
            if reduce:
                # Linear, but over a long history still too long for the event loop.
                messages = await off_loop(
                    functools.partial(reduced_messages, summarised, budget=budget)
                )
            else:
                messages = view_messages  # the last request's prefix: read from the cache
            try:
                summary, usage = await self._summarise(
                    ProviderRequest(
                        model=model,
                        system=system,
                        messages=summary_request_messages(messages, focus=request.focus),
                        tools=tools,
                        max_tokens=max_tokens,
                        cache_ttl=(
                            None if self.config.prompt_cache == "off" else self.config.prompt_cache
                        ),
                        purpose="compaction",
                        # The same thinking as the turn's requests: the cached prefix is only
                        # read back under the same parameters, and some models cannot turn
                        # thinking off at all.
                        thinking=thinking.thinking if thinking else None,
                        output_config=thinking.output_config if thinking else None,
                    )
                )
                break
            except PromptTooLongError as exc:
                # Estimates are estimates: send less until the API takes it.
                if attempt == SHRINK_ATTEMPTS - 1:
                    raise CompactionError(
                        f"the history is too long even to summarise ({exc}), after cutting the "
                        f"summary request down to {budget} tokens; start a new session "
                        "(pod chat --new)"
                    ) from exc
                if reduce:
                    budget = max(MIN_BLOCK_TOKENS, budget // 2)
                reduce = True
        files = await asyncio.to_thread(self._read_files, plan)
        items = self.context.history.items
        first = next((i for i in items if isinstance(i, UserMessage)), None)
        latest = next((i for i in reversed(items) if isinstance(i, UserMessage)), None)
        todos = list(self.open_todos()) if self.open_todos is not None else []
        draft = Compaction(
            summary=summary,
            first_seq=plan.first_seq,
            last_seq=plan.last_seq,
            tokens_before=before,
            tokens_after=0,
            files=files,
            trigger=request.trigger,
            focus=request.focus,
            usage=usage,
            todos=todos_note(todos),
            requests=carried_requests(first, latest, plan),
            kept_rounds=plan.kept_rounds,
            kept_request=latest is not None,
            open_todos=sum(1 for t in todos if t.status != "completed"),
        )
        after = item_tokens(draft) + sum(item_tokens(i) for i in plan.kept) + fixed
        if after >= before and request.trigger != "manual":
            # Committing it would make every later request bigger, and hide the history. One
            # a person asked for is theirs to have (``pod compact`` says it is no smaller).
            raise CompactionNotSmaller(
                f"the summary would not make the context smaller ({before:,} → {after:,} "
                "tokens), so it was not committed; the history stays as it was"
            )
        committed = self.commit(replace(draft, tokens_after=max(0, after)))
        assert isinstance(committed, Compaction)
        return committed

    async def _summarise(self, request: ProviderRequest) -> tuple[str, TokenUsage]:
        final: ResponseComplete | None = None
        try:
            async for event in self.provider.stream(request):
                if isinstance(event, ResponseComplete):
                    final = event
        except PromptTooLongError:
            raise  # the caller sends less
        except ProviderError as exc:
            raise CompactionError(f"the summary request failed: {exc}") from exc
        if final is None:
            raise CompactionError("the summary request ended without a response")
        text = "\n".join(b.text for b in final.blocks if isinstance(b, TextBlock)).strip()
        if not text:
            raise CompactionError("the model answered the summary request with no text")
        return text, final.usage

    def _read_files(self, plan: CompactionPlan) -> list[AttachedFile]:
        """Read the files again, newest first, within a share of the window (each capped
        like an ``@file`` ref, the last one cut to what is left)."""
        earlier = self.context.compaction
        paths = files_to_reattach(
            plan,
            limit=self.config.compact_max_files,
            earlier=[f.path for f in earlier.files] if earlier is not None else [],
        )
        budget = int(self.keep_tokens() * BYTES_PER_TOKEN)
        files: list[AttachedFile] = []
        for path in paths:
            cap = min(self.config.file_ref_max_bytes, budget)
            if cap < 256:
                break  # too little room left for a useful file
            try:
                ref = resolve_file_ref(self.fs, path, max_bytes=cap)
            except FileRefError:
                continue  # deleted or out of scope since: the summary says what it was
            if ref.image is not None:
                continue  # an image is no text to re-attach; the summary says what it showed
            files.append(AttachedFile(path=path, text=ref.text))
            budget -= len(ref.text.encode("utf-8"))
        return files

"""What the model sees next, and how full its context window is.

The **view** is the part of the history the next request is built from: everything, or, after
a compaction, the compaction's summary (with its re-attached files) followed by the items it
kept and everything since. Tool results of old turns are **pruned** to their summaries, in
steps: the prune bound moves only once it would drop at least ``prune_step_tokens``, because
every move rewrites history the prompt cache holds (see docs/context.md).

The **size** of the next request is estimated from its wire form (:mod:`orchestrator.core.tokens`)
and calibrated with the real input count the API reported for the previous request, so the
estimate tracks the real tokenizer. Compaction is due when it passes ``compact_at`` of the
window.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from orchestrator.adapters.providers.base import Provider, ProviderError
from orchestrator.config.model import PodConfig
from orchestrator.core.history import AssistantMessage, Compaction, History, Item, SystemMessage
from orchestrator.core.repair import media_bound, prunable_tokens, prune_before_turn
from orchestrator.core.tokens import MessageTokens
from orchestrator.core.usage import TokenUsage, total
from orchestrator.core.wire import WireBuilder
from orchestrator.runtime.offload import off_loop

Alert = Callable[[str, str, str], None]
"""``(level, source, message)``: something a person should see."""

DEFAULT_WINDOW = 200_000
"""Assumed when neither the config nor the provider can tell the model's window."""

OFF_LOOP_ITEMS = 2_000
"""A view with more items than this not yet wired (a long session just loaded) is wired and
sized in a thread: doing it on the event loop would leave clients unanswered for seconds."""


@dataclass(frozen=True, slots=True)
class ContextSize:
    """How full the window is: tokens used (or estimated) against the window."""

    used: int
    window: int
    compact_at: float

    @property
    def percent(self) -> int:
        return min(999, round(100 * self.used / self.window)) if self.window else 0


class Context:
    """The model's view of one pod's history, its pruning, and its size."""

    def __init__(self, *, config: PodConfig, history: History, prune_bound: int = 0) -> None:
        self.config = config
        self.history = history
        self.window: int = config.context_window or DEFAULT_WINDOW
        self.window_known = config.context_window is not None
        self._builder = WireBuilder()
        self._prune_bound = prune_bound
        self._compaction_index: int | None = None
        self._head: SystemMessage | None = None
        self._kept_from = 0
        self._message_tokens = MessageTokens()
        self._calibration = 1.0
        self._last_estimate: int | None = None
        self._scanned = 0
        self._window_asked = False
        self._usage_scanned = 0
        self._last_usage: TokenUsage | None = None
        self._lock = threading.Lock()
        """The wire builder and the token count are built in a thread at times (see
        :meth:`prepared_messages`); an interrupted turn's thread may still run when the next
        request is built."""
        self._refresh_compaction()
        self.last_usage()  # scanned once now, while loading, not on the first status

    def reset(self) -> None:
        """Forget the view built so far: the history lost its tail (a rewind). What was
        learnt of the model (its window, the calibration) stays."""
        with self._lock:
            self._builder = WireBuilder()
            self._compaction_index = None
            self._head = None
            self._kept_from = 0
            self._message_tokens = MessageTokens()
            self._last_estimate = None
            self._scanned = 0
            self._usage_scanned = 0
            self._last_usage = None
        self._refresh_compaction()
        self.last_usage()

    # -- the view -------------------------------------------------------------------------

    def _refresh_compaction(self) -> None:
        """Take in a compaction committed since the last look (only new items are scanned)."""
        items = self.history.items
        start, self._scanned = self._scanned, len(items)
        for index in range(len(items) - 1, start - 1, -1):
            item = items[index]
            if isinstance(item, Compaction):
                self._compaction_index = index
                # Turn 0: the head stays first when pruning bisects the view by turn.
                self._head = SystemMessage(
                    text=item.text, origin="compaction", seq=item.seq, turn=0
                )
                kept = index
                while kept > 0 and items[kept - 1].seq > item.last_seq:
                    kept -= 1
                self._kept_from = kept
                return

    def view(self) -> list[Item]:
        """The items the next request is built from, in order."""
        self._refresh_compaction()
        items = self.history.items
        if self._compaction_index is None or self._head is None:
            return items
        ci = self._compaction_index
        return [self._head, *items[self._kept_from : ci], *items[ci + 1 :]]

    @property
    def compaction(self) -> Compaction | None:
        """The latest compaction, if any."""
        if self._compaction_index is None:
            return None
        item = self.history.items[self._compaction_index]
        return item if isinstance(item, Compaction) else None

    def body(self) -> list[Item]:
        """The view without the compaction head: what a new compaction may summarise."""
        view = self.view()
        return view[1:] if self._head is not None and view and view[0] is self._head else view

    # -- pruning ---------------------------------------------------------------------------

    def prune_move(self) -> tuple[int, int] | None:
        """A new prune bound and the tokens it drops, when a step is due; else None."""
        view = self.view()
        # Past what one request may carry in images or PDF pages, the API refuses every
        # request: prune as far as it takes, step or no step (it costs one cache miss).
        forced = media_bound(view, self._prune_bound, self.history.turn)
        candidate = prune_before_turn(self.history.turn, self.config.prune_keep_turns)
        if forced is not None and forced > candidate:
            candidate = forced
        elif candidate <= self._prune_bound:
            return None
        gain = prunable_tokens(view, candidate) - prunable_tokens(view, self._prune_bound)
        if gain < self.config.prune_step_tokens and forced is None:
            return None
        return candidate, gain

    def apply_prune(self, bound: int) -> None:
        """Move the prune bound (after it was recorded in the session)."""
        self._prune_bound = bound

    def prune_at_compaction(self) -> int | None:
        """The bound to move to right after a compaction: the prefix changed anyway."""
        candidate = prune_before_turn(self.history.turn, self.config.prune_keep_turns)
        return candidate if candidate > self._prune_bound else None

    @property
    def prune_bound(self) -> int:
        """Tool results of turns before this one send their summary only."""
        return self._prune_bound

    def messages(self) -> list[dict[str, Any]]:
        """The wire messages of the view, built incrementally."""
        with self._lock:
            return self._builder.build(self.view(), prune_before_turn=self._prune_bound)

    def unbuilt(self) -> int:
        """Items of the view not wired yet (every item, after a load or a compaction)."""
        view = self.view()
        built = self._builder.consumed
        return len(view) - built if built <= len(view) else len(view)

    async def prepared_messages(self) -> list[dict[str, Any]]:
        """:meth:`messages`, wired and sized in a thread when much of the view is new.

        Only reading happens there (the history is append-only, and commits wait for the task
        that awaits this); the token count is warmed too, so :meth:`estimate` of the same
        messages is cheap on the loop.
        """
        if self.unbuilt() <= OFF_LOOP_ITEMS:
            return self.messages()

        def wire_and_size() -> list[dict[str, Any]]:
            messages = self.messages()
            with self._lock:
                self._message_tokens(messages)
            return messages

        # The wired view lives as long as the history it mirrors: kept.
        return await off_loop(wire_and_size, keep=True)

    # -- size ------------------------------------------------------------------------------

    def estimate(
        self, system: str, tools: list[dict[str, Any]], messages: list[dict[str, Any]]
    ) -> int:
        """The next request's input tokens, estimated and calibrated by the last real count."""
        with self._lock:
            raw = self._message_tokens.request(system, tools, messages)
        self._last_estimate = raw
        return round(raw * self._calibration)

    def observe(self, usage: TokenUsage) -> None:
        """The API's real count for the request last estimated: calibrate against it."""
        if self._last_estimate and usage.context_tokens:
            ratio = usage.context_tokens / self._last_estimate
            self._calibration = min(2.0, max(0.5, ratio))

    def due(self, estimate: int) -> bool:
        """Whether a request of this size should be preceded by a compaction."""
        return estimate > self.config.compact_at * self.window

    def size(self) -> ContextSize:
        """How full the window is: the last request's real input, else the estimate."""
        last = self.last_usage()
        used = last.context_tokens if last is not None else 0
        return ContextSize(used=used, window=self.window, compact_at=self.config.compact_at)

    def last_usage(self) -> TokenUsage | None:
        """What the last request (of a turn or a compaction) used."""
        # Scanned incrementally: status asks for it often, and a loaded session can hold
        # a hundred thousand items with no usage recorded.
        items = self.history.items
        if len(items) < self._usage_scanned:
            self._usage_scanned, self._last_usage = 0, None  # a different history
        for item in items[self._usage_scanned :]:
            if isinstance(item, AssistantMessage | Compaction) and item.usage is not None:
                self._last_usage = item.usage
        self._usage_scanned = len(items)
        return self._last_usage

    def learn_refused_window(self, window: int | None) -> bool:
        """Take the window a "prompt is too long" refusal named, when it is smaller than the
        one assumed (a window the config or the Models API got wrong): compactions then size
        what they keep for the real one. Returns whether the window changed."""
        if window is None or window <= 0 or window >= self.window:
            return False
        self.window, self.window_known = window, True
        return True

    def forget_window(self) -> None:
        """The model changed (``set_model``): its window is asked again, unless the config
        sets one."""
        if self.config.context_window is None:
            self.window, self.window_known = DEFAULT_WINDOW, False
            self._window_asked = False

    async def learn_window(self, provider: Provider, alert: Alert) -> None:
        """Ask the provider for the model's window once, unless the config sets one; when it
        cannot tell, keep the default and say so in one alert."""
        if self.window_known or self._window_asked:
            return
        self._window_asked = True
        reason = "the provider does not say"
        try:
            window = await provider.context_window()
        except ProviderError as exc:
            window, reason = None, str(exc)
        if window:
            self.window, self.window_known = window, True
            return
        alert(
            "warn",
            "context",
            f"the context window of {provider.model} is unknown ({reason}); assuming "
            f"{self.window:,} tokens. Set context_window in .pod/config.toml to the "
            "model's real window.",
        )


def usage_of(items: list[Item]) -> TokenUsage:
    """The tokens every request behind these items used, by kind."""
    return total(
        item.usage
        for item in items
        if isinstance(item, AssistantMessage | Compaction) and item.usage is not None
    )

"""The check after each sandboxed command: what it planted among the protected paths is held
aside, the user is asked whether to keep it, and the model is told it waits.

``bash`` takes a :meth:`PlantGuard.snapshot` before a sandboxed command and calls
:meth:`PlantGuard.settle` after it: a protected path the command created, replaced, changed or
removed (:func:`~orchestrator.adapters.sandbox.planted.planted`) is moved into the pod's holding area
and the previous state put back (:mod:`~orchestrator.adapters.sandbox.quarantine`) *before* anyone is
asked, so nothing planted waits in the workspace for the user's next ``git status``. The
question is an ``approval_request`` for the same call with ``held`` set: approving puts the
held paths back, denying (or a client with nobody to ask, or an interrupt) leaves them
undone. An approval rather than a request for input (an elicitation): every client already
answers approvals (the TUI, ``pod run``, the ACP front-end), the answer is yes or no, and a
client with nobody to ask already says so (``deny`` with ``asked: false``). A background job outlives the call that started it: while it runs, the next
sandboxed command's check compares with the state the last check left (and asks there); when
it ends, what it planted is undone at once (:meth:`PlantGuard.undo_since_last`).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from orchestrator.adapters.sandbox.plant_snapshot import take_snapshot
from orchestrator.adapters.sandbox.planted import Plant, Snapshot, describe, plant_diff, planted
from orchestrator.adapters.sandbox.quarantine import Held, HoldingArea, discard, hold, keep
from orchestrator.protocol import ApprovalRequestData

__all__ = ["AskKeep", "KeepAnswer", "PlantGuard"]

SUMMARY_CHARS = 200

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class KeepAnswer:
    """What a person answered about keeping a command's plants."""

    keep: bool
    asked: bool = True
    """False: nobody could be asked (a client with no terminal denied for them)."""
    message: str = ""


AskKeep = Callable[[ApprovalRequestData], Awaitable[KeepAnswer]]


class PlantGuard:
    """One pod's check of what its sandboxed commands planted."""

    def __init__(self, workspace: Path, area: HoldingArea, ask: AskKeep | None = None) -> None:
        self.workspace = workspace
        self.area = area
        self.ask = ask
        """How a person is asked (the pod's approvals); None: nobody can be, so it is undone."""
        self.last: Snapshot | None = None
        """The protected paths as the last check left them (the next one compares with it
        where processes outlived their command)."""
        self._files = threading.Lock()
        """Held while paths are compared and moved (in a worker thread, or on the loop for
        an interrupt or a job's end): two checks never move the same path at once."""

    async def snapshot(self) -> Snapshot:
        """The workspace's protected paths now (one bounded walk, off the loop)."""
        return await asyncio.to_thread(take_snapshot, self.workspace)

    async def settle(
        self,
        before: Snapshot,
        *,
        call_id: str,
        arguments: dict[str, Any],
        say: Callable[[str], None],
        after: Snapshot | None = None,
    ) -> str | None:
        """Hold what changed since ``before``, ask, and return what the model reads about it
        (None: nothing was planted). ``say`` streams the waiting line as output. An interrupt
        before the answer leaves the plants undone, one after it lets the keep finish (work on
        files under way is never left half-done); either way it is re-raised."""
        held = await _finished(
            asyncio.ensure_future(asyncio.to_thread(self._hold_if_planted, before, after)),
            lambda held: self._interrupted(held, say),
        )
        if held is None:
            return None
        plants = held.plants
        say(
            f"\n[held for the user's approval, and undone meanwhile: this command created or "
            f"changed paths that run commands later, outside the sandbox: {describe(plants)}. "
            f"Waiting for the user's answer.]\n"
        )
        try:
            answer = await self._ask(held, call_id, arguments)
        except BaseException:
            self._interrupted(held, say)
            raise
        if answer.keep:
            problems = await _finished(
                asyncio.ensure_future(asyncio.to_thread(self._keep, held)), lambda _: None
            )
            note = f"[the user kept what this command planted: {_paths(plants)}]"
            if problems:
                note += f" (not all could be put back: {'; '.join(problems)})"
        else:
            discard(held)
            who = "the user denied it" if answer.asked else "nobody could be asked"
            reason = f": {answer.message.strip()}" if answer.message.strip() else ""
            note = f"[undone ({who}{reason}): {_paths(plants)} are as before this command]"
            if held.problems():
                note += f" (not all could be put back: {'; '.join(held.problems())})"
        self.last = await self.snapshot()
        return note

    def _hold_if_planted(self, before: Snapshot, after: Snapshot | None) -> Held | None:
        """Compare and hold (blocking): the plants held, or None when there are none."""
        with self._files:
            if after is None:
                after = take_snapshot(self.workspace)
            plants = planted(before, after)
            if not plants:
                self.last = after
                return None
            return hold(self.workspace, plants, self.area.new_hold())

    def _keep(self, held: Held) -> list[str]:
        with self._files:
            return keep(held)

    def _interrupted(self, held: Held | None, say: Callable[[str], None]) -> None:
        """An interrupt before the answer: what was held stays undone, and the model is told."""
        if held is not None:
            discard(held)
            say(
                f"[interrupted before the user answered: {_paths(held.plants)} stay undone, "
                "as before this command]\n"
            )
        self.last = take_snapshot(self.workspace)

    def undo_since_last(self) -> str | None:
        """A background job ended: what changed since the last check is undone at once, nobody
        asked (no call waits to carry the question); the note says what. Blocking."""
        if self.last is None:
            return None
        return self.undo_now(self.last, why="a background job ended")

    def undo_now(self, before: Snapshot, why: str = "the command was interrupted") -> str | None:
        """An interrupted command: what it planted is undone at once, nobody asked (blocking,
        so that a second interrupt cannot skip it). Returns the note for the model."""
        with self._files:
            after = take_snapshot(self.workspace)
            plants = planted(before, after)
            self.last = after
            if not plants:
                return None
            held = hold(self.workspace, plants, self.area.new_hold())
            discard(held)
            self.last = take_snapshot(self.workspace)
        return f"[{why}; what it planted is undone: {describe(plants)}]"

    async def _ask(self, held: Held, call_id: str, arguments: dict[str, Any]) -> KeepAnswer:
        if self.ask is None:
            return KeepAnswer(keep=False, asked=False, message="no one can be asked here")
        summary = f"keep what it planted: {describe(held.plants)}"
        if len(summary) > SUMMARY_CHARS:
            summary = summary[: SUMMARY_CHARS - 1] + "…"
        problems = held.problems()
        reason = (
            "a sandboxed command created or changed paths that configure commands run later "
            "outside the sandbox (git, the pod's config, editor and agent hooks); they are held "
            "aside and the previous state is back: approve puts them back, deny leaves them "
            "undone" + (f" (not all could be undone: {'; '.join(problems)})" if problems else "")
        )
        request = ApprovalRequestData(
            id=call_id,
            tool="bash",
            kind="execute",
            arguments=arguments,
            summary=summary,
            reason=reason,
            diff=plant_diff(held.plants),
            held=[p.path for p in held.plants],
        )
        return await self.ask(request)

    def close(self) -> None:
        """The pod stops: its holding area goes (nothing is held outside a call)."""
        self.area.close()


async def _finished(work: asyncio.Future[T], on_interrupt: Callable[[T], None]) -> T:
    """The result of blocking work on files, which an interrupt does not cut short: it is
    waited for, ``on_interrupt`` gets its result, and the interrupt goes on."""
    try:
        return await asyncio.shield(work)
    except asyncio.CancelledError:
        on_interrupt(await work)
        raise


def _paths(plants: list[Plant]) -> str:
    return ", ".join(p.path for p in plants)

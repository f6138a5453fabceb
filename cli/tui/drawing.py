"""The conversation as drawn: one view per model entry, kept in step with the model."""

from __future__ import annotations

from cli.tui.cards import ApprovalCard, ServerToolCard, ToolCard
from cli.tui.entries import (
    ApprovalEntry,
    AssistantEntry,
    Change,
    ElicitationEntry,
    ThinkingEntry,
    ToolEntry,
)
from cli.tui.entry_views import AssistantView, EntryView, SourcesView, ThinkingView, view_for
from cli.tui.form_card import ElicitationCard
from cli.tui.host import AppHost
from cli.tui.web_entries import ServerToolEntry, SourcesEntry


class Drawing:
    """The views of the conversation's entries, by the entry's index in the model."""

    def __init__(self, host: AppHost) -> None:
        self._host = host
        self._views: dict[int, EntryView] = {}

    def view(self, index: int) -> EntryView | None:
        """The view drawn for entry ``index``, if it is drawn."""
        return self._views.get(index)

    async def redraw(self) -> None:
        """Replace the conversation on screen with a view of every entry the model holds."""
        conversation = self._host.conversation
        await conversation.clear_entries()
        self._views = {i: view_for(entry) for i, entry in enumerate(self._host.model.entries)}
        if self._views:
            await conversation.mount_all(self._views.values())
        conversation.follow()

    async def draw(self, changes: list[Change]) -> None:
        """Mount the entries added and refresh the views of the entries changed."""
        host = self._host
        conversation = host.conversation
        for change in changes:
            if host.closing_down:
                return
            entry = host.model.entries[change.index]
            if change.kind == "added":
                view = view_for(entry)
                self._views[change.index] = view
                await conversation.mount(view)
                continue
            current = self._views[change.index]
            if isinstance(entry, AssistantEntry) and isinstance(current, AssistantView):
                if change.kind == "appended":
                    current.stream(change.text)
                    continue
                if not entry.streaming:
                    current.finish(entry.text)
                current.refresh_from(entry)
            elif isinstance(entry, ToolEntry) and isinstance(current, ToolCard):
                # Separate branches keep each refresh_from call type-checked.
                current.refresh_from(entry)
            elif isinstance(entry, ThinkingEntry) and isinstance(current, ThinkingView):  # noqa: SIM114
                current.refresh_from(entry)
            elif isinstance(entry, ServerToolEntry) and isinstance(current, ServerToolCard):  # noqa: SIM114
                current.refresh_from(entry)
            elif isinstance(entry, SourcesEntry) and isinstance(current, SourcesView):  # noqa: SIM114
                current.refresh_from(entry)
            elif isinstance(entry, ApprovalEntry) and isinstance(current, ApprovalCard):
                current.refresh_from(entry)
            elif isinstance(entry, ElicitationEntry) and isinstance(current, ElicitationCard):
                in_form = host.focused is not None and current in host.focused.ancestors
                current.refresh_from(entry)
                if in_form and not entry.waiting:  # answered here or elsewhere, or withdrawn
                    host.editor.focus(scroll_visible=False)
                    host.say(None)  # the form's keys no longer apply

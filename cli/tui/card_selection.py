"""Choosing a tool card with the keys: Up/Down move, Space expands it, Esc returns."""

from __future__ import annotations

from cli.tui.cards import Card
from cli.tui.editor import CardAction
from cli.tui.host import AppHost
from cli.tui.keys import step_card
from cli.tui.notices import Notice


class CardSelection:
    """The tool card chosen, if any, marked on screen."""

    def __init__(self, host: AppHost) -> None:
        self._host = host
        self.selected: int | None = None
        """The model index of the chosen card."""

    def key(self, action: CardAction) -> None:
        """Move the choice, expand the chosen card, or leave the cards."""
        host = self._host
        cards = host.model.card_indices()
        previous = self.selected
        if action == "leave":
            self.selected = None
        elif action == "toggle":
            card = self._card(previous)
            if card is not None:
                card.toggle()
            return
        elif not cards:
            host.editor.leave_cards()
            host.say(Notice("No tool cards yet"))
            return
        else:
            step = {"start": 0, "up": -1, "down": 1}[action]
            self.selected = step_card(cards, previous if step else None, step)
        old, new = self._card(previous), self._card(self.selected)
        if old is not None:
            old.remove_class("-selected")
        if new is not None:
            new.add_class("-selected")
            new.scroll_visible(animate=False)
            host.say(
                Notice(
                    "Tool cards: Up/Down choose · Space expands · Esc returns",
                    ttl=None,
                    while_status=False,
                )
            )
        elif old is not None:
            host.say(None)  # the hint about card keys is no longer true

    def _card(self, index: int | None) -> Card | None:
        view = self._host.view(index) if index is not None else None
        return view if isinstance(view, Card) else None

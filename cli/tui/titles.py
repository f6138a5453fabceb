"""A card's one-line title, fitted to the width there is: the part a narrow terminal cuts
first (the arguments, the query), and the outcome kept whole as long as it fits."""

from __future__ import annotations

from dataclasses import dataclass

from rich.cells import cell_len, set_cell_size

__all__ = ["NOT_KEPT", "TitleParts", "cut_end", "fit_outcome"]

NOT_KEPT = "interrupted · not kept in history"
"""How text or a tool call that was streamed but never committed is marked."""


@dataclass(frozen=True)
class TitleParts:
    """A card's one-line title in three parts: ``head``, then ``middle`` (the part a narrow
    terminal cuts first: the arguments, the command asked about), then ``tail`` (the outcome
    and keys, kept whole as long as it fits)."""

    head: str
    middle: str
    tail: str

    def __str__(self) -> str:
        return f"{self.head}{self.middle}{self.tail}"

    def fit(self, width: int) -> str:
        """The title in at most ``width`` cells: the middle cut first, then the tail's end;
        what is cut is marked with ``…``."""
        whole = str(self)
        if cell_len(whole) <= width:
            return whole
        room = width - cell_len(self.head) - cell_len(self.tail)
        if room >= 1 or not self.middle:
            middle = cut_end(self.middle, max(room, 1)) if self.middle else ""
            fitted = f"{self.head}{middle}{self.tail}"
            if cell_len(fitted) <= width:
                return fitted
        # Not even the outcome fits beside the head: keep what of it there is room for.
        head = f"{self.head}{'…' if self.middle else ''}"
        return cut_end(head + fit_outcome(self.tail, width - cell_len(head)), width)


def cut_end(text: str, cells: int) -> str:
    """``text`` in at most ``cells`` cells, its end replaced by ``…`` when it is cut."""
    if cell_len(text) <= cells:
        return text
    if cells <= 1:
        return "…"[:cells]
    return set_cell_size(text, cells - 1).rstrip() + "…"


def fit_outcome(text: str, cells: int) -> str:
    """A summary in ``cells`` cells; one that ends with ``— outcome`` keeps the outcome and
    cuts what leads to it (``npm te… — exit 1``)."""
    if cell_len(text) <= cells:
        return text
    lead, dash, outcome = text.rpartition(" — ")
    if dash and cell_len(dash + outcome) + 2 <= cells:
        return cut_end(lead, cells - cell_len(dash + outcome)) + dash + outcome
    return cut_end(text, cells)

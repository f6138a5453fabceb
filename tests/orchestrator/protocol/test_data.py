"""to_data copies a runtime record into a protocol model by field name."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from pydantic import BaseModel, ValidationError

from orchestrator.protocol.filling import to_data


class Shown(BaseModel):
    id: str
    size: int
    note: str = "none"


@dataclass
class Record:
    id: str
    size: int
    secret: str = "kept here"


@dataclass
class Row:
    id: str
    size: int
    extra: bool


def test_fields_of_the_same_name_are_copied_and_others_left_out() -> None:
    shown = to_data(Shown, Record(id="j1", size=3))
    assert shown == Shown(id="j1", size=3)  # note keeps its default; secret is not shown


def test_given_values_win_over_the_record() -> None:
    assert to_data(Shown, Record(id="j1", size=3), id="other", note="n") == Shown(
        id="other", size=3, note="n"
    )


def test_a_dataclass_is_filled_as_well() -> None:
    assert to_data(Row, Record(id="a", size=1), extra=True) == Row(id="a", size=1, extra=True)


def test_a_field_the_record_lacks_and_nobody_gives_fails() -> None:
    @dataclass
    class Partial:
        id: str

    with pytest.raises(ValidationError):
        to_data(Shown, Partial(id="x"))

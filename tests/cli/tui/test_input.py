"""The input editor against a real pod: paste chips, ``@`` completion chips, submitted segments."""

from __future__ import annotations

from textual import events

from tests.cli.tui.conftest import Session, eventually_status


async def _paste(session: Session, text: str) -> None:
    # As the terminal driver does: the app forwards the paste to the focused editor.
    session.app.post_message(events.Paste(text))
    await session.pilot.pause()


async def _history(session: Session) -> list[dict[str, object]]:
    return list((await session.probe.request("get_history")).data["items"])


async def test_multiline_paste_becomes_a_chip_and_is_sent_as_a_paste_segment(
    session: Session,
) -> None:
    body = "line one\nline two\nline three"
    await session.pilot.press(*"see ")
    await _paste(session, body)
    assert session.app.editor.text == "see ⟦Clipboard #1 | 28 chars, 3 lines⟧"
    await session.pilot.press("enter")
    await eventually_status(session.probe, "running")
    first = (await _history(session))[0]
    assert first["segments"] == [
        {"kind": "text", "text": "see "},
        {"kind": "paste", "id": 1, "text": body},
    ]
    # The conversation draws it as a chip, not as the pasted text.
    assert "user: see [Clipboard #1 | 28 chars, 3 lines]" in session.app.model.transcript()


async def test_long_single_line_paste_is_a_chip_short_one_is_text(session: Session) -> None:
    await _paste(session, "short")
    assert session.app.editor.text == "short"
    await _paste(session, "y" * 201)
    assert session.app.editor.text == "short⟦Clipboard #1 | 201 chars, 1 lines⟧"


async def test_backspace_after_a_paste_chip_deletes_it_whole(session: Session) -> None:
    await session.pilot.press(*"a")
    await _paste(session, "1\n2")
    await session.pilot.press("backspace")
    assert session.app.editor.text == "a"
    await session.pilot.press("backspace")
    assert session.app.editor.text == ""


async def test_at_completion_inserts_a_file_ref_chip(session: Session) -> None:
    app = session.app
    await session.pilot.press(*"read @src/a")
    await session.until(lambda: app.completions.option_count == 1, "candidates")
    assert str(app.completions.get_option_at_index(0).prompt) == "src/app.py"
    await session.pilot.press("tab")
    assert app.editor.text == "read ⟦@src/app.py⟧ "
    assert not app.completions.has_class("-open")

    # Backspace right after the chip (after its trailing space) removes the chip whole.
    await session.pilot.press("backspace", "backspace")
    assert app.editor.text == "read "

    # Again, accepted with Enter this time, then submitted: the run carries a file_ref.
    await session.pilot.press(*"@src/a")
    await session.until(lambda: app.completions.option_count == 1, "candidates")
    await session.pilot.press("enter")
    assert app.editor.text == "read ⟦@src/app.py⟧ "
    await session.pilot.press(*"please", "enter")
    await eventually_status(session.probe, "running")
    first = (await _history(session))[0]
    assert first["segments"] == [
        {"kind": "text", "text": "read "},
        {"kind": "file_ref", "path": "src/app.py"},
        {"kind": "text", "text": " please"},
    ]
    await session.until(lambda: "user: read @src/app.py please" in app.model.transcript())
    # The pod attached the file as a system message, which the UI marks as such.
    await session.until(
        lambda: any(
            t.startswith("note[file_ref]: [File: src/app.py]") for t in app.model.transcript()
        )
    )


async def test_tab_on_a_directory_descends_into_it(session: Session) -> None:
    app = session.app
    await session.pilot.press(*"@sr")
    await session.until(lambda: app.completions.option_count == 1, "candidates")
    await session.pilot.press("tab")
    assert app.editor.text == "@src/"
    await session.until(
        lambda: (
            app.completions.option_count == 1
            and str(app.completions.get_option_at_index(0).prompt) == "src/app.py"
        ),
        "candidates in src/",
    )
    await session.pilot.press("tab")
    assert app.editor.text == "⟦@src/app.py⟧ "


async def test_escape_closes_completions_without_touching_the_pod(session: Session) -> None:
    app = session.app
    await session.pilot.press(*"@READ")
    await session.until(lambda: app.completions.has_class("-open"), "completions open")
    await session.pilot.press("escape")
    assert not app.completions.has_class("-open")
    assert app.editor.text == "@READ"
    assert not session.exited


async def test_cursor_steps_over_a_chip(session: Session) -> None:
    editor = session.app.editor
    await _paste(session, "1\n2")
    await session.pilot.press(*"z", "left", "left")
    assert editor.cursor_location == (0, 0)
    await session.pilot.press("right")
    assert editor.cursor_location == (0, len("⟦Clipboard #1 | 3 chars, 2 lines⟧"))
    await session.pilot.press("delete")
    assert editor.text == "⟦Clipboard #1 | 3 chars, 2 lines⟧"
    await session.pilot.press("home", "delete")
    assert editor.text == ""


def _burst(session: Session, *keys: str) -> None:
    """Keys as a fast typist or a terminal paste-as-keys delivers them: all at once."""
    for key in keys:
        char = key if len(key) == 1 else None
        session.app.post_message(events.Key(key, char))


async def test_enter_typed_right_after_text_sends_all_of_it(session: Session) -> None:
    _burst(session, *"all of this", "enter", *"next")
    await eventually_status(session.probe, "running")
    first = (await _history(session))[0]
    assert first["segments"] == [{"kind": "text", "text": "all of this"}]
    await session.until(lambda: session.app.editor.text == "next", "the next input")


async def test_tab_before_the_candidates_arrived_still_completes(session: Session) -> None:
    _burst(session, *"@src/a", "tab", *"x")
    await session.until(lambda: session.app.editor.text == "⟦@src/app.py⟧ x", "the chip")


async def test_tab_without_an_at_goes_to_the_cards_and_typing_comes_back(
    session: Session,
) -> None:
    app = session.app
    await session.pilot.press(*"ab", "tab")
    # No card yet: it says so and the editor keeps the keys.
    await session.until(lambda: session.notice == "No tool cards yet", "the notice")
    assert not app.editor.cards_active
    await session.pilot.press("c")
    assert app.focused is app.editor
    assert app.editor.text == "abc"

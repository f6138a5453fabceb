"""The library's pure parts: names, frontmatter, fields, first-wins resolution."""

from __future__ import annotations

import pytest

from orchestrator.core.library import (
    FRONTMATTER_MAX_CHARS,
    LibraryRefused,
    check_name,
    list_field,
    name_problem,
    resolve,
    split_frontmatter,
    text_field,
)


@pytest.mark.parametrize(
    "name",
    [
        "../etc",
        "..",
        ".hidden",
        "a/b",
        "a\\b",
        "",
        "x" * 129,
        "bad\x1b[31mred",
        "tab\tname",
        "nul\x00",
        "rtl\u202eexe.md",
        "zero\u200bwidth",
        "two words",
    ],
)
def test_a_name_that_is_not_a_plain_word_is_refused(name: str) -> None:
    assert name_problem(name) is not None
    with pytest.raises(LibraryRefused) as caught:
        check_name(name, "/lib/x")
    # The message never carries the raw control character to a terminal.
    assert "\x1b" not in str(caught.value) and "\x00" not in str(caught.value)
    assert str(caught.value).startswith("/lib/x: ")


@pytest.mark.parametrize("name", ["review", "pdf-tools", "a.b_c", "ünïcode", "x" * 128])
def test_plain_names_pass(name: str) -> None:
    assert name_problem(name) is None
    assert check_name(name, "w") == name


def test_frontmatter_is_split_from_the_body() -> None:
    data, body = split_frontmatter(
        "---\nname: pdf\ndescription: Reads PDFs\n---\n# Body\ntext\n", "f"
    )
    assert data == {"name": "pdf", "description": "Reads PDFs"}
    assert body == "# Body\ntext\n"


def test_no_frontmatter_is_an_empty_mapping_and_the_whole_text() -> None:
    assert split_frontmatter("# Title\n---\nx", "f") == ({}, "# Title\n---\nx")
    assert split_frontmatter("\ufeff---\n---\nbody", "f") == ({}, "body")


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("---\n- a\n- b\n---\nbody", "mapping of keys, not a list"),
        ("---\njust text\n---\n", "mapping of keys, not a str"),
        ("---\n42\n---\n", "mapping of keys, not a int"),
        ("---\nname: [unclosed\n---\n", "not valid YAML"),
        ("---\nname: x\nno end\n", "never closed"),
        ("---\n1: x\n---\n", "is not text"),
        ("---\n!!python/object/apply:os.system ['touch /tmp/pwned']\n---\n", "not valid YAML"),
    ],
)
def test_bad_frontmatter_is_refused_with_the_reason(text: str, reason: str) -> None:
    with pytest.raises(LibraryRefused, match=reason) as caught:
        split_frontmatter(text, "/lib/bad.md")
    assert caught.value.where == "/lib/bad.md"


def test_oversized_frontmatter_is_refused_before_yaml_reads_it() -> None:
    huge = "---\n" + "k: v\n" * (FRONTMATTER_MAX_CHARS // 4) + "---\nbody"
    with pytest.raises(LibraryRefused, match="frontmatter is"):
        split_frontmatter(huge, "f")


def test_text_and_list_fields() -> None:
    data = {
        "description": "  Reads  ",
        "tools": "Read, Grep",
        "spaced": "Bash(git status:*) Read",
        "listed": ["Read", " Glob "],
        "bad": 3,
        "empty": "   ",
    }
    assert text_field(data, "description", "f") == "Reads"
    assert text_field(data, "empty", "f") is None
    assert text_field(data, "missing", "f") is None
    assert list_field(data, "tools", "f") == ["Read", "Grep"]
    assert list_field(data, "spaced", "f") == ["Bash(git status:*)", "Read"]
    assert list_field(data, "listed", "f") == ["Read", "Glob"]
    assert list_field(data, "missing", "f") is None
    with pytest.raises(LibraryRefused, match="`bad` must be text"):
        text_field(data, "bad", "f")
    with pytest.raises(LibraryRefused, match="comma list"):
        list_field(data, "bad", "f")


def test_the_first_of_a_name_wins_and_the_rest_are_shadowed() -> None:
    found = resolve([("a", "user/a"), ("b", "ws/b"), ("a", "ws/a"), ("a", "claude/a")])
    assert list(found) == ["a", "b"]
    assert found["a"].item == "user/a"
    assert found["a"].shadowed == ["ws/a", "claude/a"]
    assert found["b"].shadowed == []

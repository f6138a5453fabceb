"""Which ``@`` tokens are file mentions, and how plain text splits into segments."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from orchestrator.adapters.scoped_fs import ScopedFS
from orchestrator.core.mentions import (
    Mention,
    expand_mentions,
    find_mentions,
    segments_from_text,
    split_line_range,
)
from orchestrator.core.segments import FileRefSegment, PasteSegment, TextSegment, flatten_segments

POSITIVES = [
    ("explain @src/app.py", ["src/app.py"]),
    ("@app.py please", ["app.py"]),
    ("look at @README.md and @docs/guide.rst", ["README.md", "docs/guide.rst"]),
    ("see @src/app.py, then @b.py.", ["src/app.py", "b.py"]),
    ("is it (@src/app.py)?", ["src/app.py"]),
    ('the file "@config.toml" says', ["config.toml"]),
    ("[@lib/util.ts]", ["lib/util.ts"]),
    ("@Makefile targets", ["Makefile"]),
    ("@Dockerfile", ["Dockerfile"]),
    ("@README and @LICENSE", ["README", "LICENSE"]),
    ("@Procfile @Gemfile @Rakefile @Justfile", ["Procfile", "Gemfile", "Rakefile", "Justfile"]),
    ("the @src/ dir", ["src/"]),
    ("@src/utils/ folder", ["src/utils/"]),
    ("@./run.sh", ["./run.sh"]),
    ("@../sibling/x", ["../sibling/x"]),
    ("@src/lib/helpers", ["src/lib/helpers"]),
    ("@.gitignore and @.env.local", [".gitignore", ".env.local"]),
    ("@/etc/hosts", ["/etc/hosts"]),
    ("@NOTES.MD", ["NOTES.MD"]),
    ("first line\n@second.py", ["second.py"]),
    ("tab\t@x.json", ["x.json"]),
    ("done: @a.py!", ["a.py"]),
    ("@src/app.py… and", ["src/app.py"]),
    ("not code ` here @a.py", ["a.py"]),
    ("@node_modules/@types/node/index.d.ts", ["node_modules/@types/node/index.d.ts"]),
]

NEGATIVES = [
    "mail me at a@b.com",
    "alice@example.org",
    "pin pkg@1.2.3",
    "@1.2.3",
    "@v2.0.1",
    "@^1.4",
    "@~1.4.0",
    "@1.x",
    "@2.0.0-beta.1",
    "commit @a1b2c3d",
    "@0123456789abcdef0123456789abcdef01234567",
    "thanks @alice",
    "@latest",
    "@property",
    "@app.route('/x')",
    "@pytest.fixture",
    "@functools.cache",
    "@license MIT",
    "`@src/app.py` is code",
    "``@a.py``",
    "```python\n@dataclass\nclass A: ...\n@x.py\n```",
    "~~~\n@fence.py\n~~~",
    "```\nunclosed @a.py",
    "@https://example.com/a.py",
    "x@src/app.py",
    "@@a.py",
    "\\@a.py",
    "@",
    "@.",
    "@...",
    "@types/node",
    "@org/team",
]


@pytest.mark.parametrize(("text", "paths"), POSITIVES)
def test_mentions(text: str, paths: list[str]) -> None:
    assert [m.path for m in find_mentions(text)] == paths


@pytest.mark.parametrize("text", NEGATIVES)
def test_not_mentions(text: str) -> None:
    assert find_mentions(text) == []


def test_span_excludes_punctuation() -> None:
    text = "see @src/app.py, ok"
    assert find_mentions(text) == [Mention("src/app.py", 4, 15)]
    assert text[4:15] == "@src/app.py"


def test_mentions_after_a_code_fence() -> None:
    text = "```\n@a.py\n```\nnow @b.py and `@c.py` and @d.py"
    assert [m.path for m in find_mentions(text)] == ["b.py", "d.py"]


def test_scope_like_tokens_need_existence(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    fs = ScopedFS(tmp_path)
    text = "install @types/node, read @docs/guide"
    (tmp_path / "docs" / "guide").write_text("")
    assert [m.path for m in find_mentions(text, exists=fs.exists)] == ["docs/guide"]
    assert find_mentions(text) == []


def test_segments_from_text() -> None:
    assert segments_from_text("explain @src/app.py, and @b.md") == [
        TextSegment(text="explain "),
        FileRefSegment(path="src/app.py"),
        TextSegment(text=", and "),
        FileRefSegment(path="b.md"),
    ]
    assert segments_from_text("@a.py") == [FileRefSegment(path="a.py")]
    assert segments_from_text("no refs") == [TextSegment(text="no refs")]
    assert segments_from_text("") == []


@given(st.text(alphabet=st.sampled_from(list("ab./@ `\n,(py")), max_size=60))
def test_segments_flatten_back_to_the_text(text: str) -> None:
    assert flatten_segments(segments_from_text(text)) == text


def test_unlisted_extensions_need_existence(tmp_path: Path) -> None:
    (tmp_path / "data.bin").write_bytes(b"\x00")
    fs = ScopedFS(tmp_path)
    text = "load @data.bin, not @pytest.fixture or @missing.bin"
    assert [m.path for m in find_mentions(text, exists=fs.exists)] == ["data.bin"]
    assert find_mentions(text) == []


def test_inline_triple_backticks_are_code_not_a_fence() -> None:
    # A backtick fence's info string cannot hold a backtick (CommonMark), so this line is
    # inline code and the lines after it are prose.
    text = "```x``` then @a.py\n@b.py\n``` ``@c.py`` ```"
    assert [m.path for m in find_mentions(text)] == ["a.py", "b.py"]


def test_a_fence_closes_only_on_the_same_character_at_least_as_long() -> None:
    text = "````\n@a.py\n```\n@b.py\n~~~~\n@c.py\n`````\n@d.py"
    assert [m.path for m in find_mentions(text)] == ["d.py"]


def test_expand_mentions_splits_text_segments_only() -> None:
    segments = [
        TextSegment(text="see @a.py"),
        PasteSegment(id=1, text="@b.py"),
        FileRefSegment(path="c.py"),
    ]
    assert expand_mentions(segments) == [
        TextSegment(text="see "),
        FileRefSegment(path="a.py"),
        PasteSegment(id=1, text="@b.py"),
        FileRefSegment(path="c.py"),
    ]


SCAN_BOUND_S = 60
"""Each scan below takes well under a second when linear; a quadratic scan needs minutes."""

_ADVERSARIAL = r"""
import json, sys
from orchestrator.core.mentions import find_mentions
n = 1024 * 1024
shapes = {
    # Inline runs without a closer: the old pattern retried every shorter run length.
    "one long run": "x " + "`" * n + " @a.py",
    # A fence-like line of n backticks with no newline to end it.
    "long fence line": "`" * n + " @a.py",
    # One single backtick, then n/3 runs of two: no closer for the first one.
    "unpaired": "x `" + "``y" * (n // 3) + " @a.py",
    # Run lengths 1, 2, 3, ... none of which closes.
    "growing runs": "x " + "".join("`" * k + "y" for k in range(1, 1400)) + " @a.py",
    # As many code spans as mentions: each mention was checked against every span.
    "spans and mentions": "`c` @x.py " * (n // 10),
}
print(json.dumps({name: [m.path for m in find_mentions(text)][-2:] for name, text in shapes.items()}))
"""


def test_the_scan_is_linear_on_hostile_input() -> None:
    # Client input reaches the scan on the pod's event loop; a backtracking pattern there froze
    # the pod (80,000 backticks took 2 s, an 8 MiB line hours). A subprocess turns a regression
    # into a failed bound instead of a test that never ends.
    done = subprocess.run(
        [sys.executable, "-c", _ADVERSARIAL],
        capture_output=True,
        text=True,
        timeout=SCAN_BOUND_S,
        check=True,
    )
    assert json.loads(done.stdout) == {
        "one long run": ["a.py"],
        "long fence line": [],
        "unpaired": ["a.py"],
        "growing runs": ["a.py"],
        "spans and mentions": ["x.py", "x.py"],
    }


# -- line ranges ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("token", "expected"),
    [
        ("src/a.py:L10-L40", ("src/a.py", (10, 40))),
        ("src/a.py#L10-L40", ("src/a.py", (10, 40))),
        ("src/a.py:L10-40", ("src/a.py", (10, 40))),
        ("src/a.py#L7", ("src/a.py", (7, 7))),
        ("src/a.py:L40-L10", ("src/a.py:L40-L10", None)),  # backwards: not a range
        ("src/a.py:L0", ("src/a.py:L0", None)),
        ("src/a.py:Lx", ("src/a.py:Lx", None)),
        ("src/a.py:10", ("src/a.py:10", None)),
        (":L10", (":L10", None)),  # no path before it
        ("src/a.py", ("src/a.py", None)),
    ],
)
def test_a_line_range_is_split_off_the_path(
    token: str, expected: tuple[str, tuple[int, int] | None]
) -> None:
    assert split_line_range(token) == expected


def test_a_ranged_mention_becomes_a_ranged_ref_and_flattens_back() -> None:
    text = "compare @src/app.py:L10-L40, and @README.md#L3."
    segments = segments_from_text(text)
    assert segments[1] == FileRefSegment(path="src/app.py", start_line=10, end_line=40)
    assert segments[3] == FileRefSegment(path="README.md", start_line=3, end_line=3)
    # The model reads the editor style whichever was typed.
    assert flatten_segments(segments) == "compare @src/app.py:L10-L40, and @README.md:L3."


def test_a_range_on_an_unknown_extension_asks_existence_of_the_bare_path() -> None:
    asked: list[str] = []

    def exists(path: str) -> bool:
        asked.append(path)
        return True

    [mention] = find_mentions("see @data.bin:L2-L3", exists=exists)
    assert asked == ["data.bin"] and mention.lines == (2, 3)


def test_a_segment_range_that_runs_backwards_is_refused() -> None:
    from pydantic import ValidationError

    with pytest.raises(ValidationError, match="end_line needs a start_line at or before it"):
        FileRefSegment(path="a.py", start_line=9, end_line=3)
    with pytest.raises(ValidationError):
        FileRefSegment(path="a.py", end_line=3)


def test_an_mcp_resource_is_a_resource_ref_not_a_path() -> None:
    from orchestrator.core.segments import McpResourceRefSegment, TextSegment, flatten_segments

    text = "compare @mcp:git:git://log/main, and @mcp:fs:file:///etc/hosts."
    segments = segments_from_text(text)
    assert segments == [
        TextSegment(text="compare "),
        McpResourceRefSegment(server="git", uri="git://log/main"),
        TextSegment(text=", and "),
        McpResourceRefSegment(server="fs", uri="file:///etc/hosts"),
        TextSegment(text="."),
    ]
    assert flatten_segments(segments) == text
    # Without a URI, or inside code, it is no ref at all.
    assert find_mentions("see @mcp:git and `@mcp:git:git://x`") == []

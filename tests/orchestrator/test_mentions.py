"""Which ``@`` tokens are file mentions, and how plain text splits into segments."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from orchestrator.mentions import Mention, find_mentions, segments_from_text
from orchestrator.scoped_fs import ScopedFS
from orchestrator.segments import FileRefSegment, TextSegment, flatten_segments

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

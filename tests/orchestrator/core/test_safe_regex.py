"""RE2 for untrusted patterns: what it refuses and why, and that ordinary patterns match as before."""

from __future__ import annotations

import random
import re
import threading
import time

import pytest

from orchestrator.core.globs import compile_glob
from orchestrator.core.safe_regex import (
    MAX_PROGRAM_SIZE,
    PatternError,
    WholeMatchSet,
    compile_search,
    utf8,
)


@pytest.mark.parametrize(
    ("pattern", "named"),
    [
        (r"(ab)\1", "backreferences"),
        (r"(?P<word>\w+) (?P=word)", "backreferences"),
        (r"foo(?=bar)", "lookahead"),
        (r"foo(?!bar)", "lookahead"),
        (r"(?<=def )\w+", "lookbehind"),
        (r"(?<!_)name", "lookbehind"),
        (r"(?>a+)b", "atomic groups"),
        (r"a++b", "possessive"),
        (r"(a)?(?(1)b|c)", "conditionals"),
        (r"end\Z", r"\Z is not supported; use $"),
        (r"(?x) a b", "verbose mode"),
        (r"(?a)\w+", "ASCII-only"),
        (r"caf\u00e9", r"\x{hex}"),
        (r"x{,3}", "write {0,n}"),
    ],
)
def test_unsupported_constructs_are_named_with_an_alternative(pattern: str, named: str) -> None:
    with pytest.raises(PatternError) as caught:
        compile_search(pattern)
    message = str(caught.value)
    assert message.startswith(f"unsupported regular expression {pattern!r}: "), message
    assert named in message


def test_a_syntax_error_says_what_is_wrong() -> None:
    with pytest.raises(PatternError, match=r"^invalid regular expression '\(': missing \): \($"):
        compile_search("(")


def test_a_pattern_too_big_to_match_quickly_is_refused() -> None:
    compile_search(r"(?i)\b(" + "|".join(f"name{n}" for n in range(50)) + r")\b")
    with pytest.raises(
        PatternError, match=rf"too complex \(3004 RE2 instructions, at most {MAX_PROGRAM_SIZE}\)"
    ):
        compile_search(r"\w{1000}")


def test_a_pattern_that_is_not_unicode_is_refused() -> None:
    with pytest.raises(PatternError, match="not valid Unicode"):
        compile_search("\ud800")


_LINES = [
    "def main(argv):",
    "    return helper(x, y)  # TODO: fix",
    "class Config(BaseModel):",
    "ERROR 2024-05-01T10:00:00 connect timeout after 30s",
    "https://example.com/path?q=1",
    "naïve café",
    "",
    "\ttabbed\tline",
]

_ORDINARY = [
    "TODO",
    r"^\s*def \w+\(",
    r"class \w+\((\w+)\):$",
    r"\d{4}-\d{2}-\d{2}T",
    r"https?://[^\s/]+",
    r"(connect|read) timeout",
    r"^$",
    r"\bfix\b",
    "café",
    r"\t\w+\t",
    r"(?i)error.*TIMEOUT",
    r"[A-Z][a-z]+Model",
    ".",
]


@pytest.mark.parametrize("pattern", _ORDINARY)
def test_ordinary_patterns_match_like_python_re(pattern: str) -> None:
    compiled = compile_search(pattern)
    for line in _LINES:
        assert compiled.search(line) is bool(re.search(pattern, line)), (pattern, line)


def test_ignore_case_folds_unicode() -> None:
    assert compile_search("CAFÉ", ignore_case=True).search("un café")
    assert not compile_search("CAFÉ").search("un café")


def test_the_bomb_is_linear() -> None:
    started = time.monotonic()
    assert not compile_search("(a+)+b").search("a" * 1_000_000)
    # Python's re needs longer than the age of the universe for this line.
    assert time.monotonic() - started < 2.0


def test_a_search_lets_other_threads_run() -> None:
    """RE2 releases the GIL while it matches, so the event loop's thread keeps running."""
    slow = compile_search("[ab]*a[ab]{400}c")
    # Random, so RE2's DFA runs out of states and its (slower) NFA does the work.
    line = "".join(random.Random(0).choices("ab", k=500_000))
    done = threading.Event()
    ticks = 0

    def search() -> None:
        slow.search(line)
        done.set()

    worker = threading.Thread(target=search)
    started = time.monotonic()
    worker.start()
    while not done.is_set():
        time.sleep(0.001)
        ticks += 1
    worker.join()
    elapsed = time.monotonic() - started
    assert elapsed > 0.1, "the search was too quick to tell"
    # Holding the GIL would leave this thread about one tick per 5 ms switch interval at best.
    assert ticks > elapsed / 0.005, (ticks, elapsed)


# -- globs and sets -------------------------------------------------------------------------------


def test_glob_bombs_are_linear() -> None:
    started = time.monotonic()
    assert not compile_glob("*a" * 20 + "*b").matches("a" * 4000)
    assert not compile_glob("{a,a}" * 40 + "b", braces=True).matches("a" * 100)
    assert compile_glob("**/" * 30 + "*.py").matches("x/" * 500 + "a.py")
    assert time.monotonic() - started < 2.0


def test_glob_errors_name_the_glob() -> None:
    with pytest.raises(PatternError, match=r"^unbalanced '\{' in glob pattern '\*\.\{py'$"):
        compile_glob("*.{py", braces=True)
    with pytest.raises(PatternError, match=r"^invalid glob pattern '\[z-a\]': .*z-a"):
        compile_glob("[z-a]")


def test_undecodable_names_match_as_the_replacement_character() -> None:
    name = b"caf\xe9.log".decode("utf-8", "surrogateescape")
    assert utf8(name) == "caf\ufffd.log".encode()
    assert compile_glob("*.log").matches(name)
    assert compile_glob("caf?.log").matches(name)


def test_a_set_reports_every_match_in_order_given() -> None:
    sources = [compile_glob(g).source for g in ["*.py", "a*", "*.md", "[ab]*.py"]]
    matches = WholeMatchSet(sources)
    assert sorted(matches.matching("app.py")) == [0, 1, 3]
    assert matches.matching("README.md") == [2]
    assert matches.matching("zz") == []
    assert WholeMatchSet([]).matching("anything") == []


def test_a_glob_too_big_to_match_quickly_is_refused() -> None:
    with pytest.raises(PatternError, match=r"^glob pattern '\*a\*a.*' is too complex \(2713 RE2"):
        compile_glob("*a" * 300 + "*b")


# -- long lines are matched in windows ---------------------------------------------------------


BIG = "|(a|b){300}q"
"""Makes a pattern big (about 900 RE2 instructions): it is matched in small windows."""


def test_the_window_shrinks_as_the_pattern_grows() -> None:
    from orchestrator.core.safe_regex import MIN_WINDOW_BYTES, compile_search

    assert compile_search("needle").window >= 4 * 1024 * 1024  # grep's longest line, whole
    assert MIN_WINDOW_BYTES <= compile_search("needle" + BIG).window < 80 * 1024


def test_a_long_line_is_matched_in_windows_with_the_lines_anchors() -> None:
    from orchestrator.core.safe_regex import compile_search

    window = compile_search("needle" + BIG).window
    size = 5 * window
    line = "x" * size
    for at in (0, window - 3, 2 * window + 17, size - 6):
        with_hit = line[:at] + "needle" + line[at + 6 :]
        assert compile_search("needle" + BIG).search(with_hit), at
    # A match as long as the overlap, across a window's edge.
    long_hit = "a" + "z" * (window // 4 - 2) + "b"
    start = window - window // 8
    spanning = line[:start] + long_hit + line[start + len(long_hit) :]
    assert compile_search("az+b" + BIG).search(spanning)
    # ^ and $ keep meaning the line's start and end, not a window's.
    assert compile_search("^x" + BIG).search(line) and compile_search("x$" + BIG).search(line)
    assert not compile_search("^x" + BIG).search("y" + line)
    assert not compile_search("x$" + BIG).search(line + "y")
    assert not compile_search("needle" + BIG).search(line)
    # An ordinary pattern sees the whole line.
    assert compile_search("^x+$").search(line)


def test_a_stopped_search_gives_up_between_windows() -> None:
    from orchestrator.core.safe_regex import SearchStopped, compile_search

    pattern = compile_search("needle" + BIG)
    asked: list[int] = []

    def stopped() -> bool:
        asked.append(1)
        return len(asked) > 2

    with pytest.raises(SearchStopped):
        pattern.search("x" * (10 * pattern.window), stopped)
    assert len(asked) == 3

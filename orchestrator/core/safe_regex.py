"""Regular expressions from untrusted text, matched in linear time with RE2.

The model's grep patterns, the model's globs and a workspace's ``.gitignore`` lines are all
attacker-controlled. Python's ``re`` backtracks: ``(a+)+b`` against a long line of ``a`` runs
for ever, and it holds the GIL while it does, so the event loop stops and no client (status,
cancel) is answered. RE2 matches in time linear in the text (times the size of the compiled
pattern) and releases the GIL while it matches, so a search in a worker thread leaves the pod
responsive. It has no backreferences or lookaround: such a pattern gets a :class:`PatternError`
that names the construct and says what to write instead. A refused pattern is never retried
with ``re``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import cast

import re2

from orchestrator.errors import PodRuntimeError

MAX_PROGRAM_SIZE = 1000
"""RE2 instructions a search pattern or glob may compile to.

Matching costs at most (text length x program size): that is RE2's bound when its DFA gives
up on a pattern and its NFA takes over. Ordinary patterns compile to well under 400 (a 50-word
alternation with ``(?i)`` is about 320). At the cap, the worst pattern we found needs about 4 s
of one core per MiB, so one 4 MiB line (grep's per-file limit) would take about 16 s: a long
line is therefore matched in windows sized by the pattern (:data:`WINDOW_WORK`), with the stop
flag checked between them.
"""

MAX_MEM = 8 << 20
"""RE2's memory budget for one compiled pattern (its DFA caches live within it): when a pattern
needs more, RE2 falls back to its slower NFA instead of growing. Stated, not left to the
library's default, so the worst memory of a search is known."""

WINDOW_WORK = 64 * 1024 * MAX_PROGRAM_SIZE
"""Bytes x program size one RE2 call may be given: the worst pattern (at the size cap, about
4 s of one core per MiB) gets windows of 64 KiB, a third of a second each; an ordinary pattern
of 20 instructions gets 3 MiB windows, so grep's 4 MiB lines are mostly matched whole."""

MIN_WINDOW_BYTES = 64 * 1024


class SearchStopped(Exception):
    """A search was told to stop between two windows of a long line.

    A signal, not a failure: the caller asked for the stop (outside the error tree, so no
    handler of failures reports it as the pattern's error)."""


class PatternError(PodRuntimeError):
    """A regular expression or glob is invalid or uses what RE2 does not support."""


def _options(*, ignore_case: bool = False, dot_nl: bool = False) -> re2.Options:
    options = re2.Options()
    # RE2 logs every parse error to stderr, which is the terminal UI's screen.
    options.log_errors = False
    options.max_mem = MAX_MEM
    options.case_sensitive = not ignore_case
    options.dot_nl = dot_nl
    return options


def utf8(text: str) -> bytes:
    """``text`` as UTF-8; lone surrogates (undecodable file names) become U+FFFD, as shown."""
    try:
        return text.encode()
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "replace").encode()


# RE2's parse error (after the colon) → what the construct is and what to write instead.
_UNSUPPORTED: list[tuple[tuple[str, ...], str]] = [
    (
        (*(f"\\{d}" for d in "123456789"), "\\g", "\\k", "(?P="),
        "backreferences (\\1, (?P=name)) are not supported; spell the repeated text out "
        "(e.g. `(foo|bar)-(foo|bar)`), or grep a wider pattern and check the hits",
    ),
    (
        ("(?=", "(?!"),
        "lookahead (?=…) and (?!…) is not supported; make the following text part of the "
        "pattern, or grep a wider pattern and check the hits",
    ),
    (
        ("(?<=", "(?<!"),
        "lookbehind (?<=…) and (?<!…) is not supported; make the preceding text part of the "
        "pattern, or grep a wider pattern and check the hits",
    ),
    (
        ("(?>", "++", "*+", "?+", "}+"),
        "atomic groups (?>…) and possessive quantifiers (a++, a*+) are not needed, since RE2 "
        "never backtracks; drop the `?>` or the extra `+`",
    ),
    (
        ("(?(",),
        "conditionals (?(1)…|…) are not supported; use an alternation such as (a|b)",
    ),
    (
        ("\\Z",),
        "\\Z is not supported; use $ (each line is searched on its own) or \\z",
    ),
    (
        ("(?x", "(?#"),
        "verbose mode (?x) and comments (?#…) are not supported; write the pattern without "
        "spaces and comments",
    ),
    (
        ("(?a", "(?u", "(?L"),
        "the (?a), (?u) and (?L) flags are not supported; \\d \\w \\s \\b are ASCII-only in "
        "RE2, use \\pL, \\pN or \\p{Greek} for other scripts",
    ),
    (
        ("\\u", "\\U", "\\N"),
        "\\u, \\U and \\N{…} escapes are not supported; write the character itself or \\x{hex}",
    ),
]


def _explain(pattern: str, reason: str) -> PatternError:
    """The error for a pattern RE2 refused, naming an unsupported construct when it is one."""
    construct = reason.rpartition(": ")[2]
    if construct == "(?P" and "(?P=" in pattern:
        construct = "(?P="  # RE2 stops at "(?P"; the "=" makes it a backreference
    for prefixes, advice in _UNSUPPORTED:
        if construct.startswith(prefixes):
            return PatternError(f"unsupported regular expression {pattern!r}: {advice}")
    return PatternError(f"invalid regular expression {pattern!r}: {reason}")


def _reason(exc: re2.error) -> str:
    raw = exc.args[0] if exc.args else ""
    return raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)


def _compile(pattern: str, options: re2.Options) -> re2._Regexp[bytes]:
    try:
        source = pattern.encode()
    except UnicodeEncodeError:
        raise PatternError(f"pattern {pattern!r} is not valid Unicode text") from None
    try:
        return re2.compile(source, options)
    except re2.error as exc:
        raise _explain(pattern, _reason(exc)) from None


def _empty_lower_bound(pattern: str) -> bool:
    """Whether ``pattern`` has ``{,n}``: Python reads it as ``{0,n}``, RE2 as literal text."""
    i = 0
    in_class = False
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
            # A "]" first in a class (after an optional "^") is a literal.
            i += (
                2 if pattern.startswith("]", i + 1) else 3 if pattern.startswith("^]", i + 1) else 1
            )
            continue
        elif pattern.startswith("{,", i):
            j = i + 2
            while j < len(pattern) and pattern[j].isdigit():
                j += 1
            if j > i + 2 and pattern.startswith("}", j):
                return True
        i += 1
    return False


def _check_size(regex: re2._Regexp[bytes], label: str) -> None:
    if regex.programsize > MAX_PROGRAM_SIZE:
        raise PatternError(
            f"{label} is too complex ({regex.programsize} RE2 instructions, at most "
            f"{MAX_PROGRAM_SIZE}); use smaller {{n}} counts or fewer alternatives or "
            "wildcards, or split it into several searches"
        )


@dataclass(frozen=True, slots=True)
class SearchPattern:
    """A model's search regex, compiled by RE2; ``search`` looks for it anywhere in a line."""

    source: str
    _regex: re2._Regexp[bytes]

    @property
    def window(self) -> int:
        """Bytes of a line matched in one RE2 call (see :data:`WINDOW_WORK`)."""
        return max(MIN_WINDOW_BYTES, WINDOW_WORK // max(1, self._regex.programsize))

    def search(self, line: str, stopped: Callable[[], bool] | None = None) -> bool:
        """Whether the pattern occurs in ``line``.

        A line longer than :attr:`window` is matched in windows of the whole line that
        overlap by a quarter of a window, so the stop flag can be asked between them:
        ``stopped`` is called before each and :class:`SearchStopped` raised when it says so.
        ``^``, ``$`` and ``\\b`` keep their meaning (each window sees the line around it); a
        match longer than the overlap that spans a window's edge is missed, which only a
        pattern near the size cap on a line of generated text (minified code, data) meets.
        """
        data = utf8(line)
        size, window = len(data), self.window
        if size <= window + window // 4:
            return self._regex.search(data) is not None
        for start in range(0, size, window):
            if stopped is not None and stopped():
                raise SearchStopped
            end = min(start + window + window // 4, size)
            if self._regex.search(data, start, end) is not None:
                return True
            if end == size:
                break
        return False


def compile_search(pattern: str, *, ignore_case: bool = False) -> SearchPattern:
    """Compile a grep pattern (RE2 syntax); PatternError says what is wrong or unsupported."""
    if _empty_lower_bound(pattern):
        raise PatternError(
            f"unsupported regular expression {pattern!r}: {{,n}} is literal text in RE2; "
            "write {0,n}"
        )
    regex = _compile(pattern, _options(ignore_case=ignore_case))
    _check_size(regex, f"regular expression {pattern!r}")
    return SearchPattern(pattern, regex)


@dataclass(frozen=True, slots=True)
class WholeMatch:
    """A regex that must match a whole subject (a path), any character including newline."""

    source: str
    _regex: re2._Regexp[bytes]

    def matches(self, subject: str) -> bool:
        """Whether the regex matches all of ``subject``."""
        return self._regex.fullmatch(utf8(subject)) is not None


def compile_whole(source: str, *, label: str) -> WholeMatch:
    """Compile a regex we generated (from a glob) for whole-subject matching.

    ``label`` names what it came from in the error, e.g. ``glob pattern '*.{py'``.
    """
    try:
        regex = re2.compile(utf8(source), _options(dot_nl=True))
    except re2.error as exc:
        raise PatternError(f"invalid {label}: {_reason(exc)}") from None
    _check_size(regex, label)
    return WholeMatch(source, regex)


class WholeMatchSet:
    """Many whole-subject regexes matched in one pass; ``matching`` says which matched.

    One RE2 call per subject instead of one per regex: ``.gitignore`` rules are checked for
    every path a walk lists.
    """

    def __init__(self, sources: Sequence[str]) -> None:
        """Compile ``sources`` (each valid on its own, see :func:`compile_whole`) together."""
        self._set = re2.Set.FullMatchSet(_options(dot_nl=True))
        self._empty = not sources
        try:
            for source in sources:
                self._set.Add(utf8(source))
            self._set.Compile()
        except re2.error as exc:
            raise PatternError(
                f"{len(sources)} patterns cannot be matched together: {_reason(exc)}"
            ) from None

    def matching(self, subject: str) -> list[int]:
        """Positions in ``sources`` of the regexes that match all of ``subject``, unordered."""
        if self._empty:
            return []
        # The stubs say bool; RE2::Set returns the indices of every pattern that matched.
        found = cast(list[int] | None, self._set.Match(utf8(subject)))
        return found or []

"""Glob patterns as regular expressions, shared by ``.gitignore`` matching and the glob tools.

``*`` and ``?`` stay inside one path segment, ``**`` crosses segments, ``[...]`` is a class
(``[!...]`` negated), a backslash escapes, and with ``braces`` ``{a,b}`` is an alternative.
Globs come from the model and from the workspace, so they are matched with RE2
(:mod:`orchestrator.core.safe_regex`): with Python's ``re``, ``*a*a*a*a*a*a*a*a*b`` against a long
name backtracks for ever and freezes the pod.
"""

from __future__ import annotations

import re

from orchestrator.core.safe_regex import PatternError, WholeMatch, compile_whole


def glob_regex(pattern: str, *, braces: bool = False) -> str:
    """The regex source (unanchored) for a glob; ValueError for unbalanced braces."""
    out: list[str] = []
    depth = 0
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
            continue
        if pattern.startswith("**", i):
            out.append(".*")
            i += 2
            continue
        if c == "*":
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "\\" and i + 1 < len(pattern):
            out.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        elif c == "[":
            close = _class_end(pattern, i)
            if close == -1:
                out.append(re.escape(c))
            else:
                body = pattern[i + 1 : close].replace("\\", "\\\\")
                if body[:1] == "!":
                    body = "^" + body[1:]
                out.append(f"[{body}]")
                i = close + 1
                continue
        elif braces and c == "{":
            depth += 1
            out.append("(?:")
        elif braces and c == "}" and depth:
            depth -= 1
            out.append(")")
        elif braces and c == "," and depth:
            out.append("|")
        else:
            out.append(re.escape(c))
        i += 1
    if depth:
        raise ValueError(f"unbalanced '{{' in glob pattern {pattern!r}")
    return "".join(out)


def compile_glob(pattern: str, *, braces: bool = False) -> WholeMatch:
    """A glob compiled for whole-path matching; PatternError when it is malformed."""
    try:
        source = glob_regex(pattern, braces=braces)
    except ValueError as exc:
        raise PatternError(str(exc)) from None
    return compile_whole(source, label=f"glob pattern {pattern!r}")


def _class_end(pattern: str, start: int) -> int:
    """Index of the ``]`` closing the class opened at ``start`` (a leading ``]`` is literal)."""
    j = start + 1
    if j < len(pattern) and pattern[j] in "!^":
        j += 1
    if j < len(pattern) and pattern[j] == "]":
        j += 1
    return pattern.find("]", j)

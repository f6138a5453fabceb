"""Find ``@path`` mentions in plain text, for ``pod run "explain @src/app.py"`` and pre-reads.

A token is a mention when ``@`` starts it (start of text, after whitespace, or after an opening
bracket or quote) and what follows looks like a path:

* it contains ``/`` (``@src/app.py``, ``@docs/``, ``@../x``), or
* its name has a known file extension (``@app.py``, ``@README.md``), or
* it is a known extension-less file name (``@Makefile``, ``@Dockerfile``) or a dot-file
  (``@.gitignore``).

``@mcp:<server>:<uri>`` (``@mcp:notes:notes://today``) names a resource of one of the pod's
MCP servers instead; it becomes an ``mcp_resource_ref`` segment.

Not mentions: e-mail addresses and ``pkg@1.2.3`` (the ``@`` does not start a token), version
pins (``@1.2.3``, ``@^2.0``), commit hashes (``@a1b2c3d``), URLs, people (``@alice``), and
anything inside ``` code fences ``` or `inline code` (``@decorators``). Trailing punctuation
is not part of the path (``@src/app.py,`` → ``src/app.py``).

Two kinds of token are mentions only when an ``exists`` predicate is given and says the path
exists (the pod passes its scoped file system's):

* ``@scope/name`` (one slash, no extension, no trailing slash): an npm scope (``@types/node``),
  a GitHub team (``@org/team``) or a directory; write ``@src/utils/`` to mean the directory;
* ``@name.ext`` whose extension is not in the list (``@data.bin``, ``@pytest.fixture``): an
  existing file is attached, or refused with a warning when it is binary, never silently
  left as text.

:func:`expand_mentions` is the one rule every client's text goes through: ``pod run``'s
plain input and the text segments of the terminal UI alike.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable
from dataclasses import dataclass

from orchestrator.core.segments import FileRefSegment, McpResourceRefSegment, Segment, TextSegment


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


KNOWN_EXTENSIONLESS_NAMES = _words(
    """
    Makefile makefile GNUmakefile Dockerfile Containerfile Vagrantfile Procfile Gemfile
    Rakefile Justfile justfile Brewfile Podfile Fastfile Jenkinsfile Snakefile Pipfile
    Caddyfile Earthfile Tiltfile BUILD WORKSPACE README LICENSE LICENCE COPYING NOTICE
    AUTHORS CONTRIBUTORS CHANGELOG CODEOWNERS
    """
)
"""Extension-less file names that are mentions on their own; case-sensitive, so that doc tags
such as ``@license`` in prose stay text."""

KNOWN_EXTENSIONS = _words(
    """
    py pyi pyx ipynb rs go c h cc cpp cxx hpp hh m mm java kt kts scala groovy gradle cs fs
    vb swift dart rb php pl pm lua r jl ex exs erl hrl clj cljs elm hs ml mli nim zig v sv
    vhd js mjs cjs jsx ts mts cts tsx vue svelte astro html htm css scss sass less styl
    md mdx markdown rst txt adoc org tex bib json jsonc json5 jsonl ndjson yaml yml toml ini
    cfg conf env properties xml xsd xsl svg plist csv tsv sql graphql gql proto
    thrift avsc sh bash zsh fish ps1 psm1 bat cmd nix dhall tf tfvars hcl cue rego bzl bazel
    cmake mk mak make dockerfile lock log diff patch sum mod pem crt key pub lst tmpl tpl
    j2 jinja jinja2 hbs mustache ejs erb haml pug liquid png jpg jpeg gif webp ico bmp pdf
    zip gz tgz tar bz2 xz zst whl jar so dylib dll wasm gitignore dockerignore editorconfig
    """
)
"""File extensions (lower case, no dot) that make a slash-less token a mention."""

_PATH_CHAR = r"[^\s`\"'<>(){}\[\]“”‘’«»]"
# The path may contain "@" (node_modules/@types/x.d.ts), but may not start with one ("@@").
_MENTION = re.compile(rf"(?:^|(?<=[\s(\[{{<\"'“‘«]))@((?!@){_PATH_CHAR}+)")
_TRAILING = ".,;:!?)]}>'\"”’»…"
_VERSION = re.compile(r"[v^~=<>]*\d+(?:\.\d+|\.[xX*])*(?:[-+][\w.]+)?")
_HEX = re.compile(r"[0-9a-fA-F]{7,40}")
_SCOPE_LIKE = re.compile(r"\w[\w.-]*/[\w.-]+")
# Every scan below is linear in the text: the pod runs it on client input of up to 8 MiB on
# its event loop, so a backtracking pattern (an unclosed run of backticks) would freeze it.
_FENCE_LINE = re.compile(r"^ {0,3}(`{3,}|~{3,})([^\n]*)", re.M)
_BACKTICKS = re.compile(r"`+")
_DOT_FILE = re.compile(r"\.\w[\w.-]*")
_NAME_WITH_EXTENSION = re.compile(r"[\w-][\w.-]*\.\w+")


_MCP_REF = re.compile(r"mcp:([A-Za-z0-9_.-]+):(\S+)")
"""``@mcp:<server>:<uri>``: a resource of an MCP server, not a path."""
_LINE_RANGE = re.compile(r"[:#]L(\d{1,9})(?:-L?(\d{1,9}))?")


@dataclass(frozen=True)
class Mention:
    """An ``@path`` in text; ``start``/``end`` span the ``@`` and the path, punctuation excluded.

    ``lines`` is the range written after the path (``@a.py:L10-L40``, ``@a.py#L10``), if any.
    """

    path: str
    start: int
    end: int
    lines: tuple[int, int] | None = None
    server: str | None = None
    """For ``@mcp:<server>:<uri>``, the MCP server; ``path`` is then the resource's URI."""


def split_line_range(token: str) -> tuple[str, tuple[int, int] | None]:
    """``a.py:L10-L40`` → ``("a.py", (10, 40))``; a token without a valid range is all path.

    Both the editor style (``:L10-L40``) and GitHub's (``#L10-L40``) are read; a range that
    runs backwards or starts at 0 is not a range, so the token stays a (likely missing) path.
    """
    at = max(token.rfind(":L"), token.rfind("#L"))
    if at <= 0:
        return token, None
    match = _LINE_RANGE.fullmatch(token, at)
    if match is None:
        return token, None
    first = int(match.group(1))
    last = int(match.group(2)) if match.group(2) else first
    if first < 1 or last < first:
        return token, None
    return token[:at], (first, last)


def _fenced_blocks(text: str) -> list[tuple[int, int]]:
    """Spans of fenced code blocks; an unclosed fence runs to the end of the text.

    A fence closes on a line of the same character, at least as long, with nothing after it
    (CommonMark's rule, as is the one that a backtick fence's info string holds no backtick).
    Every fence-like line is found by one regex pass, then paired in one walk.
    """
    spans: list[tuple[int, int]] = []
    opened: tuple[int, str] | None = None
    for line in _FENCE_LINE.finditer(text):
        fence, rest = line.group(1), line.group(2)
        if opened is None:
            if fence[0] == "`" and "`" in rest:
                continue  # inline code such as ```x```: an info string never holds a backtick
            opened = (line.start(), fence)
            continue
        start, opener = opened
        if fence[0] == opener[0] and len(fence) >= len(opener) and not rest.strip():
            end = line.end() + 1 if line.end() < len(text) else line.end()
            spans.append((start, end))
            opened = None
    if opened is not None:
        spans.append((opened[0], len(text)))
    return spans


def _inline_code(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """Spans of inline code in ``text[start:end]``: a run of N backticks up to the next run of N.

    A run with no closing run of its length is literal. Runs are grouped by length, and each
    group is walked with one forward cursor, so the whole scan is linear in the number of runs.
    """
    runs = [(m.start(), m.end()) for m in _BACKTICKS.finditer(text, start, end)]
    by_length: dict[int, list[int]] = {}
    for index, (run_start, run_end) in enumerate(runs):
        by_length.setdefault(run_end - run_start, []).append(index)
    cursor: dict[int, int] = dict.fromkeys(by_length, 0)
    spans: list[tuple[int, int]] = []
    index = 0
    while index < len(runs):
        length = runs[index][1] - runs[index][0]
        same, at = by_length[length], cursor[length]
        while at < len(same) and same[at] <= index:
            at += 1
        cursor[length] = at
        if at == len(same):
            index += 1  # no closing run of this length after here: literal backticks
            continue
        closer = same[at]
        spans.append((runs[index][0], runs[closer][1]))
        index = closer + 1
    return spans


def _code_spans(text: str) -> list[tuple[int, int]]:
    """Sorted, disjoint spans of fenced blocks and inline code, where ``@`` is code."""
    spans: list[tuple[int, int]] = []
    pos = 0
    for start, end in [*_fenced_blocks(text), (len(text), len(text))]:
        spans.extend(_inline_code(text, pos, start))
        if end > start:
            spans.append((start, end))
        pos = end
    return spans


def _inside(spans: list[tuple[int, int]], starts: list[int], position: int) -> bool:
    """Whether ``position`` falls in one of the sorted, disjoint ``spans``."""
    at = bisect.bisect_right(starts, position) - 1
    return at >= 0 and position < spans[at][1]


def _has_known_extension(name: str) -> bool:
    stem, dot, ext = name.rpartition(".")
    return bool(dot) and bool(stem.strip(".")) and ext.lower() in KNOWN_EXTENSIONS


def classify(path: str) -> bool | None:
    """Whether a token after ``@`` is a path: True, False, or None when only existence decides."""
    if not path or "://" in path or _VERSION.fullmatch(path) or _HEX.fullmatch(path):
        return False
    if "/" in path:
        if _SCOPE_LIKE.fullmatch(path) and not _has_known_extension(path.rsplit("/", 1)[1]):
            return None
        return True
    if _has_known_extension(path) or path in KNOWN_EXTENSIONLESS_NAMES:
        return True
    # Dot-files (.gitignore, .env.local), but not "." or "..".
    if _DOT_FILE.fullmatch(path):
        return True
    # ``@data.bin``: a name with an extension we do not list is a file when one exists, so it
    # is attached, or refused with a warning (binary), never silently left as text.
    return None if _NAME_WITH_EXTENSION.fullmatch(path) else False


def find_mentions(text: str, *, exists: Callable[[str], bool] | None = None) -> list[Mention]:
    """The ``@path`` mentions of ``text``, in order; ``exists`` settles the tokens that only
    existence can tell from prose (``@scope/name``, ``@name.unknown-extension``)."""
    candidates = list(_MENTION.finditer(text))
    if not candidates:
        return []
    code = _code_spans(text)
    starts = [start for start, _ in code]
    found: list[Mention] = []
    for match in candidates:
        if _inside(code, starts, match.start()):
            continue
        token = match.group(1).rstrip(_TRAILING)
        resource = _MCP_REF.fullmatch(token)
        if resource is not None:
            end = match.start() + 1 + len(token)
            found.append(Mention(resource.group(2), match.start(), end, server=resource.group(1)))
            continue
        path, lines = split_line_range(token)
        verdict = classify(path)
        if verdict is None:
            verdict = exists is not None and exists(path)
        if verdict:
            found.append(Mention(path, match.start(), match.start() + 1 + len(token), lines))
    return found


def segments_from_text(text: str, *, exists: Callable[[str], bool] | None = None) -> list[Segment]:
    """Split plain text into text and file-ref segments; flattening gives the text back."""
    segments: list[Segment] = []
    pos = 0
    for mention in find_mentions(text, exists=exists):
        if mention.start > pos:
            segments.append(TextSegment(text=text[pos : mention.start]))
        first, last = mention.lines or (None, None)
        if mention.server is not None:
            segments.append(McpResourceRefSegment(server=mention.server, uri=mention.path))
        else:
            segments.append(FileRefSegment(path=mention.path, start_line=first, end_line=last))
        pos = mention.end
    if pos < len(text):
        segments.append(TextSegment(text=text[pos:]))
    return segments


def expand_mentions(
    segments: list[Segment], *, exists: Callable[[str], bool] | None = None
) -> list[Segment]:
    """Split every text segment at its ``@path`` mentions; other segments pass unchanged.

    Pastes are left whole: a paste chip is content the user dropped in, not typed refs.
    """
    out: list[Segment] = []
    for segment in segments:
        if isinstance(segment, TextSegment):
            out.extend(segments_from_text(segment.text, exists=exists))
        else:
            out.append(segment)
    return out

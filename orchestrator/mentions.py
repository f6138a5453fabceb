"""Find ``@path`` mentions in plain text, for ``pod run "explain @src/app.py"`` and pre-reads.

A token is a mention when ``@`` starts it (start of text, after whitespace, or after an opening
bracket or quote) and what follows looks like a path:

* it contains ``/`` (``@src/app.py``, ``@docs/``, ``@../x``), or
* its name has a known file extension (``@app.py``, ``@README.md``), or
* it is a known extension-less file name (``@Makefile``, ``@Dockerfile``) or a dot-file
  (``@.gitignore``).

Not mentions: e-mail addresses and ``pkg@1.2.3`` (the ``@`` does not start a token), version
pins (``@1.2.3``, ``@^2.0``), commit hashes (``@a1b2c3d``), URLs, people (``@alice``), and
anything inside ``` code fences ``` or `inline code` (``@decorators``). Trailing punctuation
is not part of the path (``@src/app.py,`` → ``src/app.py``).

``@scope/name`` (one slash, no extension, no trailing slash) is ambiguous: an npm scope
(``@types/node``), a GitHub team (``@org/team``) or a directory. It is a mention only when an
``exists`` predicate is given and says the path exists; write ``@src/utils/`` to mean the
directory unambiguously.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from orchestrator.segments import FileRefSegment, Segment, TextSegment


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
_FENCE = re.compile(
    r"^ {0,3}(`{3,}|~{3,})[^\n]*\n.*?(?:^ {0,3}\1[`~]*[ \t]*(?:\n|\Z)|\Z)", re.M | re.S
)
_INLINE_CODE = re.compile(r"(?<!`)(`+)(?!`).+?(?<!`)\1(?!`)", re.S)


@dataclass(frozen=True)
class Mention:
    """An ``@path`` in text; ``start``/``end`` span the ``@`` and the path, punctuation excluded."""

    path: str
    start: int
    end: int


def _code_spans(text: str) -> list[tuple[int, int]]:
    """Spans of fenced blocks and inline code, where ``@`` is code, not a mention."""
    spans = [m.span() for m in _FENCE.finditer(text)]
    pos = 0
    for start, end in [*spans, (len(text), len(text))]:
        spans.extend(
            (pos + m.start(), pos + m.end()) for m in _INLINE_CODE.finditer(text[pos:start])
        )
        pos = end
    return spans


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
    return re.fullmatch(r"\.\w[\w.-]*", path) is not None


def find_mentions(text: str, *, exists: Callable[[str], bool] | None = None) -> list[Mention]:
    """The ``@path`` mentions of ``text``, in order; ``exists`` settles ``@scope/name`` tokens."""
    code = _code_spans(text)
    found: list[Mention] = []
    for match in _MENTION.finditer(text):
        if any(start <= match.start() < end for start, end in code):
            continue
        path = match.group(1).rstrip(_TRAILING)
        verdict = classify(path)
        if verdict is None:
            verdict = exists is not None and exists(path)
        if verdict:
            found.append(Mention(path, match.start(), match.start() + 1 + len(path)))
    return found


def segments_from_text(text: str, *, exists: Callable[[str], bool] | None = None) -> list[Segment]:
    """Split plain text into text and file-ref segments; flattening gives the text back."""
    segments: list[Segment] = []
    pos = 0
    for mention in find_mentions(text, exists=exists):
        if mention.start > pos:
            segments.append(TextSegment(text=text[pos : mention.start]))
        segments.append(FileRefSegment(path=mention.path))
        pos = mention.end
    if pos < len(text):
        segments.append(TextSegment(text=text[pos:]))
    return segments

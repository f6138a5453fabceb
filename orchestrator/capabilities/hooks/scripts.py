"""The workspace files a hook's command line runs, and whether they changed since the pod
started.

A hook is the user's own command and runs outside the sandbox, as Claude Code runs it. A
file inside the workspace is another matter: the model's sandboxed commands write there, so
a hook that runs ``$CLAUDE_PROJECT_DIR/.claude/hooks/fmt.sh`` would run, outside the sandbox,
whatever a command put in that file. So a hook whose command line names a workspace file
runs inside the sandbox, unless the user set ``sandbox = false`` on it; then the pod keeps
each such file's fingerprint from its start and refuses to run the hook once one changed.

The command line is split as the shell would split it (:mod:`shlex`, with its operators);
only ``$CLAUDE_PROJECT_DIR`` (and ``$POD_PROJECT_DIR``, and ``$PWD`` or ``$(pwd)``, where a
hook starts) and a leading ``~`` are expanded, what a hook command uses to name its scripts. A word names a workspace path when it is
one (absolute, or relative to the workspace, where hooks start), when a ``NAME=value`` or
``--flag=value`` word's value is one, or when a bare command name is found through ``PATH``
inside the workspace. Paths are taken lexically and resolved (a symlink in the workspace
counts, and so does a workspace file reached through a symlink elsewhere); a path that does
not exist yet counts too, so a file created later is noticed. What the shell builds at run
time (``$(cat list)``, other variables) is not seen: name hook scripts literally.
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
import shutil
from pathlib import Path

__all__ = [
    "Fingerprints",
    "changed",
    "fingerprint",
    "fingerprints",
    "named_paths",
    "written_paths",
]

Fingerprints = dict[Path, str | None]
"""Workspace path → its fingerprint (None: no file there)."""

_PROJECT_VARS = re.compile(
    r"\$(?:\{(?:(?:CLAUDE|POD)_PROJECT_DIR|PWD)\}|(?:(?:CLAUDE|POD)_PROJECT_DIR|PWD)\b)"
)
_PWD_SUBSTITUTION = re.compile(r"\$\(\s*pwd\s*\)|`\s*pwd\s*`")
"""``$(pwd)``: the workspace too (a hook starts there), spelled as a variable before the line
is split (the split would cut ``$(pwd)/x.sh`` in pieces)."""
_OPERATOR_CHARS = frozenset("();<>|&$")
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
_CHUNK = 1024 * 1024


def _words(command: str) -> list[str]:
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        return list(lexer)
    except ValueError:  # an unclosed quote: bash refuses it too; take the plain words
        return command.split()


def _expand(word: str, workspace: Path, home: str | None) -> str:
    word = _PROJECT_VARS.sub(lambda _: str(workspace), word)
    if home and (word == "~" or word.startswith("~/")):
        word = home + word[1:]
    return word


def named_paths(
    command: str, workspace: Path, *, home: str | None = None, search: str | None = None
) -> tuple[Path, ...]:
    """The paths inside ``workspace`` that words of ``command`` name, existing or not (the
    workspace itself excluded). ``home`` expands ``~``; ``search`` is the ``PATH`` a bare
    command name is looked up in."""
    return tuple(_named(command, workspace, home, search))


def written_paths(
    command: str, workspace: Path, *, home: str | None = None, search: str | None = None
) -> tuple[Path, ...]:
    """Those of :func:`named_paths` written as paths (with a ``/``) or found through
    ``PATH``: what the command runs or reads there whether or not it exists yet (a bare
    argument such as ``lint.py`` or ``done`` may be a file or just a word)."""
    return tuple(
        path for path, written in _named(command, workspace, home, search).items() if written
    )


def _named(command: str, workspace: Path, home: str | None, search: str | None) -> dict[Path, bool]:
    """Workspace path → whether the command line writes it as a path."""
    lexical_ws = Path(os.path.normpath(workspace.absolute()))
    real_ws = workspace.resolve()
    found: dict[Path, bool] = {}
    at_command = True
    for token in _words(_PWD_SUBSTITUTION.sub("$CLAUDE_PROJECT_DIR", command)):
        if token and set(token) <= _OPERATOR_CHARS:
            at_command = True  # after ``;``, ``|``, ``&&``, ``$(`` a command starts
            continue
        word = _expand(token, lexical_ws, home)
        candidates: list[tuple[Path, bool]] = []
        assignment = _ASSIGNMENT.match(word)
        if assignment is not None or (not at_command and "=" in word):
            value = word.split("=", 1)[1]
            if value:
                candidates.append((_as_path(value, lexical_ws), "/" in value))
        if assignment is None:
            if "/" in word:
                candidates.append((_as_path(word, lexical_ws), True))
            elif word and at_command:
                located = shutil.which(word, path=search) if search else None
                if located is not None:
                    candidates.append((Path(located), True))
            elif word and not word.startswith("-"):  # an option is no file
                candidates.append((lexical_ws / word, False))
            at_command = False
        for candidate, written in candidates:
            if "$" in str(candidate) or word.startswith("~"):
                continue  # the shell makes something else of it: unknown here
            lexical = Path(os.path.normpath(candidate))
            if _inside(lexical, lexical_ws) or _inside(_resolved(lexical), real_ws):
                found[lexical] = found.get(lexical, False) or written
    return found


def _as_path(word: str, workspace: Path) -> Path:
    path = Path(word)
    return path if path.is_absolute() else workspace / path


def _resolved(path: Path) -> Path:
    try:
        return path.resolve()
    except (OSError, RuntimeError):  # a symlink loop: only its lexical place counts
        return path


def _inside(path: Path, workspace: Path) -> bool:
    return path != workspace and path.is_relative_to(workspace)


def fingerprint(path: Path) -> str | None:
    """What the file at ``path`` is now: where it resolves to and a hash of its bytes; None
    when no file can be read there."""
    try:
        real = path.resolve(strict=True)
        if not real.is_file():
            return None
        digest = hashlib.sha256(os.fsencode(real) + b"\0")
        with real.open("rb") as file:
            while chunk := file.read(_CHUNK):
                digest.update(chunk)
    except (OSError, RuntimeError):
        return None
    return digest.hexdigest()


def fingerprints(paths: tuple[Path, ...]) -> Fingerprints:
    """Each path's fingerprint now."""
    return {path: fingerprint(path) for path in paths}


def changed(pinned: Fingerprints, now: Fingerprints) -> list[Path]:
    """The paths whose file differs between two sets of fingerprints (appeared, gone,
    rewritten or repointed)."""
    return [path for path in {**pinned, **now} if pinned.get(path) != now.get(path)]

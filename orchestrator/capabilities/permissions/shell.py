"""Taking a command line apart for permission rules: every simple command it would run.

Rules name commands (``bash(rm *)``), so a rule must see each command a line runs, however it is
spelled: after quote removal (``r''m``, ``\\rm``), by ``basename`` (``/bin/rm``), inside lists,
pipelines, subshells, functions and command substitutions, and through the wrappers that run
another command (``env``, ``xargs``, ``bash -c``, ``find -exec``, ``eval``...). The grammar is
bashlex's (a port of bash's own parser); this module only walks its tree.

What cannot be taken apart is reported, never guessed: a command name that is computed
(``$cmd``, ``"$(echo rm)"``), a script read from a file or stdin (``source x``, ``curl | sh``), a
construct the parser does not know (``[[ ]]``, ``case``, arithmetic). The policy treats such a
line as one that *might* match any rule (see :mod:`orchestrator.capabilities.permissions.policy`).
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

APPENDED = "…"
"""Stands for arguments a wrapper adds at run time (``xargs rm`` runs ``rm <its input>``)."""

SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "busybox"})
"""Programs that run a script given with ``-c``, or read one from a file or stdin."""

_PLAIN_WRAPPERS = frozenset({"nohup", "builtin", "exec", "setsid", "chronic", "unbuffer"})
"""Run their arguments as a command, with no options of their own worth parsing."""

_OUTPUT_REDIRECTS = frozenset({">", ">>", ">|", "&>", "&>>", "<>"})
_SUBSTITUTION_MARKS = ("$(", "`", "<(", ">(")
_MAX_DEPTH = 8
"""Nested ``bash -c``/``eval`` levels taken apart; deeper is opaque (and suspicious)."""


@dataclass(frozen=True, slots=True)
class SimpleCommand:
    """One command a line runs: its words after quote removal, the name by its basename."""

    argv: tuple[str, ...]

    @property
    def name(self) -> str:
        return self.argv[0]

    @property
    def text(self) -> str:
        """What a rule's pattern is matched against: the words joined by single spaces."""
        return " ".join(self.argv)


@dataclass(frozen=True, slots=True)
class ParsedCommand:
    """Everything a command line runs, what it writes by redirection, and what is unknown."""

    commands: tuple[SimpleCommand, ...] = ()
    writes: tuple[str, ...] = ()
    """Files the line redirects output into (as written; ``/dev/null`` left out)."""
    opaque: tuple[str, ...] = ()
    """Why parts of the line could not be taken apart, in words; empty when all is known."""


@dataclass
class _Collect:
    commands: list[SimpleCommand] = field(default_factory=list)
    writes: list[str] = field(default_factory=list)
    opaque: list[str] = field(default_factory=list)


def parse_command(line: str) -> ParsedCommand:
    """Every simple command ``line`` would run, through wrappers; never raises."""
    out = _Collect()
    _parse_into(line, out, depth=0)
    return ParsedCommand(tuple(out.commands), tuple(out.writes), tuple(dict.fromkeys(out.opaque)))


def _parse_into(line: str, out: _Collect, depth: int) -> None:
    if depth > _MAX_DEPTH:
        out.opaque.append("commands nested too deeply to take apart")
        return
    if not line.strip():
        return
    # Imported here, on the first command to check: building bashlex's parser tables costs
    # ~0.1-0.3 s, which a pod that never checks a command line (and `pod --help`, through the
    # config's permission rules) should not pay at import.
    import bashlex  # type: ignore[import-untyped]

    try:
        trees = bashlex.parse(line)
    except NotImplementedError as exc:
        out.opaque.append(f"a shell construct the parser does not know ({_first_line(exc)})")
        return
    except Exception as exc:  # bashlex raises its own and plain errors alike on bad input
        out.opaque.append(f"the command could not be parsed ({_first_line(exc)})")
        return
    for tree in trees:
        _walk(tree, line, out, depth)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return (text[0] if text else type(exc).__name__)[:120]


def _walk(node: Any, source: str, out: _Collect, depth: int) -> None:
    kind = node.kind
    if kind == "command":
        _command(node, source, out, depth)
        return
    if kind == "word":
        _word(node, source, out, depth)
        return
    if kind in ("commandsubstitution", "processsubstitution"):
        _walk(node.command, source, out, depth)
        return
    if kind == "parameter":
        if any(mark in node.value for mark in _SUBSTITUTION_MARKS):
            out.opaque.append(f"a command inside ${{{node.value}}}")
        return
    if kind == "redirect":
        _redirect(node, source, out, depth)
        return
    for child in _children(node):
        _walk(child, source, out, depth)


def _children(node: Any) -> Iterator[Any]:
    for attr in ("parts", "list"):
        children = getattr(node, attr, None)
        if isinstance(children, list):
            yield from children
    command = getattr(node, "command", None)
    if command is not None and node.kind not in ("commandsubstitution", "processsubstitution"):
        yield command


def _word(node: Any, source: str, out: _Collect, depth: int) -> None:
    """Look inside a word for the commands it substitutes."""
    parts = getattr(node, "parts", None) or []
    for part in parts:
        _walk(part, source, out, depth)
    raw = source[node.pos[0] : node.pos[1]]
    substituted = any(p.kind in ("commandsubstitution", "processsubstitution") for p in parts)
    # Quoted text is no substitution ('$(rm x)'), but the parser does not say which kind of
    # quote it removed: only a single-quoted word is surely inert.
    inert = raw.startswith("'") and raw.endswith("'")
    if not substituted and not inert and any(mark in raw for mark in _SUBSTITUTION_MARKS):
        out.opaque.append(f"a substitution the parser did not take apart: {raw[:80]}")


def _redirect(node: Any, source: str, out: _Collect, depth: int) -> None:
    target = getattr(node, "output", None)
    if target is None or not hasattr(target, "kind"):
        return  # a descriptor (2>&1), not a file
    _walk(target, source, out, depth)
    if node.type in _OUTPUT_REDIRECTS and target.word != "/dev/null":
        out.writes.append(target.word)


def _command(node: Any, source: str, out: _Collect, depth: int) -> None:
    words: list[Any] = []
    for part in node.parts:
        if part.kind == "word":
            words.append(part)
            _word(part, source, out, depth)
        else:
            _walk(part, source, out, depth)
    if not words:
        return  # assignments or redirections only
    if _dynamic(words[0], source):
        out.opaque.append(
            f"the command name is computed: {source[words[0].pos[0] : words[0].pos[1]]}"
        )
        return
    argv = [w.word for w in words]
    _simple(argv, out, depth, dynamic_args=[_dynamic(w, source) for w in words])


def _dynamic(word: Any, source: str) -> bool:
    """Whether a word's value is only known at run time (expansions, globs, braces)."""
    if any(
        p.kind in ("parameter", "commandsubstitution", "processsubstitution", "tilde")
        for p in getattr(word, "parts", None) or []
    ):
        return True
    raw = source[word.pos[0] : word.pos[1]]
    if raw[:1] in ("'", '"'):
        return False
    braces = "{" in word.word and ("," in word.word or ".." in word.word)
    return braces or any(c in word.word for c in "*?[$")


def _simple(argv: Sequence[str], out: _Collect, depth: int, dynamic_args: Sequence[bool]) -> None:
    """Record one command, and what it runs in turn when it is a wrapper."""
    name = posixpath.basename(argv[0]) or argv[0]
    args = list(argv[1:])
    out.commands.append(SimpleCommand((name, *args)))
    inner = _unwrap(name, args, out)
    if inner is None:
        return
    if isinstance(inner, str):
        if any(dynamic_args[1:]):
            out.opaque.append(f"{name} runs text that is only known at run time")
        else:
            _parse_into(inner, out, depth + 1)
        return
    inner_argv, appended = inner
    if not inner_argv:
        return
    # The wrapped command is the tail of argv: its words keep their own "computed" flags.
    flags = list(dynamic_args[len(argv) - len(inner_argv) :])
    if flags[0]:
        out.opaque.append(f"{name} runs a command whose name is computed")
        return
    if appended:
        inner_argv, flags = [*inner_argv, APPENDED], [*flags, True]
    _simple(inner_argv, out, depth, flags)


_OPTION_VALUES: dict[str, set[str]] = {
    "nice": {"-n", "--adjustment"},
    "ionice": {"-c", "-n", "-p", "--class", "--classdata"},
    "stdbuf": {"-i", "-o", "-e"},
    "sudo": {"-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "-T"},
    "chrt": set(),
    "taskset": set(),
    "timeout": {"-s", "--signal", "-k", "--kill-after"},
}

Unwrapped = str | tuple[list[str], bool] | None
"""A script to parse, or an argv (and whether arguments are added at run time), or nothing."""


WRAPPERS: frozenset[str] = frozenset(
    {*_PLAIN_WRAPPERS, "command", "time", "doas", "env", "xargs", "eval", "find"}
    | set(_OPTION_VALUES)
)
"""Programs whose arguments name another command to run, which rules then see (besides the
shells, whose ``-c`` script is parsed in turn)."""


def _unwrap(name: str, args: list[str], out: _Collect) -> Unwrapped:
    """What a wrapper runs: a script (``bash -c``, ``eval``) or a command; None for others."""
    if name in _PLAIN_WRAPPERS or name in ("command", "time", "doas"):
        rest = _skip_options(args, with_value=set())
        if name == "command" and args[:1] in (["-v"], ["-V"]):
            return None  # only asks where a command is
        return (rest, False)
    if name == "env":
        return _env(args, out)
    if name in ("nice", "ionice", "stdbuf", "sudo", "chrt", "taskset", "timeout"):
        return _after_options(name, args, out)
    if name == "xargs":
        return _xargs(args, out)
    if name in SHELLS:
        return _shell(name, args, out)
    if name == "eval":
        return " ".join(args)
    if name in ("source", "."):
        out.opaque.append(f"{name} runs the commands of a file")
        return None
    if name == "find":
        return _find(args, out)
    return None


def _skip_options(args: list[str], *, with_value: set[str]) -> list[str]:
    i = 0
    while i < len(args) and args[i].startswith("-") and args[i] != "-":
        if args[i] == "--":
            return args[i + 1 :]
        i += 2 if args[i] in with_value else 1
    return args[i:]


def _after_options(name: str, args: list[str], out: _Collect) -> Unwrapped:
    rest = _skip_options(args, with_value=_OPTION_VALUES[name])
    if name == "timeout" and rest:
        rest = rest[1:]  # the duration
    elif name in ("chrt", "taskset") and rest:
        rest = rest[1:]  # the priority or the CPU mask
    return (rest, False)


def _env(args: list[str], out: _Collect) -> Unwrapped:
    i = 0
    while i < len(args):
        arg = args[i]
        if arg in ("-S", "--split-string") or arg.startswith(("-S", "--split-string=")):
            out.opaque.append("env -S splits a string into a command")
            return None
        if arg in ("-u", "--unset", "-C", "--chdir"):
            i += 2
        elif arg == "--":
            i += 1
            break
        elif arg.startswith("-") or "=" in arg:
            i += 1
        else:
            break
    return (args[i:], False)


_XARGS_VALUES = {
    "-I",
    "-i",
    "-n",
    "-P",
    "-L",
    "-l",
    "-d",
    "-E",
    "-e",
    "-s",
    "-a",
    "--arg-file",
    "--delimiter",
    "--max-args",
    "--max-procs",
    "--max-lines",
    "--max-chars",
    "--replace",
    "--eof",
}


def _xargs(args: list[str], out: _Collect) -> Unwrapped:
    rest = _skip_options(args, with_value=_XARGS_VALUES)
    replace = any(a.startswith(("-I", "-i", "--replace")) for a in args)
    # With -I the input replaces a placeholder; otherwise it is appended to the command.
    return (rest or ["echo"], not replace)


def _shell(name: str, args: list[str], out: _Collect) -> Unwrapped:
    i = 0
    while i < len(args) and args[i].startswith("-") and args[i] not in ("-", "--"):
        flag = args[i]
        if not flag.startswith("--") and "c" in flag[1:]:
            script = args[i + 1] if i + 1 < len(args) else ""
            return script
        i += 2 if flag in ("-o", "+o", "-O", "+O") else 1
    if name == "busybox":
        return (args, False)
    out.opaque.append(f"{name} runs a script from a file or its input")
    return None


def _find(args: list[str], out: _Collect) -> Unwrapped:
    """``find -exec cmd ... ;`` runs ``cmd``; ``-delete`` removes what it finds, as ``rm``."""
    for i, arg in enumerate(args):
        if arg in ("-exec", "-execdir", "-ok", "-okdir"):
            inner: list[str] = []
            for word in args[i + 1 :]:
                if word in (";", "+"):
                    break
                inner.append(word)
            if inner:
                _simple(inner, out, 0, [False] * len(inner))
        elif arg == "-delete":
            out.commands.append(SimpleCommand(("rm", APPENDED)))
    return None

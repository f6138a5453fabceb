"""Running git on the shadow repository, shut off from the user's git setup.

Every command runs as ``git --git-dir=<store> --work-tree=<workspace>`` with an environment
built from nothing but ``PATH``: no system or global config (``GIT_CONFIG_NOSYSTEM``,
``GIT_CONFIG_GLOBAL=/dev/null``), no system attributes, ``HOME`` and ``XDG_CONFIG_HOME`` inside
the store (so no ``~/.config/git/ignore`` either), the store's own index file, literal
pathspecs, no replace objects and a fixed identity. The repository's own config, written
whole each time a store opens, turns hooks, auto-gc, auto-maintenance, fsmonitor, reflogs and
every content conversion off; ``info/attributes`` (which outranks the workspace's
``.gitattributes``) stores every file byte for byte.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from orchestrator.capabilities.checkpoints.errors import GitCommandError, GitUnavailableError

MIN_GIT = (2, 25)
"""The oldest git the store runs on (``status --porcelain=v2``, ``GIT_CONFIG_GLOBAL``)."""

IDENTITY = ("pod checkpoints", "checkpoints@pod.invalid")

CONFIG = """\
[core]
\trepositoryformatversion = 0
\tbare = false
\tfilemode = true
\tsymlinks = true
\tignorecase = false
\tprecomposeUnicode = false
\tautocrlf = false
\tsafecrlf = false
\thooksPath = /dev/null
\tfsmonitor = false
\tuntrackedCache = true
\texcludesFile = /dev/null
\tattributesFile = /dev/null
\tlogAllRefUpdates = false
\tquotePath = false
[index]
\tversion = 4
[gc]
\tauto = 0
\tautoDetach = false
\tautoPackLimit = 0
[maintenance]
\tauto = false
[commit]
\tgpgSign = false
[diff]
\tignoreSubmodules = all
[submodule]
\trecurse = false
[protocol]
\tallow = never
[user]
\tname = {name}
\temail = {email}
"""
# Why each: hooks, gc and maintenance would run work (or programs) in the middle of a
# snapshot; fsmonitor is a program too. Index v4 and the untracked cache are what make a
# snapshot of 10,000 files cheap (bench/checkpoint.py). No reflog: the chain of commits is
# the history. Submodules are never entered: a nested repository's config can name programs.

ATTRIBUTES = "* -text -filter -ident -working-tree-encoding\n"
"""``$GIT_DIR/info/attributes``: no end-of-line, filter, ident or encoding conversion, so a
blob is the file's bytes whatever the workspace's ``.gitattributes`` says."""

EXCLUDE = "/.pod/\n"
"""``$GIT_DIR/info/exclude``: the pod's own folder. ``.git`` (a folder, or the file of a
worktree or submodule) is never added by git itself, at any depth."""


def git_program() -> str:
    """The path of ``git``, checked new enough; :class:`GitUnavailableError` if not."""
    program = shutil.which("git")
    if program is None:
        raise GitUnavailableError(
            "checkpoints need git, and there is no `git` on PATH: install git (2.25 or newer) "
            "or set checkpoints = false"
        )
    try:
        done = subprocess.run(
            [program, "--version"], capture_output=True, text=True, timeout=30, check=True
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise GitUnavailableError(f"`{program} --version` failed: {exc}") from None
    match = re.search(r"(\d+)\.(\d+)", done.stdout)
    version = (int(match[1]), int(match[2])) if match else (0, 0)
    if version < MIN_GIT:
        raise GitUnavailableError(
            f"checkpoints need git {MIN_GIT[0]}.{MIN_GIT[1]} or newer; {program} is "
            f"{done.stdout.strip()!r}: upgrade git or set checkpoints = false"
        )
    return program


class Git:
    """Runs git commands on one shadow repository and work tree."""

    def __init__(self, program: str, git_dir: Path, workspace: Path) -> None:
        self.program = program
        self.git_dir = git_dir
        self.workspace = workspace
        self.index = git_dir / "index"
        name, email = IDENTITY
        self.env: dict[str, str] = {
            "PATH": os.environ.get("PATH", os.defpath),
            "HOME": str(git_dir),
            "XDG_CONFIG_HOME": str(git_dir / "no-config"),
            "LC_ALL": "C",
            "GIT_CONFIG_NOSYSTEM": "1",
            "GIT_CONFIG_GLOBAL": os.devnull,
            "GIT_ATTR_NOSYSTEM": "1",
            "GIT_LITERAL_PATHSPECS": "1",
            "GIT_NO_REPLACE_OBJECTS": "1",
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_AUTHOR_NAME": name,
            "GIT_AUTHOR_EMAIL": email,
            "GIT_COMMITTER_NAME": name,
            "GIT_COMMITTER_EMAIL": email,
        }

    def argv(self, args: Sequence[str]) -> list[str]:
        """The full command line of ``git args`` on this repository."""
        return [
            self.program,
            f"--git-dir={self.git_dir}",
            f"--work-tree={self.workspace}",
            *args,
        ]

    def run(
        self,
        *args: str,
        stdin: bytes | None = None,
        index: Path | None = None,
        ok: Sequence[int] = (0,),
    ) -> bytes:
        """Run ``git args`` and return its stdout; :class:`GitCommandError` on another exit."""
        env: Mapping[str, str] = {**self.env, "GIT_INDEX_FILE": str(index or self.index)}
        try:
            done = subprocess.run(
                self.argv(args),
                input=stdin if stdin is not None else b"",
                capture_output=True,
                env=env,
                cwd=self.workspace,
                check=False,
            )
        except OSError as exc:
            raise GitUnavailableError(f"cannot run {self.program}: {exc.strerror}") from None
        if done.returncode not in ok:
            stderr = done.stderr.decode(errors="replace").strip()
            raise GitCommandError(
                f"git {args[0]} failed in the checkpoint store {self.git_dir} (exit "
                f"{done.returncode}): {stderr or 'no message'}"
            )
        return done.stdout

    def popen(self, *args: str) -> subprocess.Popen[bytes]:
        """A long-running ``git args`` with pipes on stdin and stdout (``cat-file --batch``)."""
        env = {**self.env, "GIT_INDEX_FILE": str(self.index)}
        return subprocess.Popen(
            self.argv(args),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
            cwd=self.workspace,
        )

    def write_setup(self) -> None:
        """Create the repository's folders and (re)write its config, attributes and excludes."""
        for sub in ("objects", "refs/heads", "info"):
            (self.git_dir / sub).mkdir(parents=True, exist_ok=True, mode=0o700)
        head = self.git_dir / "HEAD"
        if not head.exists():
            _replace(head, "ref: refs/heads/checkpoints\n")
        name, email = IDENTITY
        _replace(self.git_dir / "config", CONFIG.format(name=name, email=email))
        _replace(self.git_dir / "info" / "attributes", ATTRIBUTES)
        _replace(self.git_dir / "info" / "exclude", EXCLUDE)


def _replace(path: Path, text: str) -> None:
    """Write ``path`` whole through a temporary file and a rename, 0600."""
    if path.exists() and path.read_text(encoding="utf-8") == text:
        return
    tmp = path.with_name(f"{path.name}.tmp{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)
    os.replace(tmp, path)

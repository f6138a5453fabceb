"""``pod rewind`` and ``pod fork``: back to before an earlier prompt, or a new session from it."""

from __future__ import annotations

import asyncio
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from cli.errors import CliError
from cli.options import workspace_option
from cli.terminal_text import visible

if TYPE_CHECKING:
    from orchestrator.serving.client import PodClient

TargetArg = Annotated[
    str | None, typer.Argument(help="Pod name or socket path (default: this workspace's pod).")
]
SocketOpt = Annotated[Path | None, typer.Option(help="The pod's socket path.")]
WorkspaceOpt = Annotated[Path, workspace_option("Find the pod serving this workspace.")]


def preview_text(data: dict[str, Any], *, done: bool) -> str:
    """A rewind (or its preview) in words: the prompt, the items, the files."""
    verb = "rewound" if done else "would rewind"
    lines = [f"{verb} to before prompt {data['to']}: {data['prompt']!r}"]
    if data.get("dropped"):
        lines.append(f"  conversation: {data['dropped']} items {'dropped' if done else 'go'}")
    files = data.get("files")
    if files is not None:
        lines.append(f"  files: +{files['insertions']} -{files['deletions']} lines")
        lines += [f"    restore {path}" for path in files["restored"]]
        lines += [f"    delete  {path}" for path in files["deleted"]]
        lines += [f"    left    {path} ({why})" for path, why in files["left"].items()]
    return visible("\n".join(lines))  # paths the model named may hold control characters


def _socket(target: str | None, socket: Path | None, workspace: Path) -> Path:
    from cli.pods.discovery import socket_for

    return socket_for(target, socket, workspace)


def rewind(
    target: TargetArg = None,
    socket: SocketOpt = None,
    workspace: WorkspaceOpt = Path("."),
    to: Annotated[
        int | None,
        typer.Option(
            "--to",
            help="The seq of the prompt to go back before (see `pod history --json`).",
            show_default=False,
        ),
    ] = None,
    last: Annotated[bool, typer.Option("--last", help="The last prompt (the default).")] = False,
    code: Annotated[bool, typer.Option("--code", help="Restore the files only.")] = False,
    conversation: Annotated[
        bool, typer.Option("--conversation", help="Rewind the conversation only.")
    ] = False,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Only show what would change.")
    ] = False,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask first.")] = False,
    timeout: Annotated[float, typer.Option(help="Seconds to wait.")] = 120.0,
) -> None:
    """Go back to just before an earlier prompt: the conversation and the files (default),
    or one of them. The rewound prompt is printed, to edit and send again."""
    from cli.client_sync import with_client
    from orchestrator.protocol import ErrorData, RewindData

    if code and conversation:
        raise CliError("--code and --conversation exclude each other (both is the default)")
    if last and to is not None:
        raise CliError("--last and --to exclude each other")
    restore = "code" if code else "conversation" if conversation else "both"
    params: dict[str, Any] = {"restore": restore}
    if to is not None:
        params["to"] = to
    sock = _socket(target, socket, workspace)

    async def preview(client: PodClient) -> dict[str, Any]:
        reply = await client.request("rewind", {**params, "dry_run": True}, timeout=timeout)
        if isinstance(reply.payload, ErrorData):
            raise CliError(f"{reply.payload.code}: {reply.payload.message}")
        return reply.data

    planned = with_client(sock, preview)
    typer.echo(preview_text(planned, done=False))
    if dry_run:
        return
    if not yes:
        if not sys.stdin.isatty():
            raise CliError("a rewind changes the session and maybe files: pass --yes")
        typer.confirm("rewind?", abort=True)

    async def apply(client: PodClient) -> dict[str, Any]:
        await client.send("rewind", params, id="cmd")

        async def outcome() -> dict[str, Any]:
            async for event in client.events():
                match event.payload:
                    case ErrorData(code=code_, message=message) if event.data.get("id") in (
                        "cmd",
                        None,
                    ):
                        raise CliError(f"{code_}: {message}")
                    case RewindData() as done if event.event == "rewound":
                        return done.model_dump(mode="json")
            raise CliError("the pod closed the connection before it rewound")

        return await asyncio.wait_for(outcome(), timeout)

    done = with_client(sock, apply)
    typer.echo(preview_text(done, done=True))


def fork(
    target: TargetArg = None,
    socket: SocketOpt = None,
    workspace: WorkspaceOpt = Path("."),
    at: Annotated[
        int | None,
        typer.Option(
            "--at",
            help="Fork before this prompt's seq (default: all of it).",
            show_default=False,
        ),
    ] = None,
    name: Annotated[str | None, typer.Option(help="A title for the new session.")] = None,
    worktree: Annotated[
        Path | None,
        typer.Option(
            "--worktree",
            help="Also give the fork its own copy of the workspace here (a git worktree "
            "when the workspace is a git repository, else a copy).",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Start a new session from this one's conversation; the original is untouched."""
    from cli.client_sync import with_client
    from orchestrator.protocol import ErrorData

    params: dict[str, Any] = {}
    if at is not None:
        params["at"] = at
    if name is not None:
        params["name"] = name
    copy = worktree.resolve() if worktree is not None else None

    async def body(client: PodClient) -> dict[str, Any]:
        source = Path((await client.status()).workspace)  # the pod's, wherever this runs
        if copy is not None:
            # The copy first, so the fork is written as a session of the copy: listed by
            # `pod sessions ls` there and continued by `pod run` or `pod chat` there.
            copy_workspace(source, copy)
            params["workspace"] = str(copy)
        reply = await client.request("fork", params)
        if isinstance(reply.payload, ErrorData):
            if copy is not None:
                remove_copy(source, copy)
            raise CliError(f"{reply.payload.code}: {reply.payload.message}")
        return reply.data

    forked = with_client(_socket(target, socket, workspace), body)
    typer.echo(f"forked: session {forked['session']} ({forked['items']} items)")
    if copy is not None:
        typer.echo(f"workspace copy: {copy}")
    typer.echo(f"continue it with: {continue_fork(forked, beside=copy is None)}")


def register(app: typer.Typer) -> None:
    """Add ``rewind`` and ``fork``."""

    app.command("rewind")(rewind)
    app.command("fork")(fork)


def continue_fork(forked: dict[str, Any], *, beside: bool) -> str:
    """The command that continues a fork (``forked``: the ``forked`` reply's data).

    ``beside``: the fork shares the workspace with the pod that forked, which still runs
    there on the original session, so a plain ``pod chat --session`` would be refused
    (another session's pod runs here): the fork gets a pod of its own name beside it. In a
    copy of its own (``--worktree``) no pod runs yet, and the workspace's name will do.
    """
    from orchestrator.config.paths import safe_pod_name

    place = Path(forked["workspace"])
    session = str(forked["session"])
    command = f"pod chat --workspace {shlex.quote(str(place))} --session {session}"
    if beside:
        command += f" --name {safe_pod_name(f'{place.name}-{session}')}"
    return command


def remove_copy(source: Path, dest: Path) -> None:
    """Undo :func:`copy_workspace` after a fork that failed: the worktree (and the source
    repository's record of it) or the copied folder."""
    if (dest / ".git").is_file():
        _git(source, "worktree", "remove", "--force", str(dest))
    shutil.rmtree(dest, ignore_errors=True)


def copy_workspace(source: Path, dest: Path) -> Path:
    """A workspace of its own for a fork: a git worktree (detached at HEAD, with the current
    uncommitted changes carried over) where the workspace is a git repository, else a copy."""
    if dest.exists():
        raise CliError(f"--worktree {dest} exists already; name a new folder")
    git = shutil.which("git")
    inside = git is not None and _git(source, "rev-parse", "--is-inside-work-tree") == "true"
    if inside:
        _git(source, "worktree", "add", "--detach", str(dest), "HEAD", check=True)
        diff = subprocess.run(
            ["git", "-C", str(source), "diff", "HEAD", "--binary"], capture_output=True, check=True
        ).stdout
        if diff:
            subprocess.run(
                ["git", "-C", str(dest), "apply", "--whitespace=nowarn"], input=diff, check=True
            )
        untracked = _git(source, "ls-files", "--others", "--exclude-standard", "-z")
        for name in filter(None, (untracked or "").split("\0")):
            target = dest / name
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source / name, target, follow_symlinks=False)
        return dest
    shutil.copytree(source, dest, symlinks=True)
    return dest


def _git(cwd: Path, *args: str, check: bool = False) -> str | None:
    done = subprocess.run(["git", "-C", str(cwd), *args], capture_output=True, text=True)
    if check and done.returncode != 0:
        raise CliError(f"git {args[0]} failed: {done.stderr.strip()}")
    return done.stdout.strip() if done.returncode == 0 else None

"""The ``pod`` command: a typer app whose commands live in ``cli/commands/``.

Heavy imports (the anthropic SDK, Textual, the config and the runtime) happen inside command
bodies, so ``pod --help`` and every command's help stay fast: ``tests/cli/test_startup_imports.py``
fails naming the command whose help imports one (docs/performance.md). A command named as the
first word (``pod run …``) builds an app of its own module's commands only: the other fifteen
modules are neither imported nor turned into click commands (about 0.05 s of every start).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import Annotated

from cli.interrupted import interrupted, quietly_interrupted

# Ctrl-C while the command loads (a second or so) is one line, not a traceback through the
# imports.
with quietly_interrupted():
    import typer

    from cli.commands import COMMANDS, register_all, register_module_of
    from cli.errors import CliError, print_error
    from cli.options import PodGroup, bare_flags, one_line_summaries, rewrapped_help
    from orchestrator.errors import OrchestratorError

__all__ = ["build_app", "invoked_command", "main", "version"]

_verbose = False


def version() -> str:
    """The installed package's version."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as package_version

    try:
        return package_version("pod-orchestrator")
    except PackageNotFoundError:  # run from a source tree that was never installed
        return "unknown"


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"pod {version()}")
        raise typer.Exit()


def _options(
    verbose: Annotated[
        bool, typer.Option("--verbose", help="Show the full traceback of unexpected errors.")
    ] = False,
    show_version: Annotated[
        bool,
        typer.Option(
            "--version",
            help="Print the version and exit.",
            is_eager=True,
            callback=_print_version,
        ),
    ] = False,
) -> None:
    """Run and drive LLM agent pods: a lifecycle you can see, sessions that never break."""
    global _verbose
    _verbose = verbose


def build_app(command: str | None = None) -> typer.Typer:
    """The ``pod`` app with every command, or with the commands of ``command``'s module only
    (``command`` one of :data:`cli.commands.COMMANDS`)."""
    app = typer.Typer(
        name="pod",
        help="Run and drive LLM agent pods: a lifecycle you can see, sessions that never break.",
        no_args_is_help=True,
        pretty_exceptions_enable=False,
        context_settings={"help_option_names": ["-h", "--help"]},
        cls=PodGroup,
    )
    app.callback()(_options)
    with quietly_interrupted():
        if command is None:
            register_all(app)
        else:
            register_module_of(app, command)
        bare_flags(app)
        one_line_summaries(app)
        rewrapped_help(app)
    return app


_whole_app: typer.Typer | None = None


def __getattr__(name: str) -> typer.Typer:
    """``app``: the whole ``pod`` app, built on first use (by the tests and the doc tools;
    :func:`main` builds only what the command line names)."""
    global _whole_app
    if name != "app":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    if _whole_app is None:
        _whole_app = build_app()
    return _whole_app


def invoked_command(args: Sequence[str]) -> str | None:
    """The top-level command ``args`` names as its first word, when an app of that command's
    module alone runs them exactly as the whole app does; None otherwise: no command, an
    option first (``pod --verbose run``), a name that is no command (the whole app says which
    ones are), or shell completion, which walks every command."""
    if not args or args[0] not in COMMANDS:
        return None
    if any(key.startswith("_") and key.endswith("_COMPLETE") for key in os.environ):
        return None
    return args[0]


def main() -> None:
    """Console-script entry point: one clear line and a non-zero exit on any error."""
    # Every pod process holds the user's environment (ANTHROPIC_API_KEY, tokens), and the
    # pods it starts run the model's commands as the same user: `pod run` is a pod's parent,
    # so /proc/<its pid>/environ must be as closed to them as the pod's own.
    try:
        from orchestrator.adapters.inspection import forbid_inspection

        forbid_inspection()
        command = invoked_command(sys.argv[1:])
        app = build_app(command) if command is not None else __getattr__("app")
        app()
    except CliError as exc:
        print_error(str(exc))
        sys.exit(exc.exit_code)
    except OrchestratorError as exc:  # the runtime's messages already say what to change
        print_error(str(exc))
        sys.exit(1)
    except KeyboardInterrupt:
        interrupted()
    except Exception as exc:  # the one place an unexpected error becomes a message
        if _verbose:
            raise
        print_error(f"{type(exc).__name__}: {exc} (run with --verbose for details)")
        sys.exit(1)

"""The ``pod`` command: a typer app whose commands live in ``cli/commands/``.

Heavy imports (the anthropic SDK, Textual, the config and the runtime) happen inside command
bodies, so ``pod --help`` and every command's help stay fast: ``tests/cli/test_startup_imports.py``
fails naming the command whose help imports one (docs/performance.md).
"""

from __future__ import annotations

import sys
from typing import Annotated

from cli.interrupted import interrupted, quietly_interrupted

# Ctrl-C while the command loads (a second or so) is one line, not a traceback through the
# imports.
with quietly_interrupted():
    import typer

    from cli.commands import register_all
    from cli.errors import CliError, print_error
    from cli.options import PodGroup, bare_flags, one_line_summaries, rewrapped_help
    from orchestrator.errors import OrchestratorError

app = typer.Typer(
    name="pod",
    help="Run and drive LLM agent pods: a lifecycle you can see, sessions that never break.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
    cls=PodGroup,
)
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


@app.callback()
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


with quietly_interrupted():
    register_all(app)
    bare_flags(app)
    one_line_summaries(app)
    rewrapped_help(app)


def main() -> None:
    """Console-script entry point: one clear line and a non-zero exit on any error."""
    # Every pod process holds the user's environment (ANTHROPIC_API_KEY, tokens), and the
    # pods it starts run the model's commands as the same user: `pod run` is a pod's parent,
    # so /proc/<its pid>/environ must be as closed to them as the pod's own.
    try:
        from orchestrator.adapters.inspection import forbid_inspection

        forbid_inspection()
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
